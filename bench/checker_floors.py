"""Where the checker's time goes: each step of its plan against the floor of every plan, Spark's Kafka source reading
the topics, in the same Spark session, on the same history.

    python bench/checker_floors.py --size quick   # 1M input records and as many outputs
    python bench/checker_floors.py --size large   # 1M, then 10M

Per size: an Apache Kafka broker (backend local), a history with planted anomalies (``soak_history``), then
``bench/checker_floors_job.py`` submitted as the DAG's validate task submits the checker (local[2], its conf, jars and
py-files, the driver options for a run of this size), and then the real validate job on the same topics, whose own
phases (``phase <name>: <s> s``) stand beside the steps. Writes ``bench/results/checker_floors.{json,md}``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import common
import soak_history
from validation import TIMEOUT_S, child_env, run_spark, submit_command

from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.checker import spark_kafka
from kafka_soak.checker.validate import CONF, driver_archive, sized_conf

SIZES = {"quick": (1_000_000,), "large": (1_000_000, 10_000_000)}
JOB = Path(__file__).resolve().parent / "checker_floors_job.py"
FLOOR = "read"


def run_floors(work: Path, bootstrap: str, topics: dict[str, str], records: int) -> list[dict[str, Any]]:
    """The steps of ``checker_floors_job.py`` on the history, submitted with the validate task's settings."""
    archive = driver_archive("local[2]", spark_kafka.resolve())
    conf = {**sized_conf(records, archive), **CONF}
    out, log = work / "floors.json", work / "floors.log"
    command = submit_command(JOB, ["--bootstrap", bootstrap, "--input-topic", topics["input"], "--output-topic",
                                   topics["output"], "--assertions-topic", topics["assertions"], "--out", str(out)],
                             conf, "local[2]", "kafka-soak-checker-floors")
    with log.open("w") as fh:
        proc = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, env=child_env(), timeout=TIMEOUT_S)
    archive.keep()
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"the floors job exited {proc.returncode}; see {log}")
    return json.loads(out.read_text())["steps"]


def measure(records: int) -> dict[str, Any]:
    work = common.runs_dir(f"checker-floors-{records}")
    history = soak_history.History.of(records)
    backend = LocalKafkaBackend(work)
    try:
        cluster = backend.provision(history.topics(), prefix=f"floors-{records}")
        soak_history.write(cluster.bootstrap_servers, cluster.topics, history)
        steps = run_floors(work, cluster.bootstrap_servers, cluster.topics, records)
        job = run_spark(work, cluster.bootstrap_servers, cluster.topics, records)
        if {anomaly: n for anomaly, n in job["anomalies"].items() if n} != history.planted:
            raise RuntimeError(f"{records}: the job found {job['anomalies']}, planted {history.planted}")
    finally:
        backend.release(None)
    return {"records": records, "work_dir": str(work), "steps": steps, "job_phases": job["phases"],
            "job_wall_s": job["wall_s"]}


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    n = f"{run['records']:,} records"
    floor = next(s for s in run["steps"] if s["step"] == FLOOR)
    rows = [common.figure(f"{s['step']} ({s['cpu_s']:g} CPU-s), {n}", s["wall_s"], "s", floor["wall_s"], "", None)
            for s in run["steps"] if s["step"] != FLOOR and not s["step"].startswith("warm-up")]
    job = run["job_phases"]
    rows += [common.figure(f"the validate job's phase {phase}, {n}", job[phase], "s", floor["wall_s"], "", None)
             for phase in ("read", "frames", "suites") if phase in job]
    return [common.figure(f"{FLOOR}: Spark's Kafka source alone, input and output ({floor['cpu_s']:g} CPU-s), {n}",
                          floor["wall_s"], "s", None, "", None), *rows]


BODY = ("Baseline of every row: the floor of any plan, Spark's Kafka source reading the input and output topics with "
        "nothing else, in the same session (after a warm-up job on the assertions topic). Each step runs to the end "
        "with Spark's `noop` sink; CPU seconds are the driver JVM's (which runs the local executors) and the Python "
        "driver's. The by-id aggregation is computed alone from the cached history, then every frame as the job "
        "computes them. The last rows are the real validate job's own phases on the same topics, run right after.")


def main() -> None:
    common.run_sizes("checker_floors", "Where the checker's time goes: each step against the Kafka source's floor",
                     __doc__, SIZES, measure, figures, BODY)


if __name__ == "__main__":
    main()
