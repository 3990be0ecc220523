"""Kafka backends on real Apache Kafka: a connection's settings from Airflow reaching the clients (and no command line) of
a run on a real broker, a shared cluster's groups deleted, another Kafka version fetched and served, a broker's port
taken before it binds, and a JVM's class-data archive (the checker's driver) dumped and mapped by Kafka's own tool."""

from __future__ import annotations

import json
import time

import psutil
import pytest
from support.checks import SECRET

from kafka_soak import provision, run_plan
from kafka_soak.backends import registry
from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.clients.instances import Instances
from kafka_soak.infra import kafka_io
from kafka_soak.infra.cluster import Cluster
from kafka_soak.infra.connection import KafkaConnectionError, client_settings, connection_config


def test_connection_errors_name_the_param(kafka_connection):
    with pytest.raises(KafkaConnectionError, match=r"param kafka_conn_id: there is no Airflow connection 'absent'"):
        connection_config("absent")
    with pytest.raises(KafkaConnectionError, match=r"is of type 'http', not 'kafka'"):
        connection_config("not_kafka")


def test_client_settings_come_from_the_connection_and_are_masked(kafka_connection):
    from airflow.sdk._shared.secrets_masker import redact

    settings = client_settings({"conn_id": kafka_connection})
    assert settings == {"sasl.username": "soak", "sasl.password": SECRET}, "our clients set bootstrap/group ids"
    assert SECRET not in str(redact(f"config {settings}"))
    assert client_settings(Cluster("local", "b:1", {})) == {}


def test_secrets_reach_instances_only_through_their_environment(kafka_connection, broker, tmp_path):
    """An instance of an app (any command: here Python printing what it was given) gets the connection's
    settings in SOAK_KAFKA_CONFIG; its command line, the cluster XCom and the run's files do not hold them."""
    run_dir = tmp_path / "soak_dag" / "run_1"
    cluster = {**broker.as_dict(), "backend": "external", "conn_id": kafka_connection}
    plan = run_plan.check({"app_command": ["python", "-c", "import os, sys, time; print(sorted(os.environ)); "
                                              "print(sys.argv); time.sleep(30)", "{bootstrap_servers}", "{instance}"]
                              })
    instances = Instances.for_run(run_dir, cluster, plan)
    rec = instances.start(1, 0)
    try:
        proc = psutil.Process(rec.pid)
        deadline = time.monotonic() + 10
        while "SOAK_KAFKA_CONFIG" not in open(rec.log).read() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert json.loads(proc.environ()[kafka_io.SETTINGS_ENV])["sasl.password"] == SECRET
        assert proc.environ()["SOAK_INSTANCE"] == "1"
        assert proc.cmdline()[-2:] == [broker.bootstrap_servers, "1"]
        assert SECRET not in " ".join(proc.cmdline())
    finally:
        instances.stop_all(timeout=5)
    assert SECRET not in json.dumps(cluster)
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert files and not [p for p in files if SECRET in p.read_text(errors="replace")]


