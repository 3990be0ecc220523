"""The frames of the workflow engine's output (``contracts.WORKFLOW``, the suite's Kafka Streams app's topology
``workflow``): an input record creates an execution, which ends in the output once each of its task runs
succeeded; every committed version of every execution is on its executions topic. Executions end in any order and
assign no ids, so the frames are those of the id-assignment contract without its ids and order, and the executions."""

from __future__ import annotations

from typing import Any

import anomalies
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

EXECUTION_SCHEMA = "id LONG, key STRING, state STRING, task_runs MAP<STRING, STRING>, instance INT, in_partition INT"
SCHEMAS = {"output": anomalies.OUTPUT_SCHEMA, "assertions": anomalies.ASSERTION_SCHEMA, "executions": EXECUTION_SCHEMA}


def read(raw: DataFrame, subject: dict[str, Any], role: str) -> DataFrame:
    """One of its topics (``role``: output, assertions, executions) from its JSON."""
    return anomalies.parse(raw, SCHEMAS[role])


def frames(inputs: DataFrame, outputs: DataFrame, versions: DataFrame) -> dict[str, DataFrame]:
    """``{suite name: frame}``: ``input_ids`` and ``outputs`` as for the id-assignment contract, and one row per
    execution from its ``versions`` (``executions``). Each computed once and cached."""
    per_id = anomalies.by_id(inputs, outputs)
    input_ids = anomalies.input_ids(per_id, inputs)
    known = anomalies.marked_outputs(per_id, outputs)
    return {"input_ids": input_ids,
            "outputs": known.select("id", "key", "seq", "instance", "topic_partition", "topic_offset", "known").cache(),
            "executions": executions(versions).cache()}


def subject_frames(subject: dict[str, Any], history: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """The frames of a subject of this contract, from its history (its assertions topic is read, not judged)."""
    return frames(history["input"], history["output"], history["executions"])


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

