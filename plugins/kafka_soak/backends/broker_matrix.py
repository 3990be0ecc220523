"""The broker version matrix (param ``kafka_versions``): the same app, load and program on a cluster of each Apache
Kafka release, side by side in one DAG run, with a verdict each: the fan-out (each member's work at once); the
matrix's verdict, its members' combined, is the checker's (``checker.matrix``).

Each release is a member with a run directory of its own, ``brokers/<version>/``, laid out as a run of one cluster
(its cluster, generator, instances, drain, app health, verdict, Data Docs and report), so every module that works on
a run directory works on a member's as it is. The run's own directory keeps what the members share: the params, the
program (one T0; each step is claimed once and applied to every member at the same moment) and the verdict that
combines theirs. Each member has its own generator with the run's seed, so each cluster gets the same input. A run of
one cluster is a matrix of one member whose directory is the run's own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kafka_soak.shared import rundir

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class ClusterMember:
    name: str  # the Apache Kafka release; "" for a run's only cluster
    dir: Path  # its run directory
    plan: Plan  # the run's plan, with ``kafka_version`` its release

    def cluster(self, provisioned: dict[str, Any]) -> dict[str, Any]:
        """Its part of ``provision``'s output (a run's only cluster is the whole of it)."""
        return provisioned["members"][self.name] if self.name else provisioned

    @property
    def label(self) -> str:
        return f"Apache Kafka {self.name}"


def members(run_dir: Path, plan: Plan) -> list[ClusterMember]:
    """The clusters a run judges, each with its directory and plan."""
    versions = plan.get("kafka_versions") or []
    if not versions:
        return [ClusterMember("", run_dir, plan)]
    return [ClusterMember(v, run_dir / rundir.BROKERS / v, {**plan, "kafka_version": v, "kafka_versions": []})
            for v in versions]


def member_dirs(run_dir: Path) -> list[Path]:
    """The members' directories a run left (none for a run of one cluster), for what reads a run back from its files."""
    brokers = run_dir / rundir.BROKERS
    return sorted(p for p in brokers.iterdir() if p.is_dir()) if brokers.is_dir() else []


_working_on = threading.local()  # the member a thread of ``each`` works on


class _MemberPrefix(logging.Filter):
    """Starts each log line of a member's thread with its release, so a person can follow each cluster's account in
    the task's one log."""

    def filter(self, record: logging.LogRecord) -> bool:
        name = getattr(_working_on, "name", "")
        if name and isinstance(record.msg, str) and not getattr(record, "soak_member", ""):  # not a structlog event
            record.msg, record.soak_member = f"[Apache Kafka {name}] {record.msg}", name
        return True


def carry(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` as another thread runs it for the caller, keeping the member the caller works on (its log lines keep
    their release)."""
    name = getattr(_working_on, "name", "")

    def run(*args: Any, **kwargs: Any) -> T:
        _working_on.name = name
        return fn(*args, **kwargs)
    return run


class MemberFailed(RuntimeError):
    """A task's work failed on some members of a matrix; the others' results are in ``results``."""

    def __init__(self, failures: dict[str, Exception], results: dict[str, Any]) -> None:
        super().__init__("; ".join(f"Apache Kafka {name}: {exc}" for name, exc in failures.items()))
        self.failures, self.results = failures, results


MEMBER_FAILED = "member_failed"  # events.jsonl of a member: a task's work failed on its cluster alone


def each(all_members: list[ClusterMember], body: Callable[[ClusterMember], T], alone: str = "") -> dict[str, T]:
    """``body`` of every member, all at once (each waits on its own cluster, app and clock, and the program's steps
    must reach every cluster at the same moment); its results by member. A run's only member is done in the caller's
    thread, its exceptions unchanged. In a matrix, every member runs to its end before ``MemberFailed`` names those
    that failed; unless the work may fail on a cluster ``alone`` (its name: "the drain", "step 3"), which is then
    noted in that member's evidence (``failed_alone``: its verdict says so) while the others go on, and only a failure
    on every cluster fails the task."""
    if len(all_members) == 1 and not all_members[0].name:
        return {"": body(all_members[0])}

    def on(member: ClusterMember) -> T:
        _working_on.name = member.name
        return body(member)

    prefix = _MemberPrefix()
    handlers = logging.getLogger().handlers
    for handler in handlers:
        handler.addFilter(prefix)
    try:
        with ThreadPoolExecutor(max_workers=len(all_members), thread_name_prefix="kafka") as pool:
            futures = {m.name: pool.submit(on, m) for m in all_members}
    finally:
        for handler in handlers:
            handler.removeFilter(prefix)
    results, failures = {}, {}
    for name, future in futures.items():
        try:
            results[name] = future.result()
        except Exception as exc:
            log.error("Apache Kafka %s: %s: %s", name, type(exc).__name__, exc)
            failures[name] = exc
    if failures and alone and results:
        for member in (m for m in all_members if m.name in failures):
            rundir.journal(member.dir, MEMBER_FAILED, what=alone, error=f"{type(failures[member.name]).__name__}: "
                                                                      f"{failures[member.name]}"[:1000])
        log.error("%s failed on Apache Kafka %s alone: the other clusters go on, and its verdict says so", alone,
                  ", ".join(failures))
    elif failures:
        raise MemberFailed(failures, results)
    return results


def single_or_all(results: dict[str, T]) -> T | dict[str, T]:
    """A task's XCom: a run of one cluster's result as it is, a matrix's by release."""
    return results[""] if "" in results else results


def on_each(run_dir: Path, plan: Plan, body: Callable[[ClusterMember], T], alone: str = "") -> T | dict[str, T]:
    """A task's work (``body``) on the run's cluster, or on every cluster of a matrix at once (``each``, which may let
    it fail on a cluster ``alone``); its XCom as ``single_or_all`` gives it."""
    return single_or_all(each(members(run_dir, plan), body, alone))
