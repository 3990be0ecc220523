"""Restoration and standby replication: the reference app's restore consumer over its changelog topic.

One assign-only consumer (no group) reads the changelog partitions of every store the instance keeps
but is not writing: stores being restored after an assignment, and standby replicas kept warm for
partitions the instance lost. Each record is applied to the store of its partition.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from kafka_soak.clients.reference.store import PartitionStore
from kafka_soak.infra import kafka_io

log = logging.getLogger("kafka_soak.worker")

BATCH = 500


class ChangelogReader:
    def __init__(self, bootstrap: str, app_id: str, topic: str) -> None:
        self.topic = topic
        settings = {"group.id": f"{app_id}-restore", "enable.auto.commit": False}
        self.consumer = Consumer(kafka_io.client_config(bootstrap, {**settings, "isolation.level": "read_committed"}))
        # The ends to restore to: the high watermark. A read_committed consumer's end is the last stable offset, which
        # stops short of a transaction whose commit returned but whose markers are not written yet: a store restored
        # right after this instance's own commit on revoke missed that commit's writes (stale_state on 3 brokers).
        self.ends = Consumer(kafka_io.client_config(bootstrap, {**settings, "isolation.level": "read_uncommitted"}))
        self.following: dict[int, PartitionStore] = {}
        self.assigned_at: dict[int, int] = {}  # the offset each followed partition was assigned at

    @kafka_io.retry_transient
    def end_offset(self, partition: int, timeout: float = 10.0) -> int:
        """The partition's high watermark: reading to it waits for every transaction before it to be decided. The
        topic's metadata is fetched first: this consumer fetches nothing, so after a broker outage its cache may still
        know no leader for the partition (``_UNKNOWN_PARTITION``), and nothing else would refresh it."""
        self.ends.list_topics(self.topic, timeout=timeout)
        return self.ends.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=timeout)[1]

    def follow(self, store: PartitionStore, from_start: bool = False) -> None:
        """Start applying ``store``'s changelog partition to it, from its position (or the beginning)."""
        offset = OFFSET_BEGINNING if from_start else store.changelog_position
        self.consumer.incremental_assign([TopicPartition(self.topic, store.partition, offset)])
        self.following[store.partition] = store
        self.assigned_at[store.partition] = 0 if from_start else offset

    def unfollow(self, partition: int) -> PartitionStore | None:
        store = self.following.pop(partition, None)
        if store is not None:
            self.consumer.incremental_unassign([TopicPartition(self.topic, partition)])
        return store

    def poll(self, timeout: float = 0.0) -> int:
        """Apply what has arrived for the followed partitions; returns the records applied."""
        if not self.following:
            return 0
        applied = 0
        for msg in self.consumer.consume(BATCH, timeout=timeout):
            if msg.error():
                if msg.error().fatal():
                    raise KafkaException(msg.error())
                continue
            store = self.following.get(msg.partition())
            if store is not None:
                store.apply(msg.key().decode(), msg.value(), msg.offset())
                applied += 1
        return applied

    def catch_up(self, partitions: list[int], report_every_s: float = 5.0) -> int:
        """Read ``partitions`` to the end of their changelog (other followed partitions advance too)."""
        ends = {p: self.end_offset(p) for p in partitions}
        pending = {p for p in partitions if ends[p] > 0}
        applied, started, reported = 0, time.monotonic(), time.monotonic()
        while pending:
            applied += self.poll(timeout=0.5)
            # Positions, not record offsets: transaction markers occupy offsets after the last record. A partition
            # that has delivered nothing since its assignment has no position yet: it is where it was assigned.
            for tp in self.consumer.position([TopicPartition(self.topic, p) for p in pending]):
                position = tp.offset if tp.offset >= 0 else self.assigned_at.get(tp.partition, 0)
                if position >= ends[tp.partition]:
                    pending.discard(tp.partition)
            if pending and time.monotonic() - reported > report_every_s:
                reported = time.monotonic()
                log.info("restoring partitions %s: %d records applied in %.0f s", sorted(pending), applied,
                         reported - started)
        return applied

    def close(self) -> None:
        self.consumer.close()
        self.ends.close()