def test_a_shared_cluster_s_consumer_groups_are_deleted_once_their_members_left(broker):
    """What release does with the suite's groups: one that never existed is no error; one whose member still runs is
    asked again while it may be leaving, then named; once its member left, it goes with its committed offsets."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient

    bootstrap, group = broker.bootstrap_servers, f"{broker.topics['input']}.group"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.subscribe([broker.topics["input"]])
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer got no partitions"
            consumer.poll(0.2)
        errors = kafka_io.delete_groups(bootstrap, [group, f"{group}.never-joined"], leaving_s=1)
        assert list(errors) == [group] and "NON_EMPTY_GROUP" in errors[group], errors
    finally:
        consumer.close()
    assert kafka_io.delete_groups(bootstrap, [group]) == {}
    listed = AdminClient({"bootstrap.servers": bootstrap}).list_consumer_groups(request_timeout=30).result(30)
    assert group not in {g.group_id for g in listed.valid}


def test_another_served_kafka_version_is_fetched_and_runs_with_the_transaction_version_the_run_sets(tmp_path):
    """kafka_version picks the release: its jars are fetched on first use (Maven Central) and its broker serves;
    transaction_version is formatted into its storage and the cluster finalizes it (4.x's default is 2). A 4.1
    cluster has KIP-848's group.version and no streams.version: the streams rebalance protocol is refused by what the
    cluster reports, naming the param (as on any backend's cluster at provision). broker_config's settings are the
    broker's own, as it reports them."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    from kafka_soak.backends import kafka_jars

    cleanup = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
    backend = registry.create(run_plan.check({"kafka_version": "4.1.1", "transaction_version": 1,
                                              "broker_config": {cleanup: 1000, "compression.type": "zstd"}}), tmp_path)
    cluster = backend.provision({"input": 2}, "soak.version")
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        [described] = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "1")]).values()
        configs = described.result(timeout=30)
        assert (configs[cleanup].value, configs["compression.type"].value) == ("1000", "zstd")
        assert kafka_jars.is_resolved("4.1.1") and cluster.kafka_version == "4.1.1"
        assert cluster.features["transaction.version"] == 1 and cluster.features["metadata.version"] == "4.1-IV1", \
            cluster.features
        assert kafka_io.partition_count(cluster.bootstrap_servers, "soak.version.input") == 2
        assert "Kafka version: 4.1.1" in (tmp_path / "logs" / "kafka-1.log").read_text()
        assert kafka_jars.SHORT_LIVED_JIT in backend.processes.process("kafka-1").cmdline(), "a short run's broker"
        with pytest.raises(provision.FeatureMissing, match=r"^group_protocol: 'streams' needs the cluster's "
                           r"streams.version feature at 1 or more .* the local cluster at 127.0.0.1:\d+ has 0"):
            provision.require_group_protocol(cluster, "4.1.1", "streams")
        assert provision.require_group_protocol(cluster, "4.1.1", "consumer") == 1, "KIP-848's groups: 4.0 on"
    finally:
        backend.release(cluster)
    assert not backend.processes.is_alive("kafka-1")


def test_a_port_taken_before_the_broker_binds_it_costs_a_start_on_other_ports(tmp_path):
    """Ports are chosen free and bound by the broker a moment later; another process may take one in between (two
    test workers, a busy CI machine). Here a socket holds the broker's planned port: the node exits with a bind
    error, and provision starts again on fresh ports, keeping the clashed attempt's storage beside."""
    import json
    import socket

    backend = LocalKafkaBackend(tmp_path)
    planned = backend.layout()
    taken = socket.socket()
    taken.bind(("127.0.0.1", planned.nodes[0].port))
    taken.listen()
    try:
        cluster = backend.provision({"input": 1}, "soak.ports")
    finally:
        taken.close()
    try:
        assert cluster.bootstrap_servers != planned.bootstrap_servers
        assert kafka_io.partition_count(cluster.bootstrap_servers, "soak.ports.input") == 1
        clashed = tmp_path / "kafka.port-taken-1"
        assert json.loads((clashed / "layout.json").read_text())["nodes"][0]["port"] == planned.nodes[0].port
        assert "Address already in use" in (tmp_path / "logs" / "kafka-1.log").read_text()
    finally:
        backend.release(cluster)
    assert not backend.processes.is_alive("kafka-1")


def test_a_class_data_archive_dumped_at_a_jvm_s_exit_is_mapped_by_the_next_jvm(monkeypatch, tmp_path):
    """A real JVM (Kafka's storage tool, which ends with System.exit as the checker's driver does) dumps the archive at
    its exit; once kept, the next JVM maps it: with -Xshare:on a JVM that cannot map it refuses to start."""
    import subprocess

    from kafka_soak.backends import kafka_jars
    from kafka_soak.checker.class_data import SharedArchive

    monkeypatch.setattr("kafka_soak.checker.class_data.archives_dir", lambda: tmp_path)
    jars = kafka_jars.resolve()
    archive = SharedArchive.of("kafka-tool", [jars])

    def run(*options: str) -> subprocess.CompletedProcess:
        return subprocess.run([kafka_jars.java_executable(), *options, "-cp", f"{jars}/*", "kafka.tools.StorageTool",
                               "random-uuid"], capture_output=True, text=True, timeout=120)

    dump = archive.java_option()
    assert dump == f"-XX:ArchiveClassesAtExit={archive.staging} -Xlog:cds=off"
    assert run(*dump.split()).returncode == 0 and archive.staging.stat().st_size > 0
    archive.keep()
    assert archive.path.is_file() and not archive.staging.exists()
    assert archive.java_option() == f"-XX:SharedArchiveFile={archive.path}"
    mapped = run(archive.java_option(), "-Xshare:on")
    assert mapped.returncode == 0, mapped.stdout + mapped.stderr
    assert SharedArchive.of("kafka-tool", [jars]) == archive, "the same java and class path: the same archive"


