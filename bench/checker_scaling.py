"""The checker on one core, on two, and on a Spark cluster: the validate job on ``local[1]`` against ``local[2]``, and on
a standalone cluster of two one-core workers beside ``local[2]``, same history, side by side.

    python bench/checker_scaling.py --size quick   # 1M input records and as many outputs, 2 pairs
    python bench/checker_scaling.py --size large   # also 10M

Per size: an Apache Kafka broker (backend local), a history with planted anomalies (``soak_history``), then the real
job (``spark-submit spark_jobs/validate_soak.py``, the DAG's conf and driver options as ValidateOperator gives them
for a run of this size) alternately on ``local[1]`` (the baseline), ``local[2]`` and the cluster (a master and two
workers started from the installed pyspark's ``spark-class`` on loopback, as ``tests/support/spark_cluster.py`` starts them).
Every run must report the planted anomalies. Measured: wall time and CPU seconds of the job's process tree (medians;
on the cluster the executors are the workers' children, so only its wall time is a figure). Writes
``bench/results/checker_scaling.{json,md}``.
"""

from __future__ import annotations

from typing import Any

import checker_jit
import common
from checker_jit import Variant
from support.spark_cluster import SparkStandalone

from kafka_soak.checker import spark_kafka
from kafka_soak.checker.validate import driver_archive, sized_conf

SIZES = {"quick": (1_000_000,), "large": (1_000_000, 10_000_000)}
PAIRS = 2


def measure(records: int) -> dict[str, Any]:
    archive = driver_archive("local[2]", spark_kafka.resolve())
    options = sized_conf(records, archive).get("spark.driver.extraJavaOptions")
    try:
        with SparkStandalone(common.runs_dir(f"spark-standalone-{records}")) as spark:
            return checker_jit.measure(records, (Variant("local[1]", options, "local[1]"), Variant("local[2]", options),
                                                 Variant("standalone", options, spark.master)), pairs=PAIRS)
    finally:
        archive.keep()  # a machine without one yet: the first job dumped it, as the DAG's first validate task does


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    n, one, two = f"{run['records']:,} records", run["local[1]"], run["local[2]"]
    return [common.figure(f"wall time of the job on 2 cores, {n}", two["wall_s"], "s", one["wall_s"],
                          "< 1× (two cores are faster)", two["wall_s"] < one["wall_s"]),
            common.figure(f"CPU seconds of the job on 2 cores, {n}", two["cpu_s"], "s", one["cpu_s"], "", None,
                          "the same work; more than 1× is what parallelism costs"),
            common.figure(f"wall time of the job on a standalone cluster of two 1-core workers, {n}",
                          run["standalone"]["wall_s"], "s", two["wall_s"], "", None,
                          "baseline: local[2] on the same data and cores; the difference is what the cluster costs")]


BODY = (f"Medians of {PAIRS} pairs per size, alternating on the same history and broker. Value: the job on "
        "`local[2]` (two cores, as the DAG's `spark_default` connection has it here); baseline: the same job on "
        "`local[1]`. The machine has two cores, so two is the end of this curve here; the broker shares them. The cluster: "
        "a master and two one-core workers on the same machine, its wall time beside `local[2]`'s.")


def main() -> None:
    common.run_sizes("checker_scaling", "The checker from one core to two, and on a standalone cluster", __doc__, SIZES,
                     measure, figures, BODY)


if __name__ == "__main__":
    main()
