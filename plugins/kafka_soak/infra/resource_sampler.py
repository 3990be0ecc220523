"""The run's resource sampler: a process of its own, from provision to release, that samples every process the run
registered (``<run_dir>/processes/``: brokers, app instances, the generator, meters, and itself; the app's
containers on an engine of this machine, whose processes are this machine's) and the supervisor of each, every few
seconds, into ``resources/`` (``shared/resources.py`` says what the files hold).

Each sample is one process tree (a team's app may be a script that starts its JVM): resident memory, threads and open
file descriptors summed over it, CPU in cores since the last sample, and the heap after the last collection of a JVM
in it (from the GC log the run's JVMs write, ``resources.gc_option``). psutil reads what the kernel keeps; nothing is
attached to a JVM. The run directory's size and each broker's data size are taken every ``DISK_EVERY`` samples.
Light to import (the standard library, psutil and the local runtime, no Airflow): it runs for the whole run beside
the app.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from kafka_soak.infra.runtime.local import LocalProcesses, python_command
from kafka_soak.infra.runtime.registry import ProcessRecord, Registry
from kafka_soak.shared import resources, rundir

NAME = "resource-sampler"
DISK_EVERY = 6  # samples between two measures of the run directory's size (a walk of its files)


def start(run_dir: Path, interval_s: float) -> None:
    """Start the run's sampler (provision), unless it runs already (a retried provision)."""
    processes = LocalProcesses(run_dir)
    if not processes.is_alive(NAME):
        processes.start(NAME, python_command(__name__, str(run_dir), "--interval", str(interval_s)),
                        run_dir / rundir.LOGS / f"{NAME}.log")


def stop(run_dir: Path) -> None:
    """Stop it (release): its last sample is taken as it stops."""
    LocalProcesses(run_dir).stop(NAME, timeout=10)


def tree(record_pid: int, started: float, children_of: dict[int, list[int]] | None) -> list[psutil.Process]:
    """The process a record names, if it is still that one (same start time), and its descendants from
    ``children_of`` (the machine's processes by parent, listed once a sample); None: the process alone."""
    try:
        root = psutil.Process(record_pid)
        if abs(root.create_time() - started) > 1.0 or not running(root):
            return []  # another process on a recycled PID, or one that ended and holds nothing any more
    except psutil.Error:
        return []
    procs, pending = [root], list((children_of or {}).get(record_pid, ()))
    while pending:
        pid = pending.pop()
        pending.extend(children_of.get(pid, ()))
        try:
            procs.append(psutil.Process(pid))
        except psutil.Error:  # ended since the listing
            continue
    return list(filter(running, procs))


