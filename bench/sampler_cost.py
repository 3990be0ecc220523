"""What the run's resource sampler costs: its CPU over a stretch of sampling, as a share of the machine's.

    python bench/sampler_cost.py --size quick   # 10 processes, 60 s at each interval
    python bench/sampler_cost.py --size large   # 20 processes, 300 s at each interval

Processes registered as a run registers them (``LocalProcesses.start``: each with its supervisor, which the sampler
samples too), each holding what a JVM of a run holds for the sampler to read (50 threads, 200 open files), then the
real sampler (``python -m kafka_soak.infra.resource_sampler``) for the stretch at the default interval (5 s) and at
1 s. Measured: the sampler's CPU seconds (its process's, from the kernel's accounting of the child it was) over the
stretch, as a share of the machine's (all cores); the baseline is the same processes over the same stretch without a
sampler, which costs no CPU of it. Writes ``bench/results/sampler_cost.{json,md}``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from typing import Any

import common

from kafka_soak.infra.runtime.local import LocalProcesses, python_command
from kafka_soak.shared import resources

SIZES = {"quick": ((10, 60),), "large": ((20, 300),)}  # (processes, seconds of sampling at each interval)
INTERVALS = (5.0, 1.0)
# A process as the sampler meets a JVM of the run: threads and open files to count, a tree to walk.
HOLDER = ("import os, threading, time\n"
          "files = [open(os.devnull) for _ in range(200)]\n"
          "for _ in range(50): threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
          "time.sleep(3600)\n")


def measure(processes: int, seconds: int) -> dict[str, Any]:
    run_dir = common.runs_dir("sampler-cost")
    local = LocalProcesses(run_dir)
    names = [f"instance-{n}" for n in range(1, processes + 1)]
    for name in names:
        local.start(name, [sys.executable, "-c", HOLDER], run_dir / "logs" / f"{name}.log")
    try:
        time.sleep(2)  # their threads and files open
        results = {}
        for interval in INTERVALS:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            sampler = subprocess.Popen(python_command("kafka_soak.infra.resource_sampler", str(run_dir),
                                                      "--interval", str(interval)), env={**os.environ})
            time.sleep(seconds)
            sampler.terminate()
            sampler.wait(30)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            share = cpu / (seconds * os.cpu_count()) * 100
            lines = (run_dir / resources.DIR / resources.SAMPLES).read_text().splitlines()
            results[interval] = {"cpu_s": cpu, "share_pct": share, "samples_so_far": len(lines)}
            print(f"interval {interval:g} s: {cpu:.2f} CPU-s over {seconds} s, {share:.2f} % of the machine",
                  flush=True)
    finally:
        for name in names:
            local.stop(name, timeout=10)
    return {"processes": processes, "sampled": 2 * processes, "seconds": seconds,
            **{f"interval_{k:g}s": v for k, v in results.items()}}


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [common.figure(f"sampler's CPU, {run['processes']} processes and their supervisors, every {interval:g} s",
                          run[f"interval_{interval:g}s"]["share_pct"], "% of the machine", None, "≤ 2 %",
                          run[f"interval_{interval:g}s"]["share_pct"] <= 2.0)
            for interval in INTERVALS]


BODY = ("The sampler's own CPU over the stretch (the kernel's accounting of it as a child of the benchmark, its start "
        "and its last sample included) as a share of all the machine's cores; each process holds 50 threads and 200 "
        "open files, as a run's JVMs do, and is registered with its supervisor, which the sampler samples as well. "
        "No baseline column: without the sampler the same processes cost it nothing.")


def main() -> None:
    common.run_sizes("sampler_cost", "The resource sampler's cost", __doc__, SIZES, lambda size: measure(*size),
                     figures, BODY)


if __name__ == "__main__":
    main()
