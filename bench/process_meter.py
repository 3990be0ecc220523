"""Run a command and measure it whole: wall time and the peak resident memory of its process tree.

Spark's memory is spread over a JVM, the Python driver and the Python workers the JVM forks; only the
sum over the whole tree, sampled while it runs, says what the job needs. RSS counts pages shared between
forked workers once per process, so the sum errs high, never low. The machine's load average is sampled
too: on a shared machine it says how much of the two cores the command really had.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

SAMPLE_EVERY_S = 0.2


@dataclass
class Measured:
    exit_code: int
    started_at: float  # epoch seconds, to line the command's own log up with its start
    wall_s: float
    peak_rss_bytes: int
    mean_load: float  # 1-minute load average, averaged over the run


def tree_rss(root: psutil.Process) -> int:
    total = 0
    for proc in (root, *root.children(recursive=True)):
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total


def run(command: list[str], log: Path, env: dict[str, str], timeout_s: float) -> Measured:
    """Run ``command`` with its output in ``log``; the whole tree is killed if it overstays ``timeout_s``."""
    with log.open("w") as out:
        started_at, started = time.time(), time.monotonic()
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        root, peak, loads = psutil.Process(proc.pid), 0, [os.getloadavg()[0]]
        try:
            while proc.poll() is None:
                try:
                    peak = max(peak, tree_rss(root))
                except psutil.NoSuchProcess:
                    pass
                loads.append(os.getloadavg()[0])
                if time.monotonic() - started > timeout_s:
                    raise TimeoutError(f"{command[0]} ran over {timeout_s:.0f} s; see {log}")
                time.sleep(SAMPLE_EVERY_S)
        finally:
            if proc.poll() is None:
                for child in root.children(recursive=True):
                    child.kill()
                proc.kill()
                proc.wait()
    return Measured(proc.returncode, started_at, time.monotonic() - started, peak, statistics.fmean(loads))
