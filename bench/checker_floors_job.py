"""The Spark side of ``bench/checker_floors.py``: in one session, each step of the checker's plan on its own, next to
the least it could cost (its floor), on a history the validate job would judge.

    spark-submit <the validate task's conf, jars and py-files> bench/checker_floors_job.py --bootstrap B
        --input-topic I --output-topic O --assertions-topic A --out result.json

Steps, each forced to the end with Spark's ``noop`` sink (every column computed, nothing written) and timed, with the
CPU seconds of the driver's JVM and of this Python process:

- ``read``: Spark's Kafka source alone, the input and output topics as the job reads them (the floor of any plan);
- ``read+parse``: the same, with the JSON parsed into the contract's fields (``anomalies.parse``);
- ``parse``: the parsing alone, from a copy of the raw records on local disk (read and stored untimed; in memory, 10M
  records' strings exhaust the validate task's 1 GiB driver);
- ``read+parse+cache``: what the job's ``read`` phase does (parse, cache, count);
- ``by-id aggregation``: inputs and outputs met by id (``anomalies.by_id``), alone, from the cached history;
- ``frames``: every frame computed and cached together (``contract_id_assignment.frames``), as the job's ``frames`` phase does.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import anomalies
import contract_id_assignment
import kafka_topics
import psutil
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

SCHEMAS = {"input": anomalies.INPUT_SCHEMA, "output": anomalies.OUTPUT_SCHEMA, "assertions": anomalies.ASSERTION_SCHEMA}


def cpu_s() -> float:
    """CPU seconds so far of the driver's JVM (spark-submit, this process's parent, runs the local executors too) and
    of this Python process."""
    return sum(sum(p.cpu_times()[:2]) for p in (psutil.Process(os.getppid()), psutil.Process()))


def done(frame: DataFrame) -> None:
    """Compute every column of every row of ``frame`` and write nothing."""
    frame.write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("bootstrap", "input-topic", "output-topic", "assertions-topic", "out"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args()
    spark = SparkSession.builder.appName("kafka-soak-checker-floors").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    topics = {"input": args.input_topic, "output": args.output_topic, "assertions": args.assertions_topic}
    steps: list[dict[str, float | str]] = []

    def step(name: str, work: Callable[[], object]) -> None:
        started, cpu = time.monotonic(), cpu_s()
        work()
        steps.append({"step": name, "wall_s": round(time.monotonic() - started, 2), "cpu_s": round(cpu_s() - cpu, 2)})
        print(f"{name}: {steps[-1]['wall_s']} s, {steps[-1]['cpu_s']} CPU-s", flush=True)

    def raw(role: str) -> DataFrame:
        return kafka_topics.read(spark, args.bootstrap, topics[role])

    step("warm-up (first job: the Kafka source's classes, the JIT)", lambda: done(raw("assertions")))
    step("read", lambda: [done(raw(role)) for role in ("input", "output")])
    step("read+parse", lambda: [done(anomalies.parse(raw(role), SCHEMAS[role])) for role in ("input", "output")])
    cached = {role: raw(role).persist(StorageLevel.DISK_ONLY) for role in ("input", "output")}
    for frame in cached.values():
        frame.count()
    step("parse", lambda: [done(anomalies.parse(cached[role], SCHEMAS[role])) for role in ("input", "output")])
    for frame in cached.values():
        frame.unpersist(blocking=True)
    history = {role: anomalies.parse(raw(role), schema).cache() for role, schema in SCHEMAS.items()}
    step("read+parse+cache", lambda: [frame.count() for frame in history.values()])
    step("by-id aggregation", lambda: anomalies.by_id(history["input"], history["output"]).count())
    spark.catalog.clearCache()
    for frame in history.values():
        frame.cache().count()
    step("frames", lambda: [frame.count() for frame in
                            contract_id_assignment.frames(history["input"], history["output"], history["assertions"]).values()])
    Path(args.out).write_text(json.dumps({"steps": steps}, indent=2) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
