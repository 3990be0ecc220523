"""The generator against a real Apache Kafka broker: contract fields, a profile input's own format, and exact resume
after a crash."""

import json
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Message, TopicPartition
from support.outside_apps import ORDERS_KEY
from support.outside_apps import ORDERS_VALUE as ORDERS
from support.waits import until

from kafka_soak import run_plan
from kafka_soak.clients import encodings
from kafka_soak.faults.schedule import plan_steps
from kafka_soak.infra import kafka_io
from kafka_soak.infra.cluster import Cluster
from kafka_soak.load import generator
from kafka_soak.load.process import GENERATOR, Load
from kafka_soak.plan import ParamsError


def read_messages(bootstrap: str, topic: str) -> list[Message]:
    """Every record of ``topic`` now."""
    marks = kafka_io.watermarks(bootstrap, topic)
    consumer = Consumer(kafka_io.client_config(bootstrap, {"group.id": "test-reader"}))
    consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in marks.items()])
    messages, want = [], sum(high - low for low, high in marks.values())
    deadline = time.monotonic() + 30
    while len(messages) < want and time.monotonic() < deadline:
        messages += [m for m in consumer.consume(1000, 0.5) if not m.error()]
    consumer.close()
    return messages


def read_all(bootstrap: str, topic: str) -> list[dict]:
    """Every record of the contract now, its value's fields and ``_partition``."""
    return [json.loads(m.value()) | {"_partition": m.partition()} for m in read_messages(bootstrap, topic)]


def header_ids(messages: list[Message]) -> list[int]:
    return sorted(int(dict(m.headers())["soak.id"]) for m in messages)


def test_records_follow_the_contract(broker):
    spec = generator.LoadSpec(broker.bootstrap_servers, broker.topics["input"], records=1000, keys=7, payload_bytes=16)
    assert generator.produce(spec) == 1000
    records = read_all(broker.bootstrap_servers, broker.topics["input"])
    assert sorted(r["id"] for r in records) == list(range(1, 1001))
    by_key: dict[str, list[int]] = {}
    for r in sorted(records, key=lambda r: r["id"]):
        assert r["_partition"] == generator.partition_of(r["key"], 4)
        assert len(r["payload"]) == 16
        by_key.setdefault(r["key"], []).append(r["seq"])
    assert len(by_key) == 7
    assert all(seqs == list(range(1, len(seqs) + 1)) for seqs in by_key.values())


def test_the_largest_payload_a_run_admits_makes_records_kafka_takes_and_one_byte_more_is_refused(broker):
    """payload_bytes is bounded by the record it makes (payload, JSON fields, key), not on its own: the largest a run
    admits is written by the generator's own producer to a real broker; one byte more is refused before anything
    starts, naming payload_bytes (the producer once refused it with MSG_SIZE_TOO_LARGE after provisioning)."""
    records = 3
    largest = generator.MESSAGE_MAX_BYTES - generator.FRAMING_BYTES - generator.largest_record_bytes(records, 1, 0)
    run_plan.check({"records": records, "keys": 1, "payload_bytes": largest})
    with pytest.raises(ParamsError, match=f"payload_bytes: {largest + 1} makes the input's largest record "):
        run_plan.check({"records": records, "keys": 1, "payload_bytes": largest + 1})
    spec = generator.LoadSpec(broker.bootstrap_servers, broker.topics["input"], records=records, keys=1,
                              payload_bytes=largest)
    assert generator.produce(spec) == records
    assert [len(r["payload"]) for r in read_all(broker.bootstrap_servers, broker.topics["input"])] == [largest] * 3


def test_a_profile_input_is_written_in_the_apps_own_format_with_the_soak_headers(broker):
    """The issue's orders: ids 1..N once each, in the headers and the value, keys from the template, partitions by
    CRC32 of the key, amounts drawn from the seed."""
    spec = generator.LoadSpec(broker.bootstrap_servers, broker.topics["input"], records=1000, keys=7, seed=3,
                              key_template=ORDERS_KEY, value=ORDERS)
    started_ms = time.time() * 1000
    assert generator.produce(spec) == 1000
    ended_ms = time.time() * 1000
    messages = read_messages(broker.bootstrap_servers, broker.topics["input"])
    assert header_ids(messages) == list(range(1, 1001))
    assert all(started_ms - 1 <= m.timestamp()[1] <= ended_ms + 1 for m in messages)  # the producer's own time
    amounts = encodings.random_ints(range(1, 1001), 3, 0, 1, 100)
    for m in messages:
        headers, order = dict(m.headers()), json.loads(m.value())
        record_id, seq = int(headers["soak.id"]), int(headers["soak.seq"])
        key = f"customer-{(record_id - 1) % 7}"
        assert seq == generator.seq_of(record_id, 7) and m.key() == key.encode()
        assert m.partition() == generator.partition_of(key, 4)
        assert order == {"orderId": record_id, "customer": key, "amount": amounts[record_id - 1], "seq": seq}


