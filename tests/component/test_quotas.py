"""Client quotas on a real broker: Kafka's own tool setting, verifying, enforcing and removing them (the kafka-configs
arguments and reading back what the broker describes: unit/backends/test_quotas_commands.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kafka_soak.backends import quota_meter, quotas
from kafka_soak.backends.quotas import Quota
from kafka_soak.infra.runtime.local import LocalProcesses


def described(backend, cluster, client_id: str) -> dict[str, float]:
    return quotas.parse_describe(backend.config_command(
        quotas.describe_command(client_id, cluster.bootstrap_servers))).get(client_id, {})


def test_apply_sets_and_verifies_each_quota_on_a_real_broker_and_restore_puts_back_what_was_there(kafka):
    """Kafka's own ConfigCommand from the project's jars against the session's broker. A quota that existed before
    the run (a shared cluster's) gets its old values back at release; what the run added is deleted."""
    backend, cluster = kafka
    run, bootstrap = backend.config_command, cluster.bootstrap_servers
    quotas.apply([Quota("soak-test-c", consumer_byte_rate=9000)], run, bootstrap)  # the cluster's own, before
    both = [Quota("soak-test-set", producer_byte_rate=35000), Quota("soak-test-c", consumer_byte_rate=500,
                                                                   request_percentage=12.5)]
    applied = quotas.apply(both, run, bootstrap)
    assert applied == [{"client_id": "soak-test-set", "producer_byte_rate": 35000.0, "previous": {}},
                       {"client_id": "soak-test-c", "consumer_byte_rate": 500.0, "request_percentage": 12.5,
                        "previous": {"consumer_byte_rate": 9000.0}}]
    quotas.restore(applied, run, bootstrap)
    assert described(backend, cluster, "soak-test-set") == {}
    assert described(backend, cluster, "soak-test-c") == {"consumer_byte_rate": 9000.0}
    quotas.restore([{"client_id": "soak-test-c", "consumer_byte_rate": 9000.0, "previous": {}}], run, bootstrap)
    assert described(backend, cluster, "soak-test-c") == {}


def test_quotas_of_whole_mebibytes_and_settings_the_run_does_not_set_go_back_exactly(kafka):
    """Every digit reaches the tool (1 MiB was written as 1.04858e+06 and failed its own verification); a shared
    cluster's previous quota comes back exactly, with a setting the run's quotas do not have
    (controller_mutation_rate); a client id set twice gets back what it had before the first."""
    backend, cluster = kafka
    run, bootstrap = backend.config_command, cluster.bootstrap_servers
    run(quotas.settings_command("soak-test-mib", {"producer_byte_rate": 10485760, "controller_mutation_rate": 7.5},
                                bootstrap))  # the cluster's own, before the run
    applied = quotas.apply([Quota("soak-test-mib", producer_byte_rate=1048576),
                            Quota("soak-test-mib", producer_byte_rate=2097152)], run, bootstrap)
    assert [a["producer_byte_rate"] for a in applied] == [1048576.0, 2097152.0]
    assert described(backend, cluster, "soak-test-mib")["producer_byte_rate"] == 2097152.0
    quotas.restore(applied, run, bootstrap)
    assert described(backend, cluster, "soak-test-mib") == {"producer_byte_rate": 10485760.0,
                                                            "controller_mutation_rate": 7.5}
    run(quotas.delete_command("soak-test-mib", ["producer_byte_rate", "controller_mutation_rate"], bootstrap))
    assert described(backend, cluster, "soak-test-mib") == {}


def test_a_quota_that_cannot_be_set_undoes_the_ones_before_it(kafka):
    """Provision fails on it, and no teardown runs after a failed setup: apply leaves the cluster as it found it."""
    backend, cluster = kafka
    run, bootstrap = backend.config_command, cluster.bootstrap_servers
    with pytest.raises(Exception, match="request_percentage"):
        quotas.apply([Quota("soak-test-first", producer_byte_rate=1000),
                      Quota("soak-test-bad", request_percentage=-1.0)], run, bootstrap)
    assert described(backend, cluster, "soak-test-first") == {} and described(backend, cluster, "soak-test-bad") == {}


def until_sampled(bootstrap: str, topic: str, client_id: str, meter_csv: Path) -> None:
    """Write a record as ``client_id`` every half second until the quota meter's output has a row of it."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id})
    deadline = time.monotonic() + 120
    while not quota_meter.samples(meter_csv, "Produce", client_id):
        assert time.monotonic() < deadline, f"the quota meter sampled nothing of {client_id} in 120 s"
        producer.produce(topic, b"x")
        producer.flush(5)
        time.sleep(0.5)


def produced_bytes_per_s(bootstrap: str, topic: str, client_id: str, seconds: float, warmup_s: float) -> float:
    """A producer writing 1 KB records as fast as the broker lets it (16 KB batches, a short queue); the byte rate
    acknowledged after ``warmup_s`` (Kafka's quota lets a first request through before it throttles)."""
    from confluent_kafka import Producer

    acked: list[tuple[float, int]] = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                         "batch.size": 16384, "queue.buffering.max.messages": 64})
    payload = b"x" * 1024
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            producer.produce(topic, payload, on_delivery=lambda err, msg: err is None and acked.append(
                (time.monotonic(), len(msg.value()))))
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.purge()
    producer.flush(5)
    steady = sum(size for t, size in acked if started + warmup_s <= t <= started + seconds)
    return steady / (seconds - warmup_s)


