"""What an earlier run left running is stopped by the next one.

A run's brokers, generator, meters and app instances are detached processes (they outlive the task that started
them, by design), and every one is in the run's registry (``<run>/processes``); a run whose program cuts links also
has network namespaces, links and a route, every one in its ``network.json``. An attempt that ended without its
teardowns (a DAG run cleared while it ran, a worker machine lost) still has some alive, or holds what no local process
shows (a broker container, a shared cluster's topics and quotas: its journal says it provisioned and never released
them): ``check_params`` of the next
run of the DAG runs that attempt's teardowns from its files (``teardowns.from_files``: instances stopped, Kafka
released, containers removed, a shared cluster's topics and quotas given back), then stops whatever is still alive,
and notes both in the earlier attempt's ``events.jsonl``; nothing of its evidence is deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from kafka_soak import provision, teardowns
from kafka_soak.backends import broker_matrix
from kafka_soak.infra import network
from kafka_soak.infra.runtime.local import LocalProcesses
from kafka_soak.shared import rundir
from kafka_soak.shared.rundir import journal, read_json

log = logging.getLogger(__name__)


def cluster_dirs(run_dir: Path) -> dict[str, Path]:
    """The directories of a run's clusters: its own, and each cluster's of a broker version matrix (by release)."""
    return {"": run_dir, **{d.name: d for d in broker_matrix.member_dirs(run_dir)}}


def registries(run_dir: Path) -> dict[str, LocalProcesses]:
    """The process registries of a run's clusters."""
    return {name: LocalProcesses(d) for name, d in cluster_dirs(run_dir).items()
            if (d / "processes").is_dir()}  # none: it started none


def named(thing: str, member: str) -> str:
    return f"{thing}@{member}" if member else thing


def leftovers(run_dir: Path) -> list[str]:
    """The processes a run registered that are still alive, and what is left of its network (``<name>@<release>`` in
    a broker version matrix)."""
    return [named(name, member) for member, processes in registries(run_dir).items()
            for name in processes.names() if processes.is_alive(name)] + \
        [named(thing, member) for member, d in cluster_dirs(run_dir).items() for thing in network.leftovers(d)]


def reap(run_dir: Path, why: str, timeout: float = 15.0) -> dict[str, int | None]:
    """Stop every process of the run still alive (SIGTERM, SIGKILL after ``timeout``), then remove what is left of its
    network; returns the processes' exit codes."""
    codes = {}
    for member, processes in registries(run_dir).items():
        for name in processes.names():
            if processes.is_alive(name):
                codes[named(name, member)] = processes.stop(name, timeout=timeout)
    removed = [named(thing, member) for member, d in cluster_dirs(run_dir).items() for thing in network.release(d)]
    if removed:
        log.warning("removed what was left of the network of %s: %s", run_dir.name, ", ".join(removed))
    if codes or removed:
        journal(run_dir, "reaped", processes=sorted(codes), network=removed, why=why)
    return codes


def reap_earlier(current: Path, this_run: str, is_over: Callable[[str], bool]) -> dict[str, list[str]]:
    """Tear down and reap what the other run directories of ``current``'s DAG left running: earlier attempts of the
    same DAG run (``this_run``) always, since a Clear replaced them; other DAG runs when ``is_over(run_id)`` says they
    ended. Returns ``{run directory name: instances and processes stopped}``."""
    reaped = {}
    for run_dir in sorted(p for p in current.parent.iterdir() if p.is_dir() and not p.is_symlink() and p != current):
        if not leftovers(run_dir) and not provision.unreleased(run_dir):  # a container, a shared cluster's topics
            continue
        run_id = (read_json(run_dir / rundir.PARAMS) or {}).get("run_id")
        if run_id is None or (run_id != this_run and not is_over(run_id)):
            continue
        why = f"left running when its run ended; stopped by {current.name}"
        reaped[run_dir.name] = sorted({**teardowns.from_files(run_dir, why), **reap(run_dir, why)})
        log.warning("stopped what run %s left running: %s", run_dir.name, ", ".join(reaped[run_dir.name]))
    return reaped
