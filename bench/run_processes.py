"""What one run's processes hold: the peak resident memory of each broker, app instance and generator of a run, next to
the figure ``kafka_soak.run_size`` counts for it when it bounds what a run may start.

Each run is a real scenario run (``airflow dags test``) sampled with psutil every half second while it runs; a
process is classed by its command line. The ratio is measured peak / assumed figure: at most 1.0 means the bound
errs high, never low.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import psutil
from common import DagsTest, figure, parse_size, runs_dir, write_results

from kafka_soak import run_size

DAG_ID = "soak_eos_id_assignment"
CONFS = {"quick": ({"app": "streams", "brokers": 3, "program": "1 2 3 k2 2 0"},
                   {"app": "worker", "program": "1 2 3 k2 2 0"}),
         "large": ({"app": "streams", "brokers": 3, "program": "1 2 3 k2 2 0 0 0 0 0", "records": 200_000,
                    "payload_bytes": 500},
                   {"app": "worker", "program": "1 2 3 k2 2 0 0 0 0 0", "records": 200_000, "payload_bytes": 500})}
KINDS = {"broker": ("kafka.Kafka ",), "Kafka Streams instance": ("SoakStreamsApp",),
         "worker instance": ("kafka_soak.clients.reference.worker",), "generator": ("kafka_soak.load.generator",)}
ASSUMED_MIB = {"broker": run_size.BROKER_MIB, "Kafka Streams instance": run_size.JVM_APP_MIB,
               "worker instance": run_size.PYTHON_MIB, "generator": run_size.PYTHON_MIB}


def kind_of(proc: psutil.Process) -> str:
    try:
        line = " ".join(proc.cmdline())
    except psutil.Error:
        return ""
    return next((kind for kind, signs in KINDS.items() if any(s in line for s in signs)), "")


def sample(stop: threading.Event, peaks: dict[str, int]) -> None:
    """The peak RSS of any one process of each kind, until ``stop``."""
    while not stop.is_set():
        for proc in psutil.process_iter():
            kind = kind_of(proc)
            if kind:
                try:
                    peaks[kind] = max(peaks.get(kind, 0), proc.memory_info().rss)
                except psutil.Error:
                    continue
        stop.wait(0.5)


def measure(conf: dict[str, Any], runs: Path) -> dict[str, Any]:
    peaks: dict[str, int] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample, args=(stop, peaks), daemon=True)
    sampler.start()
    started = time.time()
    try:
        run_dir, _, code, wall = DagsTest(DAG_ID, conf, runs).run(lambda _: None, timeout=900)
    finally:
        stop.set()
        sampler.join()
    return {"conf": conf, "exit_code": code, "wall_s": round(wall or time.time() - started, 1),
            "run_dir": str(run_dir), "peak_rss_mib": {k: round(v / 2**20, 1) for k, v in sorted(peaks.items())}}


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    runs = [measure(conf, runs_dir("run-processes")) for conf in CONFS[size]]
    peaks: dict[str, float] = {}
    for run in runs:
        for kind, mib in run["peak_rss_mib"].items():
            peaks[kind] = max(peaks.get(kind, 0.0), mib)
    figures = [figure(f"peak RSS of one {kind}", peaks[kind], "MiB", ASSUMED_MIB[kind], "<= 1.0x the assumed figure",
                      peaks[kind] <= ASSUMED_MIB[kind]) for kind in KINDS if kind in peaks]
    body = (f"Each run: `{DAG_ID}` with " + " and with ".join(f"`{r['conf']}` (exit code {r['exit_code']}, "
                                                             f"{r['wall_s']} s)" for r in runs)
            + ", sampled every 0.5 s with psutil. Baseline: the figure `kafka_soak.run_size` counts for one such "
            f"process when it bounds a run at {run_size.MAX_RUN_PROCESSES} processes and "
            f"{run_size.MAX_RUN_MEMORY_MIB // 1024} GiB (README, 'What the suite guarantees').")
    write_results("run_processes", "What one run's processes hold", size, figures, body, {"runs": runs})


if __name__ == "__main__":
    main()
