"""The checker's frames: the run's history reshaped so that each anomaly is one expectation on one frame.

The history is three topics read back after the run: input (what the generator produced), output (what
the app committed) and assertions (the app's own self-check failures); an app of the workflow contract adds its
executions topic (every version of every execution it committed). Every frame is computed once, cached, and
handed to the Great Expectations suite of the same name in ``expectations/``.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

INPUT_SCHEMA = "id LONG, key STRING, seq LONG, ts LONG"
OUTPUT_SCHEMA = "id LONG, key STRING, seq LONG, assigned_id LONG, instance INT, in_partition INT, in_offset LONG"
ASSERTION_SCHEMA = "kind STRING, key STRING, expected LONG, found LONG, partition INT, instance INT, step STRING, ts LONG"
EXECUTION_SCHEMA = "id LONG, key STRING, state STRING, task_runs MAP<STRING, STRING>, instance INT, in_partition INT"
# health.json's incidents: unexpected instance exits and error-level log events (kafka_soak.health).
INCIDENT_SCHEMA = "kind STRING, instance INT, at DOUBLE, what STRING, log STRING"


def parse(raw: DataFrame, schema: str) -> DataFrame:
    """Topic records -> contract fields, keeping where each record sits (topic partition and offset) and when
    it was written (``kafka_ts``, ms: for an output record, when the app produced it)."""
    parsed = raw.select(F.col("partition").alias("topic_partition"), F.col("offset").alias("topic_offset"),
                        F.col("timestamp").alias("kafka_ts"), F.from_json("value", schema).alias("v"))
    return parsed.select("topic_partition", "topic_offset", "kafka_ts", "v.*")


def frames(inputs: DataFrame, outputs: DataFrame, assertions: DataFrame,
           versions: DataFrame | None = None) -> dict[str, DataFrame]:
    """``{suite name: frame}`` for the suites in ``expectations/``: with an executions topic's ``versions``, the frames
    of the workflow contract, else those of the id-assignment contract.

    Built for large runs: inputs and outputs meet in one shuffle by id (no joins), which gives every input
    its input and output counts (so no expectation needs a pass of its own to find repeated ids) and every
    output whether its id was produced and whether it is the id's first copy;
    one more shuffle by key orders the outputs. Ids and keys are counted with ``collect_set`` alone, so
    Spark needs no expand-and-count pass for distinct values."""
    null = F.lit(None)
    history = (inputs.select("id", "key", "seq", null.cast("int").alias("topic_partition"),
                             null.cast("long").alias("topic_offset"), null.cast("long").alias("assigned_id"),
                             null.cast("int").alias("instance"), F.lit(True).alias("is_input"))
               .unionByName(outputs.select("id", "key", "seq", "topic_partition", "topic_offset", "assigned_id",
                                           "instance", F.lit(False).alias("is_input"))))
    by_id = Window.partitionBy("id")
    at = F.struct("topic_partition", "topic_offset")  # where an output was committed
    has_id = F.col("id").isNotNull()  # a record without an id matches nothing
    per_id = (history.withColumn("inputs", F.when(has_id, F.count(F.when(F.col("is_input"), 1)).over(by_id))
                                 .otherwise(1))
              .withColumn("outputs", F.when(has_id, F.count(F.when(~F.col("is_input"), 1)).over(by_id))
                          .otherwise(0))
              .withColumn("known", has_id & F.max("is_input").over(by_id))
              .withColumn("first", F.min(F.when(~F.col("is_input"), at)).over(by_id)))
    input_ids = per_id.where("is_input").select("id", "key", "seq", "inputs", "outputs")
    if versions is not None:
        known = per_id.where(~F.col("is_input")).select("id", "key", "seq", "instance", "topic_partition",
                                                        "topic_offset", "known")
        return {"input_ids": input_ids, "outputs": known, "executions": executions(versions)}

    # Order of each output within its key: by where it was committed. Only an id's first output counts
    # for ordering; its repeats are duplicates, judged elsewhere.
    in_key_order = Window.partitionBy("key").orderBy("topic_partition", "topic_offset")
    is_first = at == F.col("first")
    output_records = (per_id.where(~F.col("is_input"))
                      .withColumn("prev_max_seq", F.max(F.when(is_first, F.col("seq")))
                                  .over(in_key_order.rowsBetween(Window.unboundedPreceding, -1)))
                      .select("id", "key", "seq", "assigned_id", "instance", "topic_partition", "topic_offset", "known",
                              (~is_first | F.col("prev_max_seq").isNull()
                               | (F.col("seq") >= F.col("prev_max_seq"))).alias("in_order")))

    key_ids = (outputs.groupBy("key").agg(F.sort_array(F.collect_set("assigned_id")).alias("ids"))
               .select("key", F.size("ids").alias("assigned_ids"), "ids"))
    id_keys = (outputs.groupBy("assigned_id").agg(F.sort_array(F.collect_set("key")).alias("key_list"))
               .select("assigned_id", F.size("key_list").alias("keys"), "key_list"))
    return {"input_ids": input_ids, "outputs": output_records, "key_ids": key_ids, "assigned_ids": id_keys,
            "assertions": assertions}


def incidents(spark: SparkSession, health: dict[str, Any]) -> DataFrame:
    """``health.json``'s incidents as the frame of suite ``app_health``. Parsed from one JSON literal by the JVM:
    a frame made from Python rows would start Python workers (seconds of CPU) for a handful of rows."""
    rows = json.dumps([{k: i.get(k) for k in ("kind", "instance", "at", "what", "log")}
                       for i in health.get("incidents", [])])
    parsed = F.from_json(F.lit(rows), f"ARRAY<STRUCT<{INCIDENT_SCHEMA}>>")
    return spark.range(1).select(F.explode(parsed).alias("incident")).select("incident.*")


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
