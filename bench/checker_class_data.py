"""The checker's class-data archive: the validate job with its driver JVM mapping the classes it loads from an
archive (ValidateOperator on a local master), against the same job loading them, side by side.

    python bench/checker_class_data.py --size quick   # 6 000 records (a `make test` run's size), 3 pairs
    python bench/checker_class_data.py --size large   # also 100 000

Per size: an Apache Kafka broker (backend local), a history with planted anomalies (``soak_history``), one run that
dumps the archive at its exit (what the first validate task of a machine does), then the real job (``spark-submit
spark_jobs/validate_soak.py``, local[2], the DAG's conf, C1 alone as for a run of this size) alternately without
(the baseline) and with ``-XX:SharedArchiveFile``. Every run must report the planted anomalies. Measured: wall time
and CPU seconds of the job's process tree (medians), and what the dump costs once. Writes
``bench/results/checker_class_data.{json,md}``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import checker_jit
import common
from checker_jit import Variant

from kafka_soak.backends.kafka_jars import SHORT_LIVED_JIT
from kafka_soak.checker.class_data import SharedArchive
from kafka_soak.checker.validate import SHORT_JOB_RECORDS

SIZES = {"quick": (6000,), "large": (6000, SHORT_JOB_RECORDS)}
PAIRS = 3


def measure(records: int) -> dict[str, Any]:
    archive = SharedArchive(Path(tempfile.mkdtemp(prefix="kafka-soak-class-data-")) / "spark-driver.jsa")

    def dump(work: Path, cluster: Any) -> dict[str, Any]:
        run = checker_jit.run_job(work, cluster.bootstrap_servers, cluster.topics, records, "dump",
                                  Variant("dump", f"{SHORT_LIVED_JIT} {archive.java_option()}"))
        archive.keep()
        if not archive.path.is_file():
            raise RuntimeError(f"the driver JVM dumped no archive into {archive.staging}")
        return {"dump": {key: run[key] for key in ("wall_s", "cpu_s")}, "archive_bytes": archive.path.stat().st_size}

    return checker_jit.measure(records, (Variant("loaded", SHORT_LIVED_JIT),
                                         Variant("archived", f"{SHORT_LIVED_JIT} -XX:SharedArchiveFile={archive.path}")),
                               dump, PAIRS)


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    n, archived, loaded, dump = f"{run['records']:,} records", run["archived"], run["loaded"], run["dump"]
    return [common.figure(f"CPU seconds of the job, {n}", archived["cpu_s"], "s", loaded["cpu_s"], "< 1× (less CPU)",
                          archived["cpu_s"] < loaded["cpu_s"], "process tree: spark-submit JVM, Python driver"),
            common.figure(f"wall time of the job, {n}", archived["wall_s"], "s", loaded["wall_s"], "< 1× (faster)",
                          archived["wall_s"] < loaded["wall_s"]),
            common.figure(f"wall time of the run that dumps the archive, {n}", dump["wall_s"], "s", loaded["wall_s"],
                          "", None, f"paid once per machine; archive {run['archive_bytes'] / 2**20:.0f} MiB")]


BODY = (f"Medians of {PAIRS} pairs per size, alternating on the same history and broker, after one run "
        "that dumped the archive. Value: the driver JVM mapping its classes from the class-data archive "
        "(`-XX:SharedArchiveFile`, as ValidateOperator submits on a local master once the first validate task of "
        "the machine has dumped it); baseline: the same job loading them from the jars. Both compile with C1 "
        "alone, as a run of this size does.")


def main() -> None:
    common.run_sizes("checker_class_data", "The checker's class-data archive", __doc__, SIZES, measure, figures, BODY)


if __name__ == "__main__":
    main()