def test_a_3x_broker_runs_on_its_own_logging_and_a_rolling_upgrade_moves_it_to_4x_on_its_data(tmp_path):
    """Apache Kafka 3.x brings the Log4j 1 API (reload4j), not 4.x's Log4j 2: its broker logs through it, and its
    kafka-features is the core module's (3.5). bN^V's step stops the node gracefully and starts it on 4.3.1 on its own
    data: what was written before is there, the node's next starts run the new release, and the cluster's
    metadata.version stays the one 3.5.2 formatted (a 4.x release runs any from 3.3-IV3 on)."""
    from confluent_kafka import Producer

    from kafka_soak.backends.local_kafka import cluster_features

    backend = LocalKafkaBackend(tmp_path, version="3.5.2")
    cluster = backend.provision({"input": 2}, "soak.upgrade")
    try:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
        for n in range(100):
            producer.produce("soak.upgrade.input", key=str(n), value=b"x")
        assert producer.flush(30) == 0
        log = tmp_path / "logs" / "kafka-1.log"
        assert "Kafka version: 3.5.2" in log.read_text() and "INFO [KafkaRaftServer nodeId=1] Kafka Server started" \
            in log.read_text(), "the 3.x broker logs through reload4j"
        formatted = cluster_features("3.5.2", cluster.bootstrap_servers)
        assert formatted["metadata.version"] == "3.5-IV2", formatted

        moved = backend.upgrade_broker(1, "4.3.1")
        assert moved["from"] == "3.5.2" and moved["release"] == "4.3.1"
        assert "Kafka version: 4.3.1" in log.read_text()
        assert sum(high for _low, high in kafka_io.watermarks(cluster.bootstrap_servers,
                                                               "soak.upgrade.input").values()) == 100
        assert cluster_features("4.3.1", cluster.bootstrap_servers)["metadata.version"] == "3.5-IV2"
        assert any("/kafka/4.3.1/" in part for part in backend.processes.process("kafka-1").cmdline())
        layout = backend.layout()
        assert backend.node_release(layout, layout.nodes[0]) == "4.3.1", "what the node's next start runs (bN+)"
    finally:
        backend.release(cluster)
    assert not backend.processes.is_alive("kafka-1")


def test_the_run_s_brokers_roll_small_segments_so_a_killed_one_recovers_only_the_last(kafka):
    """A broker killed at a fault recovers at its start each partition's segments past its last flushed point, which
    advances as segments roll: the run's brokers roll every ``SEGMENT_BYTES`` (Kafka's 1 GiB would hold a whole night
    in one segment, re-read at every restart)."""
    from confluent_kafka import Producer

    from kafka_soak.backends.local_kafka import SEGMENT_BYTES

    backend, cluster = kafka
    topic = f"test.segments.{time.time_ns()}"
    kafka_io.create_topics(cluster.bootstrap_servers, {topic: 1})
    producer = Producer(kafka_io.client_config(cluster.bootstrap_servers))
    value = b"x" * 100_000
    for _ in range(2 * SEGMENT_BYTES // len(value) + 10):  # a little over two segments' worth
        producer.produce(topic, value)
        producer.poll(0)
    assert producer.flush(60) == 0
    segments = sorted((backend.home / "node-1" / "data" / f"{topic}-0").glob("*.log"))
    assert len(segments) == 3, segments
    assert all(s.stat().st_size <= SEGMENT_BYTES for s in segments)
