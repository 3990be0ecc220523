"""A PySpark data source that reads one Kafka topic with confluent-kafka: one Spark partition per Kafka partition.

Spark's own Kafka connector is a JVM jar that is not always installed; this source needs only the
Python client. Each task consumes its partition from the low to the high watermark taken when the
read is planned and yields Arrow record batches. ``spark.read.format("kafka_soak").option("topic", T)
.option("bootstrap.servers", B).load()`` gives ``partition, offset, key, value, timestamp``.
A secured cluster's client settings (SASL/SSL) come from the ``SOAK_KAFKA_CONFIG`` environment variable
(JSON), as for every other client of a run: never as options, which Spark may log.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

SCHEMA = "partition INT, offset LONG, key STRING, value STRING, timestamp LONG"
ARROW_SCHEMA = pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("key", pa.string()),
                          ("value", pa.string()), ("timestamp", pa.int64())])
BATCH = 10_000
# Longer than a transaction's default timeout (60 s): a record after an open transaction is readable under
# read_committed only once the broker has aborted it.
IDLE_TIMEOUT_S = 120
# A bounded read needs no long poll: with the default 500 ms, reading one partition from the librdkafka mock
# broker took ~0.5 s more than with 10 ms (measured: 20 partitions of 10 000 records, one after the other,
# 9.8 s vs 0.56 s), a cost every Spark task pays once.
FETCH_WAIT_MS = 10


class PartitionSlice(InputPartition):
    def __init__(self, partition: int, start: int, end: int) -> None:
        self.partition, self.start, self.end = partition, start, end


def _consumer(options: dict[str, str]):
    from confluent_kafka import Consumer

    return Consumer({**json.loads(os.environ.get("SOAK_KAFKA_CONFIG") or "{}"),
                     "bootstrap.servers": options["bootstrap.servers"], "group.id": "kafka-soak-validation",
                     "enable.auto.commit": False, "isolation.level": options.get("isolation.level", "read_committed"),
                     "log_level": 3, "fetch.max.bytes": 52_428_800,
                     "max.partition.fetch.bytes": 52_428_800, "fetch.wait.max.ms": FETCH_WAIT_MS})


def watermarks(options: dict[str, str]) -> dict[int, tuple[int, int]]:
    from confluent_kafka import TopicPartition

    consumer = _consumer(options)
    try:
        topic = options["topic"]
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        if meta.error is not None:
            raise RuntimeError(f"topic {topic}: {meta.error}")
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30) for p in sorted(meta.partitions)}
    finally:
        consumer.close()


def to_batch(partition: int, messages: list) -> pa.RecordBatch:
    """Messages of one partition as Arrow; keys and values stay bytes until Arrow checks them as UTF-8 in one go."""
    return pa.RecordBatch.from_arrays([
        pa.array([partition] * len(messages), pa.int32()),
        pa.array([m.offset() for m in messages], pa.int64()),
        pa.array([m.key() for m in messages], pa.binary()).cast(pa.string()),
        pa.array([m.value() for m in messages], pa.binary()).cast(pa.string()),
        pa.array([m.timestamp()[1] for m in messages], pa.int64()),
    ], schema=ARROW_SCHEMA)


class KafkaTopicReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = dict(options)

    def partitions(self) -> list[PartitionSlice]:
        # Empty partitions too: with no partitions at all Spark would call read() with a bare InputPartition.
        return [PartitionSlice(p, low, high) for p, (low, high) in watermarks(self.options).items()]

    def read(self, partition: PartitionSlice) -> Iterator[pa.RecordBatch]:
        from confluent_kafka import TopicPartition

        if partition.start >= partition.end:
            return
        consumer = _consumer(self.options)
        topic = self.options["topic"]
        idle_deadline = time.monotonic() + IDLE_TIMEOUT_S
        position = partition.start
        try:
            consumer.assign([TopicPartition(topic, partition.partition, partition.start)])
            while True:
                # No more than the offsets left: consume() then returns as soon as the last record is in,
                # instead of waiting out its timeout at the end of every partition.
                wanted = min(BATCH, partition.end - position)
                messages = [m for m in consumer.consume(wanted, timeout=1.0)
                            if m.error() is None and m.offset() < partition.end]
                if messages:
                    idle_deadline = time.monotonic() + IDLE_TIMEOUT_S
                    yield to_batch(partition.partition, messages)
                # The position, not the last offset: transaction markers occupy offsets too.
                position = consumer.position([TopicPartition(topic, partition.partition)])[0].offset
                if position >= partition.end:
                    return
                if time.monotonic() > idle_deadline:
                    raise TimeoutError(f"{topic}[{partition.partition}]: no records for {IDLE_TIMEOUT_S} s at offset "
                                       f"{position}, expected up to {partition.end}")
        finally:
            consumer.close()


class KafkaTopicSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka_soak"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema) -> KafkaTopicReader:
        return KafkaTopicReader(self.options)
