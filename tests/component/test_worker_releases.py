"""The reference worker on an old confluent-kafka release, for real: its virtualenv built (or taken from the cache) as a
run builds it, and the worker run from it against a real broker in both styles (the suite's and confluent-kafka's
example), with an environment whose PYTHONPATH leads to the suite's own confluent-kafka, which it must not take."""

from __future__ import annotations

import json
import os
import signal
import site
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer

from kafka_soak.clients.profile import render
from kafka_soak.clients.reference import releases
from kafka_soak.infra import kafka_io
from kafka_soak.infra.runtime.local import child_env

RECORDS, KEYS = 300, 30


def outputs(bootstrap: str, topic: str, until: int, timeout: float) -> list[dict]:
    """The committed outputs, read until ``until`` arrived or ``timeout`` passed."""
    consumer = Consumer(kafka_io.client_config(bootstrap, {"group.id": f"{topic}-reader", "auto.offset.reset": "earliest",
                                                           "isolation.level": "read_committed"}))
    consumer.subscribe([topic])
    found, deadline = [], time.monotonic() + timeout
    try:
        while len(found) < until and time.monotonic() < deadline:
            found += [json.loads(m.value()) for m in consumer.consume(500, timeout=0.5) if m.error() is None]
    finally:
        consumer.close()
    return found


# The oldest release a bug scenario runs (bug_librdkafka_4261), and the example worker on the first release that
# commits no position past a partition's end after its EOF (bug_librdkafka_5213: 2.13.0 does, sometimes).
@pytest.mark.parametrize(("style", "release"), [("reference", "2.1.0"), ("example", "2.13.2")])
def test_the_worker_runs_on_the_releases_own_confluent_kafka(broker, tmp_path, style, release):
    venv, _seconds = releases.build(release)
    assert (venv / "bin" / "python").exists()
    producer = Producer(kafka_io.client_config(broker.bootstrap_servers))
    for n in range(1, RECORDS + 1):
        key = f"key-{n % KEYS:06d}"
        producer.produce(broker.topics["input"], key=key, value=json.dumps(
            {"id": n, "key": key, "seq": (n - 1) // KEYS + 1, "payload": "", "ts": 0}))
    producer.flush(10)
    app_id = f"{broker.topics['input']}-app"
    command = [render(part, {}, {}) for part in releases.command(release)] + [
        "--bootstrap", broker.bootstrap_servers, "--app-id", app_id, "--instance", "1",
        *[arg for role in ("input", "output", "changelog", "assertions")
          for arg in (f"--{role}-topic", broker.topics[role])], "--style", style]
    env = {**child_env(), "PYTHONPATH": os.pathsep.join([*site.getsitepackages(), child_env()["PYTHONPATH"]])}
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        found = outputs(broker.bootstrap_servers, broker.topics["output"], RECORDS, timeout=60)
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(30)
    said = log.read_text()
    assert code == 0, said
    assert f"style={style}, confluent-kafka {release}, librdkafka {release}" in said
    assert sorted(o["id"] for o in found) == list(range(1, RECORDS + 1)), said
    assert len({o["assigned_id"] for o in found}) == KEYS, "one id per key"
    committed = kafka_io.group_positions(broker.bootstrap_servers, app_id, broker.topics["input"])
    assert {p: c for p, (c, _end) in committed.items()} == {p: end for p, (_c, end) in committed.items()}, \
        "every input offset committed with the outputs"