def kill_mid_run_and_resume(broker: Cluster, tmp_path: Path, records: int, profile: dict | None = None) -> list[Message]:
    """The run's load as the DAG runs it (``Load``): start the generator at a rate, kill -9 it once a sixth of the
    records are in (the rate leaves most of its 8 s to do, however long a watermark poll takes on a busy machine),
    then ``await_done`` (task ``await_generator``) sees it dead, starts it again and waits for it to finish: every
    record then in the topic."""
    plan = run_plan.check({"program": "1", "interval_s": 1, "records": records, "keys": 50, "rate": records // 8,
                         **({"app_profile": profile} if profile else {})})
    steps = plan_steps(tmp_path, plan, lead_s=0)
    load, topic = Load(tmp_path, broker.as_dict(), plan), broker.topics["input"]
    load.start(start_at=steps[0]["planned_at"], attempt=1)
    until(lambda: sum(high for _, high in kafka_io.watermarks(broker.bootstrap_servers, topic).values()) >= records // 6,
          "sixth of the records in the topic", detail=(tmp_path / "logs" / "generator.1.log").read_text)
    load.processes.kill(GENERATOR)
    partial = len(read_messages(broker.bootstrap_servers, topic))
    assert 0 < partial < records, "the kill must land mid-run for this test to mean anything"
    state = load.await_done(poll_s=0.2)
    assert state["done"] and state["produced"] == records, state
    assert "resuming" in (tmp_path / "logs" / "generator.2.log").read_text()
    return read_messages(broker.bootstrap_servers, topic)


def test_resume_after_kill_produces_every_id_exactly_once(broker, tmp_path):
    """kill -9 the generator mid-run, start it again: ids 1..N each appear once."""
    messages = kill_mid_run_and_resume(broker, tmp_path, 6000)
    assert sorted(json.loads(m.value())["id"] for m in messages) == list(range(1, 6001))


def test_a_profile_input_resumes_after_kill_from_its_soak_id_headers(broker, tmp_path):
    """The orders' values hold no ``id``: the resume finds where each partition stopped by its ``soak.id`` header."""
    messages = kill_mid_run_and_resume(broker, tmp_path, 6000, {
        "name": "orders", "command": ["orders-app"], "group_id": "orders",
        "inputs": [{"topic": "orders", "key": ORDERS_KEY, "value": ORDERS}],
        "outputs": [{"topic": "orders-enriched", "contract": "one-to-one", "of": "orders"}]})
    assert header_ids(messages) == list(range(1, 6001))
    assert sorted(json.loads(m.value())["orderId"] for m in messages) == list(range(1, 6001))


def test_phases_wait_for_their_step_and_produce_their_own_ids(broker, tmp_path):
    """A phase tied to a step produces nothing until the step's result file appears."""
    spec = generator.LoadSpec(broker.bootstrap_servers, broker.topics["input"], records=300, keys=7, phases=(
        generator.Phase(100, 1, at_s=0), generator.Phase(200, 101, rate=2000, after_step=1)))
    steps_dir = tmp_path / "program"
    steps_dir.mkdir()
    producing = threading.Thread(target=generator.produce, args=(spec, None, time.time(), steps_dir))
    producing.start()
    try:
        deadline, produced = time.monotonic() + 60, []
        while len(produced) < 100 and time.monotonic() < deadline:  # the first phase, however busy the machine
            time.sleep(0.5)
            produced = read_all(broker.bootstrap_servers, broker.topics["input"])
        time.sleep(1)
        assert sorted(r["id"] for r in read_all(broker.bootstrap_servers, broker.topics["input"])) == \
            list(range(1, 101)), "only the first phase may be produced before step 1"
        (steps_dir / "step-1.json").write_text("{}")
    finally:
        producing.join(30)
    assert sorted(r["id"] for r in read_all(broker.bootstrap_servers, broker.topics["input"])) == list(range(1, 301))