def test_a_producer_quota_is_enforced_and_its_meter_shows_it_bit(kafka, broker, tmp_path):
    """What the quota is for: a client writing faster than its quota achieves at most the quota (plus the burst
    Kafka's quota window allows), the same client id without a quota writes many times faster, and the quota
    meter (the broker's own metrics over JMX) reports the rate the broker measured and that it throttled the client,
    while an idle client's quota is reported as never bitten."""
    backend, cluster = kafka
    quota, idle = Quota("soak-test-throttled", producer_byte_rate=35000), Quota("soak-test-idle", consumer_byte_rate=1000)
    free_client = "soak-test-free"
    free = produced_bytes_per_s(cluster.bootstrap_servers, broker.topics["input"], free_client, 3, 1)
    applied = quotas.apply([quota, idle], backend.config_command, cluster.bootstrap_servers)
    layout = backend.layout()
    meter = LocalProcesses(tmp_path)
    # The meter also reads the free client, which writes a record now and then until the meter's first row of it says
    # the meter is sampling (its JVM compiles the meter and connects first, seconds on a busy machine); only then does
    # the throttled client write, so the meter sees all of it. (A broker keeps a client's quota sensor once any quota
    # is set: the free client's first writes, before the quotas, left none.)
    quota_meter.start(meter, {n.node_id: n.jmx_port for n in layout.nodes},
                      [quota, idle, Quota(free_client, producer_byte_rate=1)], tmp_path)
    try:
        until_sampled(cluster.bootstrap_servers, broker.topics["input"], free_client, tmp_path / "broker-1.csv")
        throttled = produced_bytes_per_s(cluster.bootstrap_servers, broker.topics["input"], quota.client_id, 14, 4)
    finally:
        quota_meter.stop(meter)
        quotas.restore(applied, backend.config_command, cluster.bootstrap_servers)
    assert free > 10 * 35000, free
    assert 35000 * 0.5 <= throttled <= 35000 * 1.15, throttled
    used, unused = quota_meter.usage_per_setting([quota, idle], tmp_path, [n.node_id for n in layout.nodes])
    assert (used["client_id"], used["setting"], used["quota"], used["measured"]) == (
        quota.client_id, "producer_byte_rate", 35000.0, "byte-rate")
    assert used["bit"] and used["throttle_ms_max"] > 0 and used["per_broker"]["1"]["samples"] >= 8, used
    assert 35000 * 0.5 <= used["achieved"] <= 35000 * 1.3, used
    assert (unused["achieved"], unused["bit"], unused["per_broker"]) == (None, False, {}), unused
