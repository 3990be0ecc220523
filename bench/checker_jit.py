"""The checker's JIT: the validate job with C1 alone against the JVM's default tiered compilation, side by side.

    python bench/checker_jit.py --size quick   # 6 000 records (a `make test` run's size) and 100 000, 2 pairs each
    python bench/checker_jit.py --size large   # also 1M, past ValidateOperator's SHORT_JOB_RECORDS

Per size: an Apache Kafka broker (backend local) and a history with planted anomalies (``soak_history``), then the real
job (``spark-submit spark_jobs/validate_soak.py``, local[2], the DAG's conf) alternately with tiered compilation (the
baseline) and with ``-XX:TieredStopAtLevel=1`` (what ValidateOperator gives a run up to SHORT_JOB_RECORDS). Both must
report the planted anomalies. Measured: wall time and CPU seconds of the job's process tree (medians).
Writes ``bench/results/checker_jit.{json,md}``.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import common
import soak_history
from validation import child_env, spark_command

from kafka_soak.backends.kafka_jars import SHORT_LIVED_JIT
from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.checker.validate import CONF, SHORT_JOB_RECORDS, shuffle_partitions

SIZES = {"quick": (6000, SHORT_JOB_RECORDS), "large": (6000, SHORT_JOB_RECORDS, 1_000_000)}
PAIRS = 2
TIMEOUT_S = 1200


class Variant(NamedTuple):
    """One way to submit the job: its name, the driver JVM's options (None: the JVM's defaults) and the master."""

    name: str
    java_options: str | None
    master: str = "local[2]"


def run_job(work: Path, bootstrap: str, topics: dict[str, str], records: int, run: str,
            variant: Variant) -> dict[str, float]:
    """One validate job (``run``: its name); its wall time and the CPU seconds of its process tree (spark-submit
    waits for all of it)."""
    conf = {**CONF, "spark.sql.shuffle.partitions": str(shuffle_partitions(records)),
            **({"spark.driver.extraJavaOptions": variant.java_options} if variant.java_options else {})}
    out = work / f"out-{run}"
    command = spark_command(bootstrap, topics, records, out, conf, variant.master)
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    with (work / "spark.log").open("a") as log:
        proc = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=child_env(), timeout=TIMEOUT_S)
    wall, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    verdict = json.loads((out / "verdict.json").read_text()) if (out / "verdict.json").exists() else None
    if proc.returncode not in (0, 2, 3) or verdict is None:
        raise RuntimeError(f"spark job exited {proc.returncode} without a verdict; see {work / 'spark.log'}")
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "anomalies": {k: v for k, v in verdict["anomalies"].items() if v}}


def measure(records: int, variants: tuple[Variant, ...] = (Variant("tiered", None), Variant("c1", SHORT_LIVED_JIT)),
            first: Callable[[Path, Any], dict[str, Any]] | None = None, pairs: int = PAIRS) -> dict[str, Any]:
    """``pairs`` rounds of the job under each of ``variants`` on one history of ``records``, after ``first(work,
    cluster)`` if given; the medians per variant, and what ``first`` returned."""
    work = common.runs_dir(f"checker-{'-'.join(v.name for v in variants)}-{records}")
    history = soak_history.History.of(records)
    backend = LocalKafkaBackend(work)
    runs: dict[str, list[dict[str, float]]] = {v.name: [] for v in variants}
    try:
        cluster = backend.provision({"input": history.partitions, "output": history.partitions, "assertions": 1},
                                    prefix=f"jit-{records}")
        soak_history.write(cluster.bootstrap_servers, cluster.topics, history)
        before = first(work, cluster) if first else {}
        for pair in range(pairs):
            for variant in variants:
                name = variant.name
                run = run_job(work, cluster.bootstrap_servers, cluster.topics, records, f"{name}-{pair}", variant)
                if run["anomalies"] != history.planted:
                    raise RuntimeError(f"{records}, {name}: found {run['anomalies']}, planted {history.planted}")
                runs[name].append(run)
                print(f"{records} records, pair {pair + 1}, {name}: {run['wall_s']:.1f} s wall, "
                      f"{run['cpu_s']:.1f} CPU-s", flush=True)
    finally:
        backend.release(None)
    return {"records": records, "work_dir": str(work), **before,
            **{name: {key: statistics.median(r[key] for r in rs) for key in ("wall_s", "cpu_s")}
               for name, rs in runs.items()}}


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Up to SHORT_JOB_RECORDS C1 alone must cost less CPU and no wall time; past it, where the operator keeps tiered
    compilation, the figures say whether that is still right."""
    n, c1, tiered = f"{run['records']:,} records", run["c1"], run["tiered"]
    if run["records"] > SHORT_JOB_RECORDS:
        return [common.figure(f"wall time of the job, {n}", c1["wall_s"], "s", tiered["wall_s"],
                              "> 1× (tiered kept past SHORT_JOB_RECORDS)", c1["wall_s"] > tiered["wall_s"])]
    return [common.figure(f"CPU seconds of the job, {n}", c1["cpu_s"], "s", tiered["cpu_s"], "< 1× (less CPU)",
                          c1["cpu_s"] < tiered["cpu_s"], "process tree: spark-submit JVM, Python driver, workers"),
            common.figure(f"wall time of the job, {n}", c1["wall_s"], "s", tiered["wall_s"], "≤ 1× (no slower)",
                          c1["wall_s"] <= tiered["wall_s"])]


BODY = (f"Medians of {PAIRS} pairs per size, the two compilers alternating on the same history and broker. "
        "Value: the driver JVM with `-XX:TieredStopAtLevel=1` (C1 alone), as ValidateOperator submits a run of "
        f"up to {SHORT_JOB_RECORDS:,} records; baseline: the JVM's default tiered compilation (C1, then C2). "
        "On a small run the C2 compiler's work is most of the job's CPU and never pays back; less CPU is what "
        "counts on a 2-core machine where the run's broker and apps share the cores.")


def main() -> None:
    common.run_sizes("checker_jit", "The checker's JIT (C1 alone for a small run)", __doc__, SIZES, measure, figures, BODY)


if __name__ == "__main__":
    main()