def running(proc: psutil.Process) -> bool:
    """Not ended: a zombie holds nothing, and a child may end while its tree is listed."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Sampler:
    """Samples of one run directory; keeps what a sample needs from the previous one (CPU times, GC logs read)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir, self.registry = run_dir, Registry(run_dir)
        self.out = run_dir / resources.DIR
        self.out.mkdir(parents=True, exist_ok=True)
        self.cpu: dict[tuple[int, float], tuple[float, float]] = {}  # life -> (at, CPU seconds)
        self.gc_read: dict[int, int] = {}  # pid -> bytes of its GC log read
        self.heap: dict[int, float] = {}  # pid -> heap after its last collection, MB
        self.count = 0

    def records(self) -> list[ProcessRecord]:
        """The run's local processes, and its containers whose processes are this machine's (``create_time`` set: an
        engine of this machine; a remote engine's are not this machine's to read)."""
        records = [self.registry.record(name) for name in self.registry.names(containers=False)]
        containers = [self.registry.record(name) for name in self.registry.names(containers=True)]
        return [r for r in records if r is not None] + [r for r in containers if r is not None and r.create_time]

    def sample_once(self, now: float) -> None:
        children_of: dict[int, list[int]] = {}  # one listing of the machine's processes for every tree of the sample
        for proc in psutil.process_iter(["ppid"]):
            children_of.setdefault(proc.info["ppid"], []).append(proc.pid)
        lines = []
        for record in self.records():
            lines.append(self.sample(record.name, record.pid, record.create_time, now, children_of))
            if record.supervisor:
                try:
                    started = psutil.Process(record.supervisor).create_time()
                except psutil.Error:
                    continue
                lines.append(self.sample(record.name + resources.SUPERVISOR, record.supervisor, started, now, None))
        for line in filter(None, lines):
            rundir.append_jsonl(self.out / resources.SAMPLES, line)
        if self.count % DISK_EVERY == 0:
            rundir.append_jsonl(self.out / resources.DISK, {"at": now, **self.disk()})
        self.count += 1

    def sample(self, name: str, pid: int, started: float, now: float,
               children_of: dict[int, list[int]] | None) -> dict[str, Any] | None:
        """One process's tree (``tree``), summed; None when it is gone. A tree's CPU counts the children its members
        reaped (a descendant's time moves there when it ends, and the tree's sum goes on); a process sampled alone
        (``children_of`` None: a supervisor) counts its own only: the process it supervises is sampled on its own,
        and its whole life's CPU, added to the supervisor's once reaped, made one sample say 24 cores."""
        procs = tree(pid, started, children_of)
        totals = {"rss": 0, "threads": 0, "fds": 0, "cpu": 0.0}
        for proc in procs:
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    totals["rss"] += proc.memory_info().rss
                    totals["threads"] += proc.num_threads()
                    totals["fds"] += proc.num_fds()
                    totals["cpu"] += times.user + times.system
                    if children_of is not None:
                        totals["cpu"] += times.children_user + times.children_system
            except psutil.Error:  # gone between the listing and now: the rest of the tree still counts
                continue
        if not procs:
            return None
        life = (pid, started)
        before = self.cpu.get(life)
        self.cpu[life] = (now, totals["cpu"])
        heaps = [h for proc in procs if (h := self.read_heap(proc.pid)) is not None]
        return {"at": round(now, 3), "process": name, "pid": pid, "started": started,
                "rss_mb": round(totals["rss"] / 2**20, 1), "threads": totals["threads"], "fds": totals["fds"],
                "cpu": round((totals["cpu"] - before[1]) / (now - before[0]), 3) if before and now > before[0] else None,
                "heap_mb": sum(heaps) if heaps else None}

    def read_heap(self, pid: int) -> float | None:
        """The heap after the last collection of JVM ``pid``, from what its GC log gained since the last sample."""
        path = self.out / resources.GC / f"{pid}.log"
        try:
            with path.open("rb") as fh:
                fh.seek(self.gc_read.get(pid, 0))
                new = fh.read()
        except OSError:
            return self.heap.get(pid)
        complete = new[:new.rfind(b"\n") + 1]  # a line still being written is read next time
        self.gc_read[pid] = self.gc_read.get(pid, 0) + len(complete)
        after = resources.heap_after_gc(complete.decode(errors="replace").splitlines())
        if after is not None:
            self.heap[pid] = after
        return self.heap.get(pid)

    def disk(self) -> dict[str, float]:
        """The run directory's size and each broker's data directory's, in MB."""
        sizes = {"run_dir_mb": size_mb(self.run_dir)}
        for node in sorted((self.run_dir / "kafka").glob("node-*")):  # local_kafka's: a node's config and data
            sizes[f"broker-{node.name.removeprefix('node-')}_mb"] = size_mb(node)
        return sizes


def size_mb(path: Path) -> float:
    """The disk space the files under ``path`` take (what a broker preallocates and never writes is not counted)."""
    total, pending = 0, [path]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(Path(entry.path))
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_blocks * 512  # used: Kafka's indexes are sparse
                    except OSError:  # a segment deleted while the walk passed it
                        continue
        except OSError:
            continue
    return round(total / 2**20, 2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--interval", type=float, required=True)
    args = parser.parse_args(argv)
    stopping = []

    def stop(_signum: int, _frame: FrameType | None) -> None:
        stopping.append(True)

    signal.signal(signal.SIGTERM, stop)
    sampler = Sampler(args.run_dir)
    next_at = time.monotonic()
    while not stopping:
        sampler.sample_once(time.time())
        next_at += args.interval
        while not stopping and (left := next_at - time.monotonic()) > 0:
            time.sleep(min(left, 0.5))  # a stop is answered within half a second
    sampler.sample_once(time.time())  # the last one: what the run's processes held at its end


if __name__ == "__main__":
    main()
