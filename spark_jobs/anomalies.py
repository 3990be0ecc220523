"""The checker's frames: the run's history reshaped so that each anomaly is one expectation on one frame.

The history is three topics read back after the run: input (what the generator produced), output (what
the app committed) and assertions (the app's own self-check failures); an app of the workflow contract adds its
executions topic (every version of every execution it committed). Every frame is computed once, cached, and
handed to the Great Expectations suite of the same name in ``expectations/``.

A team's own app (an app profile) is judged output by output, by the contract its profile declares for each: a
``one-to-one`` output record by record against the input, an ``aggregate`` output (a table) key by key. Its values
are its own format; the soak's ids travel in the headers the harness gives every input record.
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
EXECUTION_SCHEMA = "id LONG, key STRING, state STRING, task_runs MAP<STRING, STRING>, instance INT, in_partition INT"
# health.json's incidents: unexpected instance exits and error-level log events (kafka_soak.clients.health).
INCIDENT_SCHEMA = "kind STRING, instance INT, at DOUBLE, what STRING, log STRING"
# An aggregate's numbers, compared exactly: a sum of decimals has no rounding error, and an app's float noise past
# nine decimals (0.30000000000000004) is not a wrong sum.
DECIMAL = "decimal(38,9)"
INT_BYTES = {"int32": 4, "int64": 8}  # big-endian two's complement, as Kafka's IntegerSerializer/LongSerializer write
TEXT_ENCODINGS = ("json", "string")
# Flagged records up to which their ids are sent to every partition of the history (a broadcast join: some MB), so the
# history is not shuffled to find a few records; a run with more is joined the ordinary way.
BROADCAST_ROWS = 1_000_000


def _position() -> list[Column]:
    """Where a record sits (topic partition and offset) and when it was written (``kafka_ts``, ms: for an output
    record, when the app produced it)."""
    return [F.col("partition").alias("topic_partition"), F.col("offset").alias("topic_offset"),
            F.col("timestamp").alias("kafka_ts")]


def parse(raw: DataFrame, schema: str) -> DataFrame:
    """Topic records -> contract fields, keeping where each record sits and when it was written (``_position``)."""
    return raw.select(*_position(), F.from_json("value", schema).alias("v")).select(
        "topic_partition", "topic_offset", "kafka_ts", "v.*")


def header(name: str) -> Column:
    """A soak header of a record as a number: the last one of that name (as Kafka's ``lastHeader``), null when it is
    missing or no number (such a record matches nothing)."""
    last = F.try_element_at(F.filter("headers", lambda h: h["key"] == name), F.lit(-1))
    return last["value"].cast("string").try_cast("long")


def parse_input(raw: DataFrame, values: bool) -> DataFrame:
    """A team's app's input topic (read ``raw``) as ``INPUT_SCHEMA``'s fields: id and seq from the soak's headers,
    the record's key, ``ts`` when it was produced; with ``values``, the value as its bytes (what aggregates are of)."""
    return raw.select(*_position(), F.col("timestamp").alias("ts"), header(contracts.ID_HEADER).alias("id"), "key",
                      header(contracts.SEQ_HEADER).alias("seq"), *(["value"] if values else []))


def parse_output(raw: DataFrame, id_from: str) -> DataFrame:
    """A team's app's one-to-one output (read ``raw``) in the shape of a reference app's (``OUTPUT_SCHEMA``), null
    where it says nothing: its id from the ``soak.id`` header (``id_from`` "header": Kafka Streams forwards an input's
    headers to what it writes) or a number in its JSON value (``json:$.orderId``), its own key. Its key and seq as
    judged are its input's (``one_to_one``); the instance that wrote it is unknown."""
    if id_from == contracts.ID_FROM_HEADER:
        found = header(contracts.ID_HEADER)
    elif id_from.startswith(contracts.ID_FROM_JSON):
        found = F.get_json_object(F.col("value").cast("string"), id_from[len(contracts.ID_FROM_JSON):]).try_cast("long")
    else:
        raise ValueError(f"id_from {id_from!r}: an output's id is in the {contracts.ID_HEADER} header "
                         f"({contracts.ID_FROM_HEADER!r}) or its JSON value ('{contracts.ID_FROM_JSON}$.path')")
    null = F.lit(None)
    return raw.select(*_position(), found.alias("id"), "key", null.cast("long").alias("seq"),
                      null.cast("long").alias("assigned_id"), null.cast("int").alias("instance"),
                      null.cast("int").alias("in_partition"))


def parse_table(raw: DataFrame) -> DataFrame:
    """A team's app's aggregate output (read ``raw``): the updates of a table, each value as its bytes (null: a
    tombstone); the instance that wrote it is unknown."""
    return raw.select(*_position(), "key", "value", F.lit(None).cast("int").alias("instance"))


def json_path(field: str) -> str:
    """An aggregate's input field as a JSON path: a path as it is, a bare name at the top level, "" the whole value."""
    return field if not field or field.startswith("$") else f"$.{field}"


def number(value: Column, encoding: str, path: str = "") -> Column:
    """A number in a record's value (bytes) as ``DECIMAL``: a big-endian int32/int64, text (``string``), or JSON (the
    number at ``path``; without one, the value is a JSON number). Null when the value holds no such number."""
    if encoding in INT_BYTES:
        width = INT_BYTES[encoding]
        signed = F.conv(F.hex(value), 16, -10).try_cast("long")  # the bytes as a signed 64-bit number
        if width < 8:  # sign-extend a narrower number
            signed = F.when(signed >= 2 ** (8 * width - 1), signed - 2 ** (8 * width)).otherwise(signed)
        return F.when(F.length(value) == width, signed).cast(DECIMAL)
    if encoding not in TEXT_ENCODINGS:
        raise ValueError(f"encoding {encoding!r} holds no number; numbers are in {', '.join([*INT_BYTES, *TEXT_ENCODINGS])}")
    text = value.cast("string")
    return F.trim(F.get_json_object(text, path) if encoding == "json" and path else text).try_cast(DECIMAL)


def as_text(number: Column) -> Column:
    """A ``DECIMAL`` as a person writes it (12.5, 3; not 12.500000000) for a verdict's samples."""
    return F.regexp_replace(number.cast("string"), r"(?:\.0+|(\.\d*[1-9])0+)$", "$1")


def _at() -> Column:
    """Where a record sits as one number, its partition above its offset's 40 bits: unlike a struct, a fixed-width
    value keeps an aggregation over it a hash aggregation (a struct makes Spark sort the rows on both sides of the
    shuffle)."""
    return F.shiftleft(F.col("topic_partition").cast("long"), 40) + F.col("topic_offset")


def _by_id(inputs: DataFrame, outputs: DataFrame, keys: bool = False) -> DataFrame:
    """One row per id: how many input records and committed outputs carry it (``inputs``, ``outputs``), its input's
    ``seq``, and where its first output was committed (``first``, as ``_at``). A record without an id matches nothing:
    it is a row of its own, with its ``key``. With ``keys``, every id's input ``key`` too: a string makes the
    aggregation sort, so without it only the ids that ``_input_ids`` flags get their key. Cached: the suites scan it,
    and ``_outputs`` looks the ids it flags up in it."""
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


def _input_ids(per_id: DataFrame, inputs: DataFrame) -> DataFrame:
    """Suite ``input_ids``' frame: one row per input record (an id the input holds ``inputs`` times is as many rows),
    with how many input records and committed outputs carry its id. The key of an id the run got wrong (the rows the
    suite shows) is looked up in the ``inputs`` where ``_by_id`` left it out."""
    ids = per_id.where("inputs > 0")
    flagged = ids.where("id IS NOT NULL AND key IS NULL AND (inputs > 1 OR outputs <> 1)").select("id")
    keys = (lookup(inputs.select("id", F.col("key").alias("input_key")), flagged, "id")
            .groupBy("id").agg(F.min("input_key").alias("input_key")).cache())
    return (lookup(ids, keys, "id", "left")
            .select("id", F.coalesce("key", "input_key").alias("key"), "seq", "inputs", "outputs",
                    F.explode(F.sequence(F.lit(1), "inputs")).alias("copy"))
            .drop("copy"))


def _outputs(per_id: DataFrame, outputs: DataFrame, adopt: bool = False) -> DataFrame:
    """The outputs, each with whether its id was produced (``known``) and whether it is its id's first output
    (``is_first``). Only the ids the run got wrong (no input, or several outputs) need looking up (``lookup``: a
    broadcast when they are few, so the outputs are not shuffled for them). ``adopt``: an output takes its key and
    seq from the input with its id (``_by_id`` with ``keys``), so every id is looked up (a team's app may rekey what
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


def _in_key_order(outputs: DataFrame, within: list[str]) -> DataFrame:
    """Suite ``outputs``' frame: one row per output (``_outputs``), with whether it was committed in seq order: after
    no higher seq among the earlier outputs (``prev_max_seq``, the expectation's reason) of the same ``within`` (its
    key; with ``topic_partition``, its key in the partition it went to), ordered by where they were committed. Only an
    id's first output counts for ordering; its repeats are duplicates, judged elsewhere."""
    in_key_order = Window.partitionBy(*within).orderBy("topic_partition", "topic_offset")
    return (outputs.withColumn("prev_max_seq", F.max(F.when(F.col("is_first"), F.col("seq")))
                               .over(in_key_order.rowsBetween(Window.unboundedPreceding, -1)))
            .select("id", "key", "seq", "assigned_id", "instance", "topic_partition", "topic_offset", "known",
                    "prev_max_seq", (~F.col("is_first") | F.col("prev_max_seq").isNull()
                                     | (F.col("seq") >= F.col("prev_max_seq"))).alias("in_order")).cache())


def frames(inputs: DataFrame, outputs: DataFrame, assertions: DataFrame,
           versions: DataFrame | None = None) -> dict[str, DataFrame]:
    """``{suite name: frame}`` for the suites in ``expectations/``: with an executions topic's ``versions``, the frames
    of the workflow contract, else those of the id-assignment contract.

    Built for large runs, each computed once and cached: inputs and outputs meet in one hash aggregation by id
    (``_by_id``); one shuffle by key orders the outputs; the pairs of key and assigned id, few and reduced where the
    outputs are read, serve both id-reuse frames."""
    per_id = _by_id(inputs, outputs)
    input_ids = _input_ids(per_id, inputs)
    known = _outputs(per_id, outputs)
    if versions is not None:
        return {"input_ids": input_ids, "outputs": known.select("id", "key", "seq", "instance", "topic_partition",
                                                                 "topic_offset", "known").cache(),
                "executions": executions(versions).cache()}
    pairs = outputs.select("key", "assigned_id").distinct().cache()
    key_ids = (pairs.groupBy("key").agg(F.sort_array(F.collect_list("assigned_id")).alias("ids"))
               .select("key", F.size("ids").alias("assigned_ids"), "ids").cache())
    id_keys = (pairs.groupBy("assigned_id").agg(F.sort_array(F.collect_list("key")).alias("key_list"))
               .select("assigned_id", F.size("key_list").alias("keys"), "key_list").cache())
    return {"input_ids": input_ids, "outputs": _in_key_order(known, ["key"]), "key_ids": key_ids,
            "assigned_ids": id_keys, "assertions": assertions}


def one_to_one(inputs: DataFrame, outputs: DataFrame) -> dict[str, DataFrame]:
    """The frames of a ``one-to-one`` output (``parse_output``) against a team's app's input (``parse_input``): the
    suites ``input_ids`` and ``outputs`` as for a reference app, each output judged with its input's key and seq, and
    in seq order within its key in each partition it went to (Kafka orders nothing across partitions, and an app that
    rekeys may spread a key's records over several). One aggregation by id, a join by id, a shuffle by key."""
    per_id = _by_id(inputs, outputs, keys=True)
    return {"input_ids": _input_ids(per_id, inputs),
            "outputs": _in_key_order(_outputs(per_id, outputs, adopt=True), ["key", "topic_partition"])}


# The function of an aggregate output over its key's inputs (``count`` counts them), on the inputs' ``measure``.
FUNCTIONS = {"sum": F.sum, "min": F.min, "max": F.max, "latest": lambda measure: F.max_by(measure, "seq")}


def aggregates(inputs: DataFrame, table: DataFrame, function: str, field: str, input_encoding: str,
               value: dict[str, str]) -> dict[str, DataFrame]:
    """The frames of an ``aggregate`` output, a table keyed like the input (``parse_table``): ``input_ids`` (one row
    per input id: is the input complete, each id once) and ``aggregates``, one row per key with inputs or a value:
    the ``function`` (count, sum, min, max, latest: the value of the input with the highest seq) over its inputs'
    ``field`` (their value in ``input_encoding``: ``number``), against the table's last committed value for it
    (``value``: its encoding and, for JSON, path). The last value of a key is the one at its highest offset in its
    partition; of a key in several partitions, the latest of those by Kafka timestamp, then offset. A tombstone (null
    value) leaves the key no value. Both numbers are ``DECIMAL``, compared exactly.

    No join: the ids are counted in one shuffle, as for a reference app; the keys in two aggregations (by key and
    partition over the table, then by key over both topics), each reduced to about a row per key where the records
    are read, before anything is shuffled."""
    last = (table.groupBy("key", "topic_partition")
            .agg(F.max_by(F.struct("kafka_ts", "topic_offset", "topic_partition", "value"), "topic_offset")
                 .alias("last")))
    measure = [] if function == "count" else [number(F.col("value"), input_encoding, json_path(field)).alias("measure")]
    rows = (inputs.select("key", "seq", F.struct("ts", "topic_partition").alias("input_at"), *measure)
            .unionByName(last.select("key", "last"), allowMissingColumns=True))
    count = F.count("input_at")
    expected = count if function == "count" else FUNCTIONS[function](F.col("measure"))
    per_key = (rows.groupBy("key").agg(count.alias("inputs"), expected.cast(DECIMAL).alias("expected"),
                                       F.max("last").alias("last"), F.max("input_at").alias("last_input"))
               .where("inputs > 0 OR last.value IS NOT NULL")
               .withColumn("found", number(F.col("last.value"), value["encoding"], value.get("path", ""))))
    correct = (F.col("inputs") > 0) & F.col("found").isNotNull() & F.col("expected").eqNullSafe(F.col("found"))
    keyed = per_key.select("key", "inputs", as_text(F.col("expected")).alias("expected"),
                           as_text(F.col("found")).alias("found"), correct.alias("correct"),
                           F.coalesce("last.kafka_ts", "last_input.ts").alias("last_ts"),
                           F.col("last_input.topic_partition").alias("in_partition"))
    input_ids = inputs.groupBy("id").agg(F.count("*").alias("inputs"))
    return {"input_ids": input_ids.cache(), "aggregates": keyed.cache()}


def incidents(spark: SparkSession, health: dict[str, Any]) -> DataFrame:
    """``health.json``'s incidents as the frame of suite ``app_health`` (``small_frame``)."""
    return small_frame(spark, [{k: i.get(k) for k in ("kind", "instance", "at", "what", "log")}
                               for i in health.get("incidents", [])], INCIDENT_SCHEMA)


def small_frame(spark: SparkSession, rows: list[dict[str, Any]], schema: str) -> DataFrame:
    """A handful of rows as a frame, parsed from one JSON literal by the JVM: a frame made from Python rows would start
    Python workers (seconds of CPU) for them."""
    parsed = F.from_json(F.lit(json.dumps(rows)), f"ARRAY<STRUCT<{schema}>>")
    return spark.range(1).select(F.explode(parsed).alias("row")).select("row.*")


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


STATE_RANK = {"CREATED": 0, "RUNNING": 1, "SUCCESS": 2, "FAILED": 2}  # a task run only moves forward


def executions(versions: DataFrame) -> DataFrame:
    """One row per execution of the workflow contract: its committed versions, how many of them roll it back (lose a
    task run an earlier version had, or move one backwards, or move the execution itself backwards: CREATED < RUNNING
    < SUCCESS/FAILED) and the first one that did (which task or the execution, from what to what, when and by which
    instance).

    Comparing each version with the one before it is enough: a version that lacks what any earlier one had cannot
    follow a chain of versions that each kept everything. The versions of an execution are in one partition of the
    executions topic (it is keyed by execution), in the order they were committed."""
    def rank(state: Column) -> Column:
        when = F.when(state.isNull(), F.lit(-1))
        for name, value in STATE_RANK.items():
            when = when.when(state == name, F.lit(value))
        return when.otherwise(F.lit(-1))

    in_order = Window.partitionBy("id").orderBy("topic_partition", "topic_offset")
    ranked = (versions.withColumn("ranks", F.transform_values("task_runs", lambda _task, state: rank(state)))
              .withColumn("before", F.lag("task_runs").over(in_order))
              .withColumn("before_ranks", F.lag("ranks").over(in_order))
              .withColumn("state_before", F.lag("state").over(in_order)))
    went_back = F.filter(F.map_keys("before_ranks"),
                         lambda task: rank(F.try_element_at("task_runs", task)) < F.element_at("before_ranks", task))
    first_back = F.try_element_at(went_back, F.lit(1))
    ranked = ranked.withColumn("lost_task", F.when(F.col("before_ranks").isNotNull(), first_back))
    state_back = rank(F.col("state")) < rank(F.col("state_before"))
    rolled = F.col("lost_task").isNotNull() | state_back
    what = F.concat(F.when(F.col("lost_task").isNotNull(),
                           F.concat(F.lit("task "), F.col("lost_task"), F.lit(": "),
                                    F.element_at("before", F.col("lost_task")), F.lit(" -> "),
                                    F.coalesce(F.try_element_at("task_runs", F.col("lost_task")), F.lit("missing"))))
                    .otherwise(F.concat(F.lit("execution: "), F.col("state_before"), F.lit(" -> "), F.col("state"))),
                    F.lit(" at offset "), F.col("topic_offset").cast("string"))
    first = F.min(F.when(rolled, F.struct(F.col("topic_partition"), F.col("topic_offset"), what.alias("what"),
                                          F.col("kafka_ts").alias("at"), F.col("instance"))))
    return (ranked.groupBy("id")
            .agg(F.first("key").alias("key"), F.count("*").alias("versions"),
                 F.count(F.when(rolled, 1)).alias("rollbacks"), first.alias("first"),
                 F.max_by("state", F.struct("topic_partition", "topic_offset")).alias("final_state"),
                 F.first("in_partition").alias("in_partition"))
            .select("id", "key", "versions", "rollbacks", F.col("first.what").alias("first_rollback"),
                    F.col("first.at").alias("rolled_back_at"), F.col("first.instance").alias("rolled_back_by"),
                    "final_state", "in_partition"))
