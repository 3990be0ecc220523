"""The run on a time axis, for the soak report: records in and out per second, and when each anomaly happened.

Computed by the checker from the same history the expectations judge, so the report's anomaly points are
the verdict's records, not a second opinion. What reaches the driver is aggregated per second (and per
instance) or capped at ``EVENT_CAP`` events per anomaly: its size does not grow with the run.

Time of an anomaly: when the app produced the output involved (its Kafka timestamp); for ``lost``, which
has no output, when the input was produced; for ``stale_state``, when the app caught itself.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

EVENT_CAP = 500
EVENT_COLUMNS = ("anomaly", "ts", "instance", "partition", "id", "key", "detail")


def _second(column: str) -> Column:
    return F.floor(F.col(column) / 1000).cast("long")


def _events(anomaly: str, frame: DataFrame, ts: str, instance: Column, partition: Column, detail: Column) -> DataFrame:
    return frame.select(F.lit(anomaly).alias("anomaly"), F.col(ts).cast("long").alias("ts"),
                        instance.cast("int").alias("instance"), partition.cast("int").alias("partition"),
                        F.col("id").cast("long").alias("id"), F.col("key"), detail.cast("string").alias("detail"))


def anomaly_events(inputs: DataFrame, outputs: DataFrame, assertions: DataFrame) -> DataFrame:
    """One row per record behind an anomaly, in ``EVENT_COLUMNS``; partition = the input partition involved."""
    copies = outputs.groupBy("id").agg(F.count("*").alias("copies"))
    lost = inputs.join(copies, "id", "left_anti")
    duplicated = outputs.join(copies.where("copies > 1"), "id")
    unexpected = outputs.join(inputs.select("id"), "id", "left_anti")
    # Committed order within a key (first copy of each id only), as the ``outputs`` suite judges it.
    first_copy = Window.partitionBy("id").orderBy("topic_partition", "topic_offset")
    in_key_order = Window.partitionBy("key").orderBy("topic_partition", "topic_offset")
    firsts = outputs.withColumn("copy", F.row_number().over(first_copy)).where("copy = 1")
    reordered = (firsts.withColumn("prev_max_seq", F.max("seq").over(in_key_order.rowsBetween(Window.unboundedPreceding, -1)))
                 .where("seq < prev_max_seq"))
    # id_reuse: an output whose key already had another assigned id, or whose id was already another key's.
    by_time = Window.orderBy("kafka_ts", "topic_partition", "topic_offset")
    key_first = outputs.withColumn("first_id", F.first("assigned_id").over(by_time.partitionBy("key")))
    id_first = outputs.withColumn("first_key", F.first("key").over(by_time.partitionBy("assigned_id")))
    reused = (key_first.where("assigned_id != first_id")
              .select(*outputs.columns, F.concat(F.lit("key had id "), F.col("first_id").cast("string"),
                                                 F.lit(", now "), F.col("assigned_id").cast("string")).alias("why"))
              .unionByName(id_first.where("key != first_key")
                           .select(*outputs.columns, F.concat(F.lit("id "), F.col("assigned_id").cast("string"),
                                                              F.lit(" already belonged to "), F.col("first_key")).alias("why"))))
    null = F.lit(None)
    return (_events("lost", lost, "ts", null, F.col("topic_partition"), F.concat(F.lit("seq "), F.col("seq").cast("string")))
            .unionByName(_events("duplicated", duplicated, "kafka_ts", F.col("instance"), F.col("in_partition"),
                                 F.concat(F.lit("copy of "), F.col("copies").cast("string"))))
            .unionByName(_events("unexpected", unexpected, "kafka_ts", F.col("instance"), F.col("in_partition"), null))
            .unionByName(_events("reordered", reordered, "kafka_ts", F.col("instance"), F.col("in_partition"),
                                 F.concat(F.lit("seq "), F.col("seq").cast("string"), F.lit(" after "),
                                          F.col("prev_max_seq").cast("string"))))
            .unionByName(_events("id_reuse", reused, "kafka_ts", F.col("instance"), F.col("in_partition"), F.col("why")))
            .unionByName(_events("stale_state", assertions.withColumn("id", null), "ts", F.col("instance"),
                                 F.col("partition"), F.concat(F.lit("expected "), F.col("expected").cast("string"),
                                                              F.lit(", found "), F.col("found").cast("string")))))


def _rows(frame: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict() for row in frame.collect()]


def build(inputs: DataFrame, outputs: DataFrame, assertions: DataFrame) -> dict[str, Any]:
    """``{"produced": [{t, n}], "committed": [{t, instance, n}], "anomalies": {name: {"per_second": [...],
    "events": [...]}}}``; ``t`` in epoch seconds."""
    produced = inputs.groupBy(_second("ts").alias("t")).agg(F.count("*").alias("n")).orderBy("t")
    committed = (outputs.groupBy(_second("kafka_ts").alias("t"), "instance").agg(F.count("*").alias("n"))
                 .orderBy("t", "instance"))
    events = anomaly_events(inputs, outputs, assertions).cache()
    per_second = (events.groupBy("anomaly", _second("ts").alias("t"), "instance").agg(F.count("*").alias("n"))
                  .orderBy("anomaly", "t"))
    rank = Window.partitionBy("anomaly").orderBy("ts", "partition", "id")
    firsts = events.withColumn("rank", F.row_number().over(rank)).where(F.col("rank") <= EVENT_CAP).drop("rank")
    anomalies: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in _rows(per_second):
        anomalies.setdefault(row.pop("anomaly"), {"per_second": [], "events": []})["per_second"].append(row)
    for row in _rows(firsts.orderBy("anomaly", "ts")):
        anomalies[row.pop("anomaly")]["events"].append(row)
    events.unpersist()
    return {"produced": _rows(produced), "committed": _rows(committed), "anomalies": anomalies,
            "event_cap": EVENT_CAP}
