"""The Kafka Streams app's build per version: Maven from the project's pom, cached in the checkout; what it writes."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_soak import run_plan
from kafka_soak.clients import subjects
from kafka_soak.clients.instances import Instances
from kafka_soak.clients.reference import streams
from kafka_soak.infra import kafka_io
from kafka_soak.infra.cluster import Cluster
from kafka_soak.load import generator
from kafka_soak.toolchain import maven


def test_a_version_is_built_once_and_reused(tmp_path, monkeypatch):
    """A fresh cache (Maven's repository shared, so nothing is downloaded twice): the first call builds and says
    how long it took, the second finds it."""
    shared = maven.cache_root() / "m2"
    monkeypatch.setenv("SOAK_CACHE_DIR", str(tmp_path))
    (tmp_path / "m2").symlink_to(shared, target_is_directory=True)
    target, seconds = streams.build("3.5.0")
    assert seconds > 0 and target.parent == tmp_path / "apps" / "streams"
    assert (target / "soak-streams.jar").is_file() and (target / "lib" / "kafka-streams-3.5.0.jar").is_file()
    assert streams.build("3.5.0") == (target, 0.0)
    plan = run_plan.check({"app": "streams", "threads": 4, "standbys": 1, "cache_entries": 10, "partitions": 12,
                         "commit_interval_ms": 100, "session_timeout_ms": 6000, "acceptable_recovery_lag": 0,
                         "max_warmup_replicas": 1, "topology": "workflow", "workflow_designs": ["single-writer"],
                         "parallel_tasks": 5, "streams_version": "3.5.0"})
    [subject] = subjects.build(plan, {role: role for role in subjects.topics(plan)})
    cluster = Cluster("local", "127.0.0.1:9", {"input": "in"}, subjects=[subject.as_dict()])
    command = Instances(tmp_path, cluster, plan, [subject]).command(subject, 2, 0)
    assert command[command.index("-cp") + 1] == f"{target / 'soak-streams.jar'}:{target / 'lib' / '*'}"
    assert command[command.index("io.kafkasoak.streams.SoakStreamsApp") + 1:] == [
        "--threads", "4", "--standbys", "1", "--cache-max-bytes", str(10 * 12 * 2 * 128), "--acceptable-recovery-lag",
        "0", "--max-warmup-replicas", "1", "--commit-interval-ms", "100", "--partitions", "12", "--blob-bytes", "0",
        "--session-timeout-ms", "6000", "--topology", "workflow", "--write-buffer-bytes", "0", "--bug", "none",
        "--state-dir", str(tmp_path / "state" / "instance-2"),
        "--design", "single-writer", "--parallel-tasks", "5"]


@pytest.mark.parametrize("version, message", [
    ("2.8.1", "streams_version: '2.8.1' is not a Kafka Streams release from 3.3 on (allowed: MAJOR.MINOR.PATCH, "
              "3.3.0 or later, e.g. 3.4.0 or 4.3.1)"),
    ("3.2.3", "streams_version: '3.2.3' is not a Kafka Streams release from 3.3 on (allowed: MAJOR.MINOR.PATCH, "
              "3.3.0 or later, e.g. 3.4.0 or 4.3.1)"),
    ("3.4.9", "streams_version: cannot build the Kafka Streams app against Kafka Streams 3.4.9: Maven Central serves "
              "no org.apache.kafka:kafka-streams:3.4.9"),
])
def test_a_version_that_cannot_be_had_is_named(version, message):
    with pytest.raises(streams.StreamsVersionError) as err:
        streams.build(version)
    assert str(err.value) == message


def timestamps(bootstrap: str, topic: str, count: int, timeout_s: float = 180) -> list[int]:
    """The Kafka timestamps (ms) of ``topic``'s first ``count`` committed records, once it has them."""
    consumer = Consumer(kafka_io.client_config(bootstrap, {"group.id": "test-reader", "isolation.level": "read_committed"}))
    consumer.assign([TopicPartition(topic, p, 0) for p in kafka_io.watermarks(bootstrap, topic)])
    found: list[int] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(found) < count:
            assert time.monotonic() < deadline, f"{len(found)} of {count} records on {topic} after {timeout_s:.0f} s"
            found += [m.timestamp()[1] for m in consumer.consume(1000, 0.5) if not m.error()]
    finally:
        consumer.close()
    return found


@pytest.mark.parametrize("topology, written", [("id-assignment", {"output": 200}),
                                                ("aggregate", {"counts": 1, "sums": 1})])
def test_the_app_stamps_what_it_writes_with_when_it_wrote_it(kafka, tmp_path, topology, written):
    """Input produced before the app starts: each record it writes (an output; a key's count and sum) has a Kafka
    timestamp after the app's start, not its input's (which Kafka Streams would forward), so the report draws it when
    it was written."""
    _backend, cluster = kafka
    plan = run_plan.check({"app": "streams", "partitions": 4, "topology": topology})
    roles = subjects.topics(plan)
    names = {role: f"test.stamps.{tmp_path.name}.{role}" for role in roles}
    kafka_io.create_topics(cluster.bootstrap_servers, {names[role]: n for role, n in roles.items()})
    [subject] = subjects.build(plan, names)
    run_cluster = Cluster("local", cluster.bootstrap_servers, names, subjects=[subject.as_dict()])
    spec = generator.LoadSpec(cluster.bootstrap_servers, names["input"], records=200, keys=7,
                              value=subjects.profile(plan).inputs[0].value)
    assert generator.produce(spec) == 200
    inputs = timestamps(cluster.bootstrap_servers, names["input"], 200)
    started_ms = time.time() * 1000
    instances = Instances(tmp_path, run_cluster, plan, [subject])
    instances.start(1, 0)
    try:
        outputs = {role: timestamps(cluster.bootstrap_servers, names[role], count) for role, count in written.items()}
    finally:
        instances.stop_all(timeout=30)
    assert max(inputs) < started_ms, (max(inputs), started_ms)
    assert {role: min(found) >= started_ms for role, found in outputs.items()} == dict.fromkeys(written, True), \
        (started_ms, {role: min(found) for role, found in outputs.items()})
