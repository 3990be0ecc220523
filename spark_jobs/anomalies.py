"""The checker's frames: the run's history reshaped so that each anomaly is one expectation on one frame.

The history is three topics read back after the run: input (what the generator produced), output (what
the app committed) and assertions (the app's own self-check failures). Every frame is computed once,
cached, and handed to the Great Expectations suite of the same name in ``expectations/``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

INPUT_SCHEMA = "id LONG, key STRING, seq LONG, ts LONG"
OUTPUT_SCHEMA = "id LONG, key STRING, seq LONG, assigned_id LONG, instance INT, in_partition INT, in_offset LONG"
ASSERTION_SCHEMA = "kind STRING, key STRING, expected LONG, found LONG, partition INT, instance INT, step STRING, ts LONG"


def parse(raw: DataFrame, schema: str) -> DataFrame:
    """Topic records -> contract fields, keeping where each record sits (topic partition and offset) and when
    it was written (``kafka_ts``, ms: for an output record, when the app produced it)."""
    parsed = raw.select(F.col("partition").alias("topic_partition"), F.col("offset").alias("topic_offset"),
                        F.col("timestamp").alias("kafka_ts"), F.from_json("value", schema).alias("v"))
    return parsed.select("topic_partition", "topic_offset", "kafka_ts", "v.*")


def frames(inputs: DataFrame, outputs: DataFrame, assertions: DataFrame) -> dict[str, DataFrame]:
    """``{suite name: frame}`` for the suites in ``expectations/``."""
    per_id = outputs.groupBy("id").agg(F.count("*").alias("outputs"))
    input_ids = (inputs.select("id", "key", "seq").join(per_id, "id", "left")
                 .withColumn("outputs", F.coalesce("outputs", F.lit(0))))

    # Order of each output within its key: by where it was committed. Only an id's first output counts
    # for ordering; its repeats are duplicates, judged elsewhere.
    in_key_order = Window.partitionBy("key").orderBy("topic_partition", "topic_offset")
    first = Window.partitionBy("id").orderBy("topic_partition", "topic_offset")
    known_ids = inputs.select("id", F.lit(True).alias("known"))
    ordered = (outputs.withColumn("occurrence", F.row_number().over(first))
               .withColumn("prev_max_seq", F.max(F.when(F.col("occurrence") == 1, F.col("seq")))
                           .over(in_key_order.rowsBetween(Window.unboundedPreceding, -1))))
    output_records = (ordered.join(known_ids, "id", "left")
                      .select("id", "key", "seq", "assigned_id", "instance", "topic_partition", "topic_offset",
                              F.coalesce("known", F.lit(False)).alias("known"),
                              ((F.col("occurrence") > 1) | F.col("prev_max_seq").isNull()
                               | (F.col("seq") >= F.col("prev_max_seq"))).alias("in_order")))

    key_ids = outputs.groupBy("key").agg(F.countDistinct("assigned_id").alias("assigned_ids"),
                                         F.sort_array(F.collect_set("assigned_id")).alias("ids"))
    id_keys = outputs.groupBy("assigned_id").agg(F.countDistinct("key").alias("keys"),
                                                 F.sort_array(F.collect_set("key")).alias("key_list"))
    return {"input_ids": input_ids, "outputs": output_records, "key_ids": key_ids, "assigned_ids": id_keys,
            "assertions": assertions}
