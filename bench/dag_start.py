"""`airflow dags test` before its first task: the DAG folder's every scenario built and stored, against only the run's
own (``SOAK_ONLY_SCENARIOS``, which `make soak` and the end-to-end tests set), side by side.

    python bench/dag_start.py --size quick   # 5 pairs
    python bench/dag_start.py --size large   # 10 pairs

Each run is ``airflow dags test soak_eos_id_assignment`` with a conf Airflow's own param check refuses (records 0), so
the process does what every run does before its first task (Airflow's import, the DAG folder parsed, its DAGs written
to the database, the conf checked) and exits there. Measured: its wall time and CPU seconds. Writes
``bench/results/dag_start.{json,md}``.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from typing import Any

import common

from kafka_soak.factory import ONLY_ENV

DAG_ID = "soak_eos_id_assignment"
SIZES = {"quick": (5,), "large": (10,)}
VARIANTS = {"whole folder": None, "own scenario": DAG_ID}  # name: SOAK_ONLY_SCENARIOS


def one(name: str, runs: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != ONLY_ENV}
    env.update({"SOAK_RUNS_DIR": runs, **({ONLY_ENV: VARIANTS[name]} if VARIANTS[name] else {})})
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    proc = subprocess.run(["airflow", "dags", "test", DAG_ID, "-c", '{"records": 0}'], env=env, capture_output=True,
                          text=True, timeout=300)
    wall, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    if "param records" not in proc.stdout + proc.stderr:
        raise RuntimeError(f"{name}: not refused by Airflow's param check (exit {proc.returncode}):\n"
                           f"{(proc.stdout + proc.stderr)[-2000:]}")
    return {"wall_s": wall, "cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime}


def measure(pairs: int) -> dict[str, Any]:
    runs_dir = str(common.runs_dir("dag-start"))
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for pair in range(pairs):
        for name in VARIANTS:
            runs[name].append(result := one(name, runs_dir))
            print(f"pair {pair + 1}, {name}: {result['wall_s']:.2f} s, {result['cpu_s']:.2f} CPU-s", flush=True)
    return {"pairs": pairs, "runs": runs,
            **{name: {key: statistics.median(r[key] for r in rs) for key in ("wall_s", "cpu_s")}
               for name, rs in runs.items()}}


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    own, whole = run["own scenario"], run["whole folder"]
    return [common.figure("wall time of `airflow dags test` to its first task", own["wall_s"], "s", whole["wall_s"],
                          "< 1×", own["wall_s"] < whole["wall_s"]),
            common.figure("CPU seconds of `airflow dags test` to its first task", own["cpu_s"], "s", whole["cpu_s"],
                          "< 1×", own["cpu_s"] < whole["cpu_s"])]


BODY = (f"Medians of the pairs, alternating. Value: `{ONLY_ENV}={DAG_ID}` (the run's own scenario, as `make soak` and "
        "the end-to-end tests run it); baseline: the whole DAG folder (every scenario file), as before. Each run: "
        f"`airflow dags test {DAG_ID} -c '{{\"records\": 0}}'`, refused by Airflow's param check after the DAGs are "
        "parsed and stored, before any task.")


def main() -> None:
    common.run_sizes("dag_start", "`airflow dags test` before its first task", __doc__, SIZES, measure, figures, BODY)


if __name__ == "__main__":
    main()
