"""The run's topics as Spark frames, read with Spark's own Kafka source (``spark-sql-kafka-0-10``, given to
spark-submit with ``--jars``; ``kafka_soak.checker.spark_kafka`` fetches it).

Each topic is read from its earliest to its latest offsets as the plan is made, under ``read_committed``: the
records of committed transactions only, and never past an open one (the last stable offset). Transaction markers
and aborted records leave gaps in the offsets, which the source steps over. A secured cluster's client settings
come from the driver's environment (``java_client.SETTINGS_ENV``, librdkafka names, as for every client of a
run), translated to the Java client's by ``java_client``; they reach the executors inside the job, never as a
command-line argument.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from kafka_soak.shared import java_client, offsets

GROUP_PREFIX = "kafka-soak-validation"  # the consumer groups' prefix, for a cluster whose ACLs name them
# A bounded read of whole partitions: large fetches and polls, not the consumer defaults made for tailing a topic. A
# fetch that finds nothing new (at a partition's end, past its last transaction marker) returns after 10 ms instead of
# waiting fetch.max.wait.ms's 500 ms for data that will not come.
CONSUMER = {"max.partition.fetch.bytes": "52428800", "fetch.max.bytes": "52428800", "max.poll.records": "20000",
            "receive.buffer.bytes": "1048576", "fetch.max.wait.ms": "10"}


def read(spark: SparkSession, bootstrap: str, topic: str, raw: bool = False) -> DataFrame:
    """``partition, offset, key, value, timestamp`` (ms) of every committed record of ``topic``; the value as text
    (the reference apps' JSON), or ``raw``: as the bytes the app wrote, with the record's ``headers`` (a team's app
    writes its own format, and the soak's ids travel in headers)."""
    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest").option("endingOffsets", "latest")
              .option("kafka.isolation.level", "read_committed").option("groupIdPrefix", GROUP_PREFIX)
              .option("includeHeaders", str(raw).lower()))
    for key, value in {**CONSUMER, **java_client.java_settings(java_client.given_settings())}.items():
        reader = reader.option(f"kafka.{key}", value)
    value = ["value", "headers"] if raw else ["CAST(value AS STRING) value"]
    return reader.load().selectExpr("partition", "offset", "CAST(key AS STRING) key", *value,
                                    "unix_millis(timestamp) timestamp")


def low_watermarks(bootstrap: str, topic: str) -> dict[int, int]:
    """The partitions of ``topic`` whose first offset is above 0, with that offset: records were removed
    (retention, deletion) before the checker read them, so the history has a gap."""
    marks = offsets.positions(config(bootstrap, GROUP_PREFIX), topic, timeout=30)
    return {p: low for p, (low, _high, _) in marks.items() if low > 0}


def committed(bootstrap: str, group: str, topic: str) -> dict[int, tuple[int, int]]:
    """``{partition: (committed, end)}`` of the app's ``group`` on ``topic`` as the checker starts: what the app had
    committed when it stopped, and what there was."""
    marks = offsets.positions(config(bootstrap, group), topic, committed=True, timeout=30)
    return {p: (position, high) for p, (_low, high, position) in marks.items()}


def config(bootstrap: str, group: str) -> dict[str, object]:
    """A confluent-kafka client of the cluster, with the settings the driver was given."""
    return {**java_client.given_settings(), "bootstrap.servers": bootstrap, "group.id": group, "log_level": 3}
