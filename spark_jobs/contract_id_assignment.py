"""The frames of the suite's own data contract (``contracts.ID_ASSIGNMENT``: the reference worker, the Kafka Streams
app's ``id-assignment`` topology, a team's app written for the suite's records): one output record per input with
the id the app assigned its key, and the app's own self-check failures (``assertions``)."""

from __future__ import annotations

from typing import Any

import anomalies
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SCHEMAS = {"output": anomalies.OUTPUT_SCHEMA, "assertions": anomalies.ASSERTION_SCHEMA}


def read(raw: DataFrame, subject: dict[str, Any], role: str) -> DataFrame:
    """One of its topics (``role``: output, assertions) from its JSON."""
    return anomalies.parse(raw, SCHEMAS[role])


def frames(inputs: DataFrame, outputs: DataFrame, assertions: DataFrame) -> dict[str, DataFrame]:
    """``{suite name: frame}`` for its suites in ``expectations/``.

    Built for large runs, each computed once and cached: inputs and outputs meet in one hash aggregation by id
    (``anomalies.by_id``); one shuffle by key orders the outputs; the pairs of key and assigned id, few and reduced
    where the outputs are read, serve both id-reuse frames."""
    per_id = anomalies.by_id(inputs, outputs)
    pairs = outputs.select("key", "assigned_id").distinct().cache()
    key_ids = (pairs.groupBy("key").agg(F.sort_array(F.collect_list("assigned_id")).alias("ids"))
               .select("key", F.size("ids").alias("assigned_ids"), "ids").cache())
    id_keys = (pairs.groupBy("assigned_id").agg(F.sort_array(F.collect_list("key")).alias("key_list"))
               .select("assigned_id", F.size("key_list").alias("keys"), "key_list").cache())
    return {"input_ids": anomalies.input_ids(per_id, inputs),
            "outputs": anomalies.in_key_order(anomalies.marked_outputs(per_id, outputs), ["key"]), "key_ids": key_ids,
            "assigned_ids": id_keys, "assertions": assertions}


def subject_frames(subject: dict[str, Any], history: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """The frames of a subject of this contract, from its history."""
    return frames(history["input"], history["output"], history["assertions"])
