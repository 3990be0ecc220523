"""The frames of a ``one-to-one`` output of a team's app (``contracts.ONE_TO_ONE``): record by record against the
input, each input once in the output and in seq order within its key. Its values are the app's own format; an
output's id is the ``soak.id`` header the harness gives every input record (Kafka Streams forwards it) or a number in
its JSON value (``id_from``)."""

from __future__ import annotations

from typing import Any

import anomalies
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_soak.shared import contracts


def parse_output(raw: DataFrame, id_from: str) -> DataFrame:
    """A team's app's one-to-one output (read ``raw``) in the shape of a reference app's (``anomalies.OUTPUT_SCHEMA``), null
    where it says nothing: its id from the ``soak.id`` header (``id_from`` "header": Kafka Streams forwards an input's
    headers to what it writes) or a number in its JSON value (``json:$.orderId``), its own key. Its key and seq as
    judged are its input's (``frames``); the instance that wrote it is unknown."""
    if id_from == contracts.ID_FROM_HEADER:
        found = anomalies.header(contracts.ID_HEADER)
    elif id_from.startswith(contracts.ID_FROM_JSON):
        found = F.get_json_object(F.col("value").cast("string"), id_from[len(contracts.ID_FROM_JSON):]).try_cast("long")
    else:
        raise ValueError(f"id_from {id_from!r}: an output's id is in the {contracts.ID_HEADER} header "
                         f"({contracts.ID_FROM_HEADER!r}) or its JSON value ('{contracts.ID_FROM_JSON}$.path')")
    null = F.lit(None)
    return raw.select(*anomalies.position(), found.alias("id"), "key", null.cast("long").alias("seq"),
                      null.cast("long").alias("assigned_id"), null.cast("int").alias("instance"),
                      null.cast("int").alias("in_partition"))


def frames(inputs: DataFrame, outputs: DataFrame) -> dict[str, DataFrame]:
    """The frames of a ``one-to-one`` output (``parse_output``) against a team's app's input (``anomalies.parse_input``): the
    suites ``input_ids`` and ``outputs`` as for a reference app, each output judged with its input's key and seq, and
    in seq order within its key in each partition it went to (Kafka orders nothing across partitions, and an app that
    rekeys may spread a key's records over several). One aggregation by id, a join by id, a shuffle by key."""
    per_id = anomalies.by_id(inputs, outputs, keys=True)
    return {"input_ids": anomalies.input_ids(per_id, inputs),
            "outputs": anomalies.in_key_order(anomalies.marked_outputs(per_id, outputs, adopt=True),
                                              ["key", "topic_partition"])}


def read(raw: DataFrame, subject: dict[str, Any], role: str) -> DataFrame:
    """Its output, read ``raw`` (``parse_output``): the ``role`` is always ``output``."""
    return parse_output(raw, subject.get("id_from") or contracts.ID_FROM_HEADER)


def subject_frames(subject: dict[str, Any], history: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """The frames of a subject of this contract, from its history."""
    return frames(history["input"], history["output"])
