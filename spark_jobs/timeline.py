"""The run on a time axis, for the soak report: records in and out per second, and when each anomaly happened.

Computed by the checker from the same history the expectations judge, so the report's anomaly points are
the verdict's records, not a second opinion. What reaches the driver is aggregated per second (and per
instance) or capped at ``EVENT_CAP`` events per anomaly: its size does not grow with the run.

Time of an anomaly: when the app produced the output involved (its Kafka timestamp); for ``lost``, which
has no output, when the input was produced; for ``stale_state``, when the app caught itself; for ``rolled_back``, when
the app committed the execution's first version that went backwards; for ``wrong_aggregate`` (one event per key),
when the app committed the key's last value, or for a key without one, when its last input was produced.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

from anomalies import lookup
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

EVENT_CAP = 500


def _second(column: str) -> Column:
    return F.floor(F.col(column) / 1000).cast("long")


def _events(anomaly: str, frame: DataFrame, ts: str, instance: Column, partition: Column, detail: Column) -> DataFrame:
    """The event shape every anomaly shares: anomaly, ts (ms), instance, partition, id, key, detail."""
    return frame.select(F.lit(anomaly).alias("anomaly"), F.col(ts).cast("long").alias("ts"),
                        instance.cast("int").alias("instance"), partition.cast("int").alias("partition"),
                        F.col("id").cast("long").alias("id"), F.col("key"), detail.cast("string").alias("detail"))


def anomaly_events(history: dict[str, DataFrame], frames: dict[str, DataFrame], found: set[str]) -> DataFrame | None:
    """One row per record behind each anomaly in ``found`` (``_events``' shape); partition = the input partition
    involved. Starts from the checker's cached frames filtered to what the expectations flagged (few rows in a
    run worth reading), then looks those records up in the history for their time and instance (``lookup``: no shuffle
    of the whole history unless more than ``BROADCAST_ROWS`` records are flagged), and nothing at all for a run
    that passed."""
    inputs, outputs = history["input"], history["output"]
    at = ["topic_partition", "topic_offset"]
    null = F.lit(None)
    parts: list[DataFrame] = []
    if "stalled" in found and "progress" in frames:  # one event per stalled partition, when the drain first saw it not moving
        stalls = frames["progress"].where("stalled").withColumns(
            {"ts": F.col("since") * 1000, "id": null, "key": null.cast("string")})
        parts.append(_events("stalled", stalls, "ts", null, F.col("partition"), F.format_string(
            "no commit past offset %d of %d (owner %s)", "committed", "end", F.coalesce("owner", F.lit("none")))))
    if "lost" in found:
        lost = frames["input_ids"].where("outputs = 0").select("id")
        parts.append(_events("lost", lookup(inputs, lost, "id"), "ts", null, F.col("topic_partition"),
                             F.concat(F.lit("seq "), F.col("seq").cast("string"))))
    if "duplicated" in found:
        repeated = frames["input_ids"].where("outputs > 1").select("id", F.col("outputs").alias("copies"))
        parts.append(_events("duplicated", lookup(outputs, repeated, "id"), "kafka_ts", F.col("instance"),
                             F.col("in_partition"), F.concat(F.lit("copy of "), F.col("copies").cast("string"))))
    if "unexpected" in found:
        unknown = frames["outputs"].where(~F.col("known")).select(*at)
        parts.append(_events("unexpected", lookup(outputs, unknown, at), "kafka_ts", F.col("instance"),
                             F.col("in_partition"), null))
    if "reordered" in found:  # with the highest seq committed before it in its key (the expectation's reason)
        late = frames["outputs"].where(~F.col("in_order")).select(
            *at, F.concat(F.lit("seq "), F.col("seq").cast("string"), F.lit(" after "),
                          F.col("prev_max_seq").cast("string")).alias("why"))
        parts.append(_events("reordered", lookup(outputs, late, at), "kafka_ts", F.col("instance"),
                             F.col("in_partition"), F.col("why")))
    if "id_reuse" in found:
        parts.append(_id_reuse_events(outputs, frames))
    if "stale_state" in found:
        assertions = history["assertions"]
        parts.append(_events("stale_state", assertions.withColumn("id", null), "ts", F.col("instance"),
                             F.col("partition"), F.concat(F.lit("expected "), F.col("expected").cast("string"),
                                                          F.lit(", found "), F.col("found").cast("string"))))
    if "rolled_back" in found:  # an execution's first version that lost what an earlier one had
        rolled = frames["executions"].where("rollbacks > 0")
        parts.append(_events("rolled_back", rolled, "rolled_back_at", F.col("rolled_back_by"), F.col("in_partition"),
                             F.col("first_rollback")))
    if "wrong_aggregate" in found:  # a key of a table whose last value is not the function over its inputs
        wrong = frames["aggregates"].where(~F.col("correct")).withColumn("id", null)
        parts.append(_events("wrong_aggregate", wrong, "last_ts", null, F.col("in_partition"),
                             F.concat(F.lit("expected "), F.coalesce("expected", F.lit("none")), F.lit(", found "),
                                      F.coalesce("found", F.lit("none")))))
    return reduce(DataFrame.unionByName, parts) if parts else None


def _id_reuse_events(outputs: DataFrame, frames: dict[str, DataFrame]) -> DataFrame:
    """An output whose key already had another assigned id, or whose id already belonged to another key: only
    the outputs of the keys and ids the expectations flagged are ordered in time."""
    by_time = Window.orderBy("kafka_ts", "topic_partition", "topic_offset")
    keys = frames["key_ids"].where("assigned_ids > 1").select("key")
    ids = frames["assigned_ids"].where("keys > 1").select("assigned_id")
    key_first = lookup(outputs, keys, "key").withColumn("first_id", F.first("assigned_id").over(by_time.partitionBy("key")))
    id_first = (lookup(outputs, ids, "assigned_id")
                .withColumn("first_key", F.first("key").over(by_time.partitionBy("assigned_id"))))
    reused = (key_first.where("assigned_id != first_id")
              .select(*outputs.columns, F.concat(F.lit("key had id "), F.col("first_id").cast("string"),
                                                 F.lit(", now "), F.col("assigned_id").cast("string")).alias("why"))
              .unionByName(id_first.where("key != first_key")
                           .select(*outputs.columns, F.concat(F.lit("id "), F.col("assigned_id").cast("string"),
                                                              F.lit(" already belonged to "), F.col("first_key")).alias("why"))))
    return _events("id_reuse", reused, "kafka_ts", F.col("instance"), F.col("in_partition"), F.col("why"))


def _rows(frame: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict() for row in frame.collect()]


def build(history: dict[str, DataFrame], frames: dict[str, DataFrame], found: set[str],
          inputs: DataFrame | None = None) -> dict[str, Any]:
    """``{"produced": [{t, n}], "committed": [{t, instance, n}], "anomalies": {name: {"per_second": [...],
    "events": [...]}}}``; ``t`` in epoch seconds. ``history``: the topics as read (its input: what the app committed,
    which was judged); ``frames``: the checker's frames; ``found``: the anomalies the verdict counted; ``inputs``: the
    whole input, whose production the axis shows (default: the history's)."""
    produced = ((history["input"] if inputs is None else inputs).groupBy(_second("ts").alias("t"))
                .agg(F.count("*").alias("n")).orderBy("t"))
    committed = (history["output"].groupBy(_second("kafka_ts").alias("t"), "instance").agg(F.count("*").alias("n"))
                 .orderBy("t", "instance"))
    anomalies: dict[str, dict[str, list[dict[str, Any]]]] = {}
    events = anomaly_events(history, frames, found)
    if events is not None:
        events = events.cache()
        per_second = (events.groupBy("anomaly", _second("ts").alias("t"), "instance").agg(F.count("*").alias("n"))
                      .orderBy("anomaly", "t"))
        rank = Window.partitionBy("anomaly").orderBy("ts", "partition", "id")
        firsts = events.withColumn("rank", F.row_number().over(rank)).where(F.col("rank") <= EVENT_CAP).drop("rank")
        for row in _rows(per_second):
            anomalies.setdefault(row.pop("anomaly"), {"per_second": [], "events": []})["per_second"].append(row)
        for row in _rows(firsts.orderBy("anomaly", "ts")):
            anomalies[row.pop("anomaly")]["events"].append(row)
        events.unpersist()
    return {"produced": _rows(produced), "committed": _rows(committed), "anomalies": anomalies,
            "event_cap": EVENT_CAP}


def merge(per_subject: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The timelines of a matrix on one axis: the input once, each subject's (version's, or a team's app's output's)
    output and anomalies labelled ``<instance> @<name>`` (``<name>`` alone for an output that names no instance, a team's
    app's) / ``<anomaly> @<name>``. A run with one subject is returned as it is."""
    if len(per_subject) == 1:
        return next(iter(per_subject.values()))
    merged: dict[str, Any] = {"produced": next(iter(per_subject.values()))["produced"], "committed": [],
                              "anomalies": {}, "event_cap": EVENT_CAP}
    for version, data in per_subject.items():
        merged["committed"] += [{**r, "instance": f"{r['instance']} @{version}" if r["instance"] is not None else version}
                                for r in data["committed"]]
        for name, found in data["anomalies"].items():
            merged["anomalies"][f"{name} @{version}"] = found
    return merged
