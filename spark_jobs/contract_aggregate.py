"""The frames of an ``aggregate`` output of a team's app (``contracts.AGGREGATE``): a table keyed like the input,
whose last value for each key is a function (count, sum, min, max, latest) of the key's inputs, judged key by key.
Numbers are compared exactly as ``DECIMAL``."""

from __future__ import annotations

from typing import Any

import anomalies
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# An aggregate's numbers, compared exactly: a sum of decimals has no rounding error, and an app's float noise past
# nine decimals (0.30000000000000004) is not a wrong sum.
DECIMAL = "decimal(38,9)"
INT_BYTES = {"int32": 4, "int64": 8}  # big-endian two's complement, as Kafka's IntegerSerializer/LongSerializer write
TEXT_ENCODINGS = ("json", "string")


def parse_table(raw: DataFrame) -> DataFrame:
    """A team's app's aggregate output (read ``raw``): the updates of a table, each value as its bytes (null: a
    tombstone); the instance that wrote it is unknown."""
    return raw.select(*anomalies.position(), "key", "value", F.lit(None).cast("int").alias("instance"))


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


# The function of an aggregate output over its key's inputs (``count`` counts them), on the inputs' ``measure``.
FUNCTIONS = {"sum": F.sum, "min": F.min, "max": F.max, "latest": lambda measure: F.max_by(measure, "seq")}


def frames(inputs: DataFrame, table: DataFrame, function: str, field: str, input_encoding: str,
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


def read(raw: DataFrame, subject: dict[str, Any], role: str) -> DataFrame:
    """Its table, read ``raw`` (``parse_table``): the ``role`` is always ``output``."""
    return parse_table(raw)


def subject_frames(subject: dict[str, Any], history: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """The frames of a subject of this contract, from its history and the function, field and encodings its profile
    declares."""
    return frames(history["input"], history["output"], subject["function"], subject.get("field", ""),
                  subject["input_value"]["encoding"], subject["value"])
