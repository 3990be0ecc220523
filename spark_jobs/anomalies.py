"""What the checker's frames are made of: the run's history reshaped so that each anomaly is one expectation on one
frame. Each contract's frames are built in its own module (``contract_<name>.py``, named by its record in
``kafka_soak.shared.contracts``) from the parts here, which several contracts share: the input as read (the suite's
own records, or a team's app's own format by the soak's headers), the aggregation by id that meets inputs and outputs,
the order within a key, and the app's health and progress, judged whatever the contract.

The history is the topics read back after the run: input (what the generator produced), output (what the app
committed), and what the output's contract reads besides (``Contract.topics``). Every frame is computed once, cached,
and handed to the Great Expectations suite of the same name in ``expectations/``.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from kafka_soak.shared import contracts

INPUT_SCHEMA = "id LONG, key STRING, seq LONG, ts LONG"
OUTPUT_SCHEMA = "id LONG, key STRING, seq LONG, assigned_id LONG, instance INT, in_partition INT, in_offset LONG"
ASSERTION_SCHEMA = "kind STRING, key STRING, expected LONG, found LONG, partition INT, instance INT, step STRING, ts LONG"
# health.json's incidents: unexpected instance exits and error-level log events (kafka_soak.clients.health).
INCIDENT_SCHEMA = "kind STRING, instance INT, at DOUBLE, what STRING, log STRING"
# Flagged records up to which their ids are sent to every partition of the history (a broadcast join: some MB), so the
# history is not shuffled to find a few records; a run with more is joined the ordinary way.
BROADCAST_ROWS = 1_000_000


def position() -> list[Column]:
    """Where a record sits (topic partition and offset) and when it was written (``kafka_ts``, ms: for an output
    record, when the app produced it)."""
    return [F.col("partition").alias("topic_partition"), F.col("offset").alias("topic_offset"),
            F.col("timestamp").alias("kafka_ts")]


def parse(raw: DataFrame, schema: str) -> DataFrame:
    """Topic records -> contract fields, keeping where each record sits and when it was written (``position``)."""
    return raw.select(*position(), F.from_json("value", schema).alias("v")).select(
        "topic_partition", "topic_offset", "kafka_ts", "v.*")


def header(name: str) -> Column:
    """A soak header of a record as a number: the last one of that name (as Kafka's ``lastHeader``), null when it is
    missing or no number (such a record matches nothing)."""
    last = F.try_element_at(F.filter("headers", lambda h: h["key"] == name), F.lit(-1))
    return last["value"].cast("string").try_cast("long")


def parse_input(raw: DataFrame, values: bool) -> DataFrame:
    """A team's app's input topic (read ``raw``) as ``INPUT_SCHEMA``'s fields: id and seq from the soak's headers,
    the record's key, ``ts`` when it was produced; with ``values``, the value as its bytes (what aggregates are of)."""
    return raw.select(*position(), F.col("timestamp").alias("ts"), header(contracts.ID_HEADER).alias("id"), "key",
                      header(contracts.SEQ_HEADER).alias("seq"), *(["value"] if values else []))


def _at() -> Column:
    """Where a record sits as one number, its partition above its offset's 40 bits: unlike a struct, a fixed-width
    value keeps an aggregation over it a hash aggregation (a struct makes Spark sort the rows on both sides of the
    shuffle)."""
    return F.shiftleft(F.col("topic_partition").cast("long"), 40) + F.col("topic_offset")


def by_id(inputs: DataFrame, outputs: DataFrame, keys: bool = False) -> DataFrame:
    """One row per id: how many input records and committed outputs carry it (``inputs``, ``outputs``), its input's
    ``seq``, and where its first output was committed (``first``, as ``_at``). A record without an id matches nothing:
    it is a row of its own, with its ``key``. With ``keys``, every id's input ``key`` too: a string makes the
    aggregation sort, so without it only the ids that ``input_ids`` flags get their key. Cached: the suites scan it,
    and ``marked_outputs`` looks the ids it flags up in it."""
    source = [F.struct("key", "seq").alias("source")] if keys else ["key", "seq"]
    history = (inputs.select("id", F.lit(True).alias("is_input"), _at().alias("at"), *source)
               .unionByName(outputs.select("id", F.lit(False).alias("is_input"), _at().alias("at")),
                            allowMissingColumns=True))
    orphan = F.when(F.col("id").isNull(), F.struct("is_input", "at", F.col("source.key" if keys else "key")))
    # only input records have a source (or a seq): outputs bring none to the maximum
    from_input = F.max("source") if keys else F.max(F.when(F.col("is_input"), F.col("seq")))
    per_id = (history.groupBy("id", orphan.alias("orphan"))
              .agg(F.count(F.when(F.col("is_input"), 1)).alias("inputs"),
                   F.count(F.when(~F.col("is_input"), 1)).alias("outputs"),
                   F.min(F.when(~F.col("is_input"), F.col("at"))).alias("first"), from_input.alias("from_input")))
    key, seq = (F.col("from_input.key"), F.col("from_input.seq")) if keys else (F.col("orphan.key"), F.col("from_input"))
    return per_id.select("id", key.alias("key"), seq.alias("seq"), "inputs", "outputs", "first").cache()


def input_ids(per_id: DataFrame, inputs: DataFrame) -> DataFrame:
    """Suite ``input_ids``' frame: one row per input record (an id the input holds ``inputs`` times is as many rows),
    with how many input records and committed outputs carry its id. The key of an id the run got wrong (the rows the
    suite shows) is looked up in the ``inputs`` where ``by_id`` left it out."""
    ids = per_id.where("inputs > 0")
    flagged = ids.where("id IS NOT NULL AND key IS NULL AND (inputs > 1 OR outputs <> 1)").select("id")
    keys = (lookup(inputs.select("id", F.col("key").alias("input_key")), flagged, "id")
            .groupBy("id").agg(F.min("input_key").alias("input_key")).cache())
    return (lookup(ids, keys, "id", "left")
            .select("id", F.coalesce("key", "input_key").alias("key"), "seq", "inputs", "outputs",
                    F.explode(F.sequence(F.lit(1), "inputs")).alias("copy"))
            .drop("copy"))


def marked_outputs(per_id: DataFrame, outputs: DataFrame, adopt: bool = False) -> DataFrame:
    """The outputs, each with whether its id was produced (``known``) and whether it is its id's first output
    (``is_first``). Only the ids the run got wrong (no input, or several outputs) need looking up (``lookup``: a
    broadcast when they are few, so the outputs are not shuffled for them). ``adopt``: an output takes its key and
    seq from the input with its id (``by_id`` with ``keys``), so every id is looked up (a team's app may rekey what
    it writes, or drop the seq header)."""
    if adopt:
        flagged = per_id.where("id IS NOT NULL").select("id", F.col("key").alias("input_key"),
                                                        F.col("seq").alias("input_seq"), "inputs", "first")
    else:
        flagged = per_id.where("id IS NOT NULL AND (inputs = 0 OR outputs > 1)").select("id", "inputs", "first")
    marked = lookup(outputs, flagged, "id", "left").withColumns({
        "known": F.coalesce(F.col("inputs") > 0, F.col("id").isNotNull()),  # an id not flagged has its one input
        "is_first": F.col("first").isNull() | (_at() == F.col("first"))})
    if adopt:
        marked = marked.withColumns({"key": F.col("input_key"), "seq": F.col("input_seq")})
    return marked.drop("inputs", "first", *(["input_key", "input_seq"] if adopt else []))


def lookup(history: DataFrame, flagged: DataFrame, on: str | list[str], how: str = "inner") -> DataFrame:
    """``history`` joined (``how``) with the ``flagged`` rows (on ``on``): by a broadcast of those when they are up to
    ``BROADCAST_ROWS``, so the history is not shuffled to find a few records. The flagged side is a filter of a cached
    frame, whose size Spark's planner only knows as the whole frame's, so it is counted here."""
    return history.join(F.broadcast(flagged) if flagged.count() <= BROADCAST_ROWS else flagged, on, how)


def in_key_order(outputs: DataFrame, within: list[str]) -> DataFrame:
    """Suite ``outputs``' frame: one row per output (``marked_outputs``), with whether it was committed in seq order: after
    no higher seq among the earlier outputs (``prev_max_seq``, the expectation's reason) of the same ``within`` (its
    key; with ``topic_partition``, its key in the partition it went to), ordered by where they were committed. Only an
    id's first output counts for ordering; its repeats are duplicates, judged elsewhere."""
    in_key_order = Window.partitionBy(*within).orderBy("topic_partition", "topic_offset")
    return (outputs.withColumn("prev_max_seq", F.max(F.when(F.col("is_first"), F.col("seq")))
                               .over(in_key_order.rowsBetween(Window.unboundedPreceding, -1)))
            .select("id", "key", "seq", "assigned_id", "instance", "topic_partition", "topic_offset", "known",
                    "prev_max_seq", (~F.col("is_first") | F.col("prev_max_seq").isNull()
                                     | (F.col("seq") >= F.col("prev_max_seq"))).alias("in_order")).cache())


def incidents(spark: SparkSession, health: dict[str, Any]) -> DataFrame:
    """``health.json``'s incidents as the frame of suite ``app_health`` (``small_frame``)."""
    return small_frame(spark, [{k: i.get(k) for k in ("kind", "instance", "at", "what", "log")}
                               for i in health.get("incidents", [])], INCIDENT_SCHEMA)


def small_frame(spark: SparkSession, rows: list[dict[str, Any]], schema: str) -> DataFrame:
    """A handful of rows as a frame, parsed from one JSON literal by the JVM: a frame made from Python rows would start
    Python workers (seconds of CPU) for them."""
    parsed = F.from_json(F.lit(json.dumps(rows)), f"ARRAY<STRUCT<{schema}>>")
    return spark.range(1).select(F.explode(parsed).alias("row")).select("row.*")


GROWTH_SCHEMA = ("process STRING, pid LONG, resource STRING, unit STRING, per_hour DOUBLE, rise DOUBLE, rising BOOLEAN, "
                 "samples INT, since DOUBLE, until DOUBLE, last DOUBLE, grows BOOLEAN, bound STRING")


def growth(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    """The frame of suite ``resources``: ``shared.resources.growth``'s rows of the app's instances (``small_frame``)."""
    return small_frame(spark, rows, GROWTH_SCHEMA)


PROGRESS_SCHEMA = "partition INT, committed LONG, end LONG, unprocessed LONG, stalled BOOLEAN, since DOUBLE, owner STRING"


def progress(spark: SparkSession, positions: dict[int, tuple[int, int]], stalls: list[dict[str, Any]]) -> DataFrame:
    """The frame of suite ``progress``: one row per input partition, with the group's committed offset and the
    partition's end (``kafka_topics.committed``), the records past it (``unprocessed``), and whether the drain saw it
    stall (``stalls``: drain.json's, of this group)."""
    stalled = {s["partition"]: s for s in stalls}
    return small_frame(spark, [{"partition": p, "committed": committed, "end": end,
                                "unprocessed": unprocessed({p: (committed, end)}), "stalled": p in stalled,
                                "since": stalled.get(p, {}).get("since"), "owner": stalled.get(p, {}).get("owner")}
                               for p, (committed, end) in sorted(positions.items())], PROGRESS_SCHEMA)


def unprocessed(positions: dict[int, tuple[int, int]]) -> int:
    """The input records past the group's committed offsets (``positions``: committed, end per partition)."""
    return sum(max(0, end - committed) for committed, end in positions.values())


def processed(inputs: DataFrame, positions: dict[int, tuple[int, int]]) -> DataFrame:
    """The inputs the app committed (before its group's committed offset in their partition), which the contracts
    judge; the rest is ``unprocessed``. All of them when the group committed everything, as after a drain."""
    if all(committed >= end for committed, end in positions.values()):
        return inputs
    offsets = F.create_map(*(F.lit(v) for p, (committed, _) in sorted(positions.items()) for v in (p, committed)))
    return inputs.where(F.col("topic_offset") < F.coalesce(F.element_at(offsets, F.col("topic_partition")), F.lit(0)))

