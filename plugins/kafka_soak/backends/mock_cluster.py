"""librdkafka's mock cluster, driven through ctypes: the Kafka protocol endpoint of the embedded backend.

The confluent-kafka wheel bundles librdkafka, which exports a complete in-process mock cluster
(produce, fetch, idempotence, transactions, consumer groups). No Apache Kafka broker can be installed
on every machine this suite runs on, so this is the default backend. What it does not provide is
listed in ``LIMITATIONS`` and travels into every verdict produced on it.
"""

from __future__ import annotations

import ctypes
import glob
import os

import confluent_kafka

LIMITATIONS = {
    "read_committed": "read_committed hides neither open nor aborted transactions: their records are returned "
    "to consumers, so an aborted transaction shows up as output",
    "txn_offsets": "offsets sent to a transaction are acknowledged but not stored; the reference app repeats "
    "them with a plain commit after each transaction (--mirror-offsets), so a crash between the two "
    "reprocesses one batch",
    "quotas": "client quotas are not enforced",
    "create_topics": "CreateTopics is not supported; topics are created through the mock API",
    "retention": "about 5 MB are kept per partition; older segments are dropped silently",
}

# Measured: 20 000 records of 1 KB on one partition kept only the newest ~5 MB.
PARTITION_CAPACITY_BYTES = 5_000_000


def _load_librdkafka() -> ctypes.CDLL:
    """Open the librdkafka that confluent-kafka itself links, so both speak the same version."""
    libs_dir = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
    candidates = sorted(glob.glob(os.path.join(libs_dir, "librdkafka*.so*")))
    if not candidates:
        raise RuntimeError(f"no bundled librdkafka found in {libs_dir}: the embedded broker needs the "
                           "confluent-kafka manylinux wheel")
    lib = ctypes.CDLL(candidates[0])
    vp, ip, cp = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    signatures = {
        "rd_kafka_conf_new": ([], vp),
        "rd_kafka_conf_set": ([vp, cp, cp, cp, ctypes.c_size_t], ip),
        "rd_kafka_new": ([ip, vp, cp, ctypes.c_size_t], vp),
        "rd_kafka_destroy": ([vp], None),
        "rd_kafka_mock_cluster_new": ([vp, ip], vp),
        "rd_kafka_mock_cluster_destroy": ([vp], None),
        "rd_kafka_mock_cluster_bootstraps": ([vp], cp),
        "rd_kafka_mock_topic_create": ([vp, cp, ip, ip], ip),
        "rd_kafka_mock_broker_set_down": ([vp, ctypes.c_int32], ip),
        "rd_kafka_mock_broker_set_up": ([vp, ctypes.c_int32], ip),
        "rd_kafka_mock_broker_set_rtt": ([vp, ctypes.c_int32, ip], ip),
        "rd_kafka_mock_group_initial_rebalance_delay_ms": ([vp, ctypes.c_int32], None),
        "rd_kafka_mock_set_group_consumer_session_timeout_ms": ([vp, ip], None),
        "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms": ([vp, ip], None),
        "rd_kafka_err2str": ([ip], cp),
    }
    for name, (argtypes, restype) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, restype
    return lib


class MockClusterError(RuntimeError):
    """A mock-cluster call returned a Kafka error code."""


class MockCluster:
    """One mock cluster with ``brokers`` brokers listening on loopback, alive as long as this object."""

    RD_KAFKA_PRODUCER = 0

    def __init__(self, brokers: int = 1) -> None:
        self._lib = _load_librdkafka()
        errstr = ctypes.create_string_buffer(512)
        conf = self._lib.rd_kafka_conf_new()
        # The hosting handle has no bootstrap servers by design; keep its notice out of the logs.
        self._lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))
        # The handle only hosts the cluster; it never connects anywhere.
        self._rk = self._lib.rd_kafka_new(self.RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not self._rk:
            raise MockClusterError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self._cluster = self._lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._cluster:
            self._lib.rd_kafka_destroy(self._rk)
            raise MockClusterError("rd_kafka_mock_cluster_new failed")
        self.broker_count = brokers
        # Kafka's default 3 s initial rebalance delay only slows every join here.
        self._lib.rd_kafka_mock_group_initial_rebalance_delay_ms(self._cluster, 0)
        # A member that vanishes without leaving is noticed within seconds, not the default 45 s.
        self._lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(self._cluster, 6000)
        self._lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(self._cluster, 500)

    @property
    def bootstrap_servers(self) -> str:
        return self._lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()

    def _check(self, err: int, what: str) -> None:
        if err:
            raise MockClusterError(f"{what}: {self._lib.rd_kafka_err2str(err).decode()}")

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 1) -> None:
        err = self._lib.rd_kafka_mock_topic_create(self._cluster, topic.encode(), partitions, replication_factor)
        self._check(err, f"create topic {topic!r} with {partitions} partitions")

    def _broker_id(self, broker: int) -> int:
        if not 1 <= broker <= self.broker_count:
            raise MockClusterError(f"broker {broker} does not exist; brokers are 1..{self.broker_count}")
        return broker

    def set_broker_down(self, broker: int) -> None:
        self._check(self._lib.rd_kafka_mock_broker_set_down(self._cluster, self._broker_id(broker)),
                    f"set broker {broker} down")

    def set_broker_up(self, broker: int) -> None:
        self._check(self._lib.rd_kafka_mock_broker_set_up(self._cluster, self._broker_id(broker)),
                    f"set broker {broker} up")

    def set_rtt(self, broker: int, rtt_ms: int) -> None:
        self._check(self._lib.rd_kafka_mock_broker_set_rtt(self._cluster, self._broker_id(broker), rtt_ms),
                    f"set broker {broker} rtt to {rtt_ms} ms")

    def close(self) -> None:
        if self._cluster:
            self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
            self._cluster = None
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None
