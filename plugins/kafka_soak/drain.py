"""Drain: after the program and the generator, wait until the app has committed everything it consumed.

Kafka's system-test verifier does the same before it judges: the group's committed offsets reach the
end of the input. Offsets sent to a transaction become committed only when that transaction commits,
so zero lag also means no transaction over the input is still open. A drain that times out says why: the
lag per partition and whether it moved, the group's members and what each owns, the instances running,
and the transactions still open (Kafka's ``kafka-transactions`` tool).

A drain that times out does not end the run: the checker judges what the app committed, and counts what it did
not (``unprocessed``). A partition that still lags at the end and whose committed offset has not moved for
``stall_timeout_s`` (or, in a shorter drain, during the whole wait; never less than three of the app's commit
intervals) is **stalled**: a liveness failure, reported as a result the way Jepsen reports one, not as a broken
harness. One that moved but did not finish is a backlog, which a scenario may allow (``allow_backlog``) only while the
app works it off: at each partition's pace during the drain, its rest must clear within another ``drain_timeout_s``.
An app fenced and reprocessing in a loop that commits a scrap now and then (Kafka Streams 3.8.1 under a quota processed
61 534 records to commit 1 000 of 19 200) is no backlog: its ``unprocessed`` input fails the run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends import broker_matrix, kafka_jars, registry
from kafka_soak.backends.registry import Backend
from kafka_soak.clients import subjects
from kafka_soak.clients.instances import Instances
from kafka_soak.clients.subjects import Subject
from kafka_soak.faults import kinds
from kafka_soak.faults import program as programs
from kafka_soak.infra import kafka_io
from kafka_soak.infra.connection import client_settings, settings_in_env
from kafka_soak.shared import java_client, rundir
from kafka_soak.shared.rundir import journal

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)


class DrainTimeout(RuntimeError):
    """The group still lags after the drain's time; ``lag`` per partition, the ``stalled`` partitions (``stall``'s
    records), and its ``backlog`` (``backlog``'s record: how fast it was working it off)."""

    def __init__(self, message: str, lag: dict[int, int], stalled: list[dict[str, Any]],
                 backlog: dict[str, Any]) -> None:
        super().__init__(message)
        self.lag, self.stalled, self.backlog = lag, stalled, backlog


def backlog(group: str, lag: dict[int, int], committed: dict[int, int], seconds: float) -> dict[str, Any]:
    """A group's input ``lag`` left at the drain's end per partition, and each partition's pace: the records it
    ``committed`` during the drain's ``seconds``. A group clears when its slowest partition does: ``clears_in_s`` is
    the longest any lagging partition would take at its own pace (None: one of them committed nothing), so that one
    partition with a day of work left is never hidden by the pace of the others."""
    partitions = {}
    for p, left in sorted(lag.items()):
        pace = committed.get(p, 0) / seconds if seconds > 0 else 0.0
        partitions[p] = {"lag": left, "committed": committed.get(p, 0), "records_per_s": round(pace, 3),
                         "clears_in_s": round(left / pace, 1) if pace > 0 else None if left else 0.0}
    behind = [entry["clears_in_s"] for entry in partitions.values() if entry["lag"]]
    total = sum(committed.values())
    return {"group": group, "lag": sum(lag.values()), "committed": total, "seconds": round(seconds, 1),
            "records_per_s": round(total / seconds, 3) if seconds > 0 else 0.0,
            "clears_in_s": None if None in behind else max(behind, default=0.0), "partitions": partitions}


def worked_off(entry: dict[str, Any], timeout_s: float) -> bool:
    """Whether a group was working its backlog off: at each partition's pace during the drain, every partition's rest
    clears within another drain of ``timeout_s``."""
    return entry["clears_in_s"] is not None and entry["clears_in_s"] <= timeout_s


# A healthy app commits at least once in its commit interval; its committed offsets may stand still for this many
# intervals (a transaction's commit, a rebalance) before a partition can be called stalled.
STALL_COMMIT_INTERVALS = 3


def stall_threshold_s(stall_s: float, drained_s: float, commit_interval_s: float) -> float:
    """How long a lagging partition's committed offset must have stood still to be stalled: ``stall_timeout_s``, or
    the whole drain if shorter, but never less than a few of the app's commit intervals (a slow but healthy app that
    commits once a minute is not stalled after 30 s)."""
    return max(min(stall_s, drained_s), STALL_COMMIT_INTERVALS * commit_interval_s)


def drain_run(run_dir: Path, plan: Plan, cluster: dict[str, Any]) -> dict[str, Any]:
    """Task ``drain``: ``drain_cluster`` of the run's cluster, or of every cluster of a broker version matrix at once."""
    return broker_matrix.on_each(run_dir, plan, lambda m: drain_cluster(m.dir, m.plan, m.cluster(cluster)),
                                 alone="the drain")


def drain_cluster(run_dir: Path, plan: Plan, cluster: dict[str, Any]) -> dict[str, Any]:
    """The drain of a run's cluster: bring back what the program left broken, then wait, with the grace its faults
    need, until every subject's group has committed all input. A timeout does not stop the run: the account
    (``drain.json``) says why (lag, stalled partitions, owners, open transactions), and the checker judges what the app
    committed."""
    instances = Instances.for_run(run_dir, cluster, plan)
    restored = restore_service(instances, registry.create(plan, run_dir), plan["program"])
    grace_s, grace_reason = fault_grace_s(plan["program"], subjects.stop_leaves_group(plan))
    if grace_reason:
        log.info("drain: %s", grace_reason)
    bootstrap, topic = cluster["bootstrap_servers"], cluster["topics"]["input"]
    settings = client_settings(cluster)
    outcome = {**restored, "timeout_s": plan["drain_timeout_s"] + grace_s, "grace_reason": grace_reason,
               "backlog_allowed": plan["allow_backlog"]}
    with settings_in_env(settings):
        outcome.update(drain_subjects(instances, bootstrap, topic, outcome["timeout_s"],
                                      lambda: open_transactions(plan["kafka_version"], bootstrap, settings),
                                      plan["stall_timeout_s"], commit_interval_s(plan)))
    outcome.update(conclude_faults(instances))
    if outcome["status"] == "drained":  # an app still at work keeps opening transactions: nothing to wait for
        with settings_in_env(settings):
            outcome["unsettled"] = settle_outputs(bootstrap, [t for role, t in cluster["topics"].items()
                                                              if role != "input"])
    for entry in outcome["backlogs"]:  # which group's input left is a backlog the run tolerates
        entry["allowed"] = plan["allow_backlog"] and worked_off(entry, plan["drain_timeout_s"])
    rundir.write_json(run_dir / rundir.DRAIN, outcome)
    if outcome["status"] != "drained":
        log.warning("the drain timed out; the checker judges what the app committed (%d stalled partition(s))",
                    len(outcome["stalled"]))
    return outcome


# An instance that dies inside a transaction leaves it open until its coordinator aborts it: after the transaction's
# timeout (60 s by default, 30 s for the reference worker, 10 s for Kafka Streams) at the coordinator's next look for
# timed-out transactions (every 10 s by default).
SETTLE_TIMEOUT_S = 90.0


def settle_outputs(bootstrap: str, topics: list[str], timeout_s: float = SETTLE_TIMEOUT_S,
                   poll_s: float = 1.0) -> dict[str, dict[int, list[int]]]:
    """Wait until no transaction is open over the topics the app writes, so that the checker's read_committed reads
    see every committed output. An instance that died after writing outputs but before sending its offsets leaves no
    input lag behind, but its transaction stays open until its coordinator aborts it, and every later commit on those
    partitions stays invisible until then: judged at once, those outputs counted as lost. Returns, per topic, the
    partitions still open after ``timeout_s`` as ``[last stable offset, end]`` (a hanging transaction); empty when
    every one settled."""
    started, report_at = time.monotonic(), 0.0
    while True:
        unsettled = {topic: {p: list(ends) for p, ends in found.items()}
                     for topic in topics if (found := kafka_io.open_ends(bootstrap, topic))}
        waited = time.monotonic() - started
        if not unsettled:
            if report_at:
                log.info("drain: every transaction over the outputs was decided after %.0f s", waited)
            return {}
        if waited >= timeout_s:
            log.warning("drain: transactions are still open over %s after %.0f s (hanging): the checker sees no output "
                        "of those partitions past their last stable offset", unsettled, waited)
            return unsettled
        if waited >= report_at:
            report_at = waited + 10
            log.info("drain: waiting for open transactions over the outputs to be decided (an instance that died "
                     "inside one leaves it to its coordinator's timeout): %s", unsettled)
        time.sleep(poll_s)


def commit_interval_s(plan: Plan) -> float:
    """How often the app under test commits: the reference apps' ``commit_interval_ms``, or the longest interval a
    profile's ``client_properties`` sets (Kafka Streams' commit.interval.ms, a consumer's auto.commit.interval.ms)."""
    own = subjects.profile(plan).client_properties
    given = [own[k] for k in ("commit.interval.ms", "auto.commit.interval.ms") if isinstance(own.get(k), (int, float))]
    return max([plan["commit_interval_ms"], *given]) / 1000


def stall(group: str, partition: int, position: int, end: int, since: float, facts: dict[str, Any]) -> dict[str, Any]:
    """What drain.json and the checker say of a stalled partition: its group, committed offset and end, since when at
    least it has not moved (the first poll of the drain that saw it there), which member owned it and which instances
    ran."""
    owner = next((m["client_id"] for m in facts.get("members") or [] if partition in m["partitions"]), None)
    return {"group": group, "partition": partition, "committed": position, "end": end, "lag": end - position,
            "since": round(since, 3), "owner": owner, "running": facts.get("running")}


def restore_service(instances: Instances, kafka: Backend, program: list[str]) -> dict[str, list[int]]:
    """Undo what the program left broken so the app can catch up, as each fault kind undoes its own (brokers down come
    up, paused instances resume), the cluster's first; then instance 1 starts when none runs. Returns what was done."""
    left = programs.left(program)
    done: dict[str, list[int]] = {}
    for kind in reversed(kinds.KINDS):
        done.update(kind.restore(left, instances, kafka))
    done["started"] = []
    for subject in instances.subjects:
        if keep_one_running(instances.only(subject)):
            done["started"].append(1)
    return done


def conclude_faults(instances: Instances) -> dict[str, list[int]]:
    """What each fault kind does once the app caught up or the drain ended (``FaultKind``'s optional ``conclude``)."""
    done: dict[str, list[int]] = {}
    for kind in kinds.KINDS:
        if conclude := getattr(kind, "conclude", None):
            done.update(conclude(instances))
    return done


def keep_one_running(instances: Instances) -> bool:
    """An instance that exited during the drain (a crash, a stuck-transaction exit) is replaced by instance 1.
    Returns whether one had to be started."""
    if instances.running():
        return False
    log.warning("no instance is running: starting instance 1 to finish the drain")
    instances.start(1, "drain")
    return True


# What each fault makes the app's group wait for (each kind's ``grace``), by the action of its steps.
FAULT_GRACE_S = {action: grace for kind in kinds.KINDS for action, grace in kind.grace.items()}
# A Kafka Streams instance that closes does not leave its group: its partitions wait for its session to time out.
STREAMS_CLOSE_GRACE_S = 45.0


def fault_grace_s(program: list[str], stop_leaves_group: bool = True) -> tuple[float, str]:
    """Extra seconds the drain grants a program with faults, and why (empty without faults). A Kafka Streams
    instance does not leave its group when it closes (``stop_leaves_group=False``), so there a graceful stop (of a
    toggle or an upgrade) holds its partitions for a session timeout as a kill does."""
    actions = {s.action for s in programs.schedule(program)}
    faults = sorted(actions & set(FAULT_GRACE_S))
    waits = [f"the program has {', '.join(faults)}: a dead or paused member keeps its partitions until its session "
             "times out and its open transaction until it is aborted"] if faults else []
    grace = max((FAULT_GRACE_S[f] for f in faults), default=0.0)
    if not stop_leaves_group and actions & {"stop", "upgrade"}:  # an upgrade stops the instance too
        grace = max(grace, STREAMS_CLOSE_GRACE_S)
        waits.append("a Kafka Streams instance that closes does not leave its group, so its partitions wait for its "
                     "session to time out")
    if not waits:
        return 0.0, ""
    return grace, f"{'; '.join(waits)}: the drain waits up to {grace:.0f} s longer than drain_timeout_s"


def wait_for_zero_lag(bootstrap: str, group: str, topic: str, timeout_s: float, poll_s: float = 2.0,
                      settle_polls: int = 2, confirm_s: float = 0.5, instances: Instances | None = None,
                      diagnose: Callable[[dict[int, int], bool], dict[str, Any]] | None = None,
                      stall_s: float = 120.0, commit_interval_s: float = 0.0) -> float:
    """Block until the group's lag on ``topic``, and on every other topic it consumes (``kafka_io.internal_lag``), is 0
    for ``settle_polls`` polls in a row, those after the first zero ``confirm_s`` apart (the input is whole by then:
    they only rule out a zero of a moment, and every run waits them); returns seconds waited. With ``instances``, one
    instance is kept running meanwhile. On timeout, ``diagnose(lag, moved)`` says why, and the lagging partitions whose
    committed offset has not moved for ``stall_threshold_s`` are stalled."""
    started, began = time.monotonic(), None
    zero_streak = 0
    first_lag = last_lag = None
    still: dict[int, tuple[int, float]] = {}  # per partition: its committed position, and since when it is there
    first: dict[int, int] = {}  # per partition: its committed position at the drain's first look
    while True:
        if instances is not None:
            keep_one_running(instances)
        positions = kafka_io.group_positions(bootstrap, group, topic)
        now = time.time()
        began = began or now  # the drain's first look
        still = {p: still[p] if p in still and still[p][0] == position else (position, now)
                 for p, (position, _end) in positions.items()}
        first = first or {p: position for p, (position, _end) in positions.items()}
        lag = {p: max(0, end - position) for p, (position, end) in positions.items()}
        internal = {name: n for name, n in kafka_io.internal_lag(bootstrap, group, topic).items() if n}
        total = sum(lag.values()) + sum(internal.values())
        waited = time.monotonic() - started
        rate = "" if last_lag is None else f", {(last_lag - total) / poll_s:.0f} records/s"
        log.info("drain: %s lag %d records%s (%s%s); %.0f s left", group, total, rate, lagging(lag),
                 "".join(f", {name}={n}" for name, n in sorted(internal.items())), max(0.0, timeout_s - waited))
        if instances is not None:
            journal(instances.run_dir, "lag", lag=total, source="drain")
        first_lag = lag if first_lag is None else first_lag
        last_lag = total
        zero_streak = zero_streak + 1 if total == 0 else 0
        if zero_streak >= settle_polls:
            return waited
        if waited > timeout_s:
            moved = lag != first_lag
            facts = diagnose(lag, moved) if diagnose else {}
            threshold = stall_threshold_s(stall_s, now - began, commit_interval_s)
            stalled = [stall(group, p, *positions[p], still[p][1], facts)
                       for p in stalled_partitions(positions, still, now, threshold)]
            left = backlog(group, lag, {p: position - first.get(p, position) for p, (position, _end) in positions.items()},
                           now - began)
            raise DrainTimeout(timeout_report(group, topic, timeout_s, lag, moved, {**facts, "internal": internal},
                                       [s["partition"] for s in stalled], left), lag, stalled, left)
        time.sleep(confirm_s if zero_streak else poll_s)


def stalled_partitions(positions: dict[int, tuple[int, int]], still: dict[int, tuple[int, float]], now: float,
                       threshold_s: float) -> list[int]:
    """The partitions that lag (``positions``: committed position and end) and whose position has been the same for
    ``threshold_s`` (``still``: since when each has been where it is)."""
    return [p for p, (position, end) in sorted(positions.items()) if end > position and now - still[p][1] >= threshold_s]


def lagging(lag: dict[int, int]) -> str:
    """The partitions that lag (all of them are named only when none does)."""
    behind = {p: n for p, n in sorted(lag.items()) if n}
    if not behind:
        return f"all {len(lag)} partitions at 0"
    rest = len(lag) - len(behind)
    return ", ".join(f"p{p}={n}" for p, n in behind.items()) + (f"; the other {rest} at 0" if rest else "")


def drain_subjects(instances: Instances, bootstrap: str, topic: str, timeout_s: float,
                   transactions: Callable[[], list[dict[str, Any]]], stall_s: float,
                   commit_interval_s: float = 0.0) -> dict[str, Any]:
    """``wait_for_zero_lag`` for the group of every subject (one per version or control of a matrix) side by side, so
    each has the whole drain to catch up and to show a stall. Returns drain.json's account: ``drained`` or ``timed
    out`` (every group still lagging named in the ``summary``, with its ``stalled`` partitions and its ``backlogs``'
    pace), and the seconds waited."""
    started = time.monotonic()

    def drain(subject: Subject) -> None:
        view = instances.only(subject)

        def why(lag: dict[int, int], moved: bool) -> dict[str, Any]:
            return diagnose(bootstrap, subject.app_id, topic, view, transactions)

        wait_for_zero_lag(bootstrap, subject.app_id, topic, timeout_s, instances=view, diagnose=why, stall_s=stall_s,
                          commit_interval_s=commit_interval_s)

    with ThreadPoolExecutor(len(instances.subjects), thread_name_prefix="drain") as pool:
        waits = [(subject, pool.submit(broker_matrix.carry(drain), subject)) for subject in instances.subjects]
    summaries: list[str] = []
    stalled: list[dict[str, Any]] = []
    backlogs: list[dict[str, Any]] = []
    for subject, wait in waits:
        try:
            wait.result()
        except DrainTimeout as exc:
            log.warning("%s", exc)
            summaries.append(f"{subject.name} (group {subject.app_id}): {exc}" if subject.name else str(exc))
            stalled += exc.stalled
            backlogs.append(exc.backlog)
    waited = {"waited_s": round(time.monotonic() - started, 1), "stalled": stalled, "backlogs": backlogs}
    return {"status": "timed out", "summary": "\n".join(summaries), **waited} if summaries else \
        {"status": "drained", **waited}


def timeout_report(group: str, topic: str, timeout_s: float, lag: dict[int, int], moved: bool, facts: dict[str, Any],
            stalled: list[int], left: dict[str, Any]) -> str:
    """The drain timeout in words: lag per partition, whether it moved, which partitions stalled, the pace of the
    backlog, who owned what, which transactions are open."""
    lines = [f"drain timed out: the app's group {group!r} still lags {sum(lag.values())} records on {topic} after "
             f"{timeout_s:.0f} s (param drain_timeout_s); the lag {'moved' if moved else 'did not move'} during the "
             f"wait; per partition: " + lagging(lag)]
    if stalled:
        lines.append(f"stalled: partition(s) {', '.join(map(str, stalled))} of {topic}: their committed offset has not "
                     "moved for the drain's stall time (stall_timeout_s) while records remained")
    if left["lag"]:
        lines.append(f"backlog: the group committed {left['committed']} input records in the drain's {left['seconds']:.0f} "
                     f"s ({left['records_per_s']:g} records/s): " + (
                         f"the rest would take {left['clears_in_s']:.0f} s at that pace" if left["clears_in_s"] is not None
                         else "at that pace the rest never clears"))
    if facts.get("internal"):
        lines.append("and on the topics it writes and reads back: "
                     + ", ".join(f"{name}={n}" for name, n in sorted(facts["internal"].items())))
    members = facts.get("members")
    if members is not None:
        lines.append("group members: " + ("; ".join(f"{m['client_id']} owns {m['partitions'] or 'nothing'}"
                                                    for m in members) or "none (no instance is in the group)"))
    if facts.get("running") is not None:
        lines.append(f"instances running: {facts['running'] or 'none'}")
    transactions = facts.get("open_transactions")
    if transactions is not None:
        lines.append("open transactions: " + ("; ".join(f"{t['transactional_id']} ({t['state']})"
                                                        for t in transactions) or "none"))
    for problem in facts.get("unknown", []):
        lines.append(f"(could not tell: {problem})")
    return "\n".join(lines)


def diagnose(bootstrap: str, group: str, topic: str, instances: Instances | None,
             open_transactions: Callable[[], list[dict[str, Any]]] | None) -> dict[str, Any]:
    """Who is in the group and what it owns, which instances run, which transactions are open."""
    facts: dict[str, Any] = {"unknown": []}
    try:
        facts["members"] = kafka_io.group_members(bootstrap, group, topic)
    except Exception as exc:  # the facts are for a person; one that cannot be had is said, not raised
        facts["unknown"].append(f"the group's members: {exc}")
    if instances is not None:
        facts["running"] = instances.running()
    if open_transactions is not None:
        try:
            facts["open_transactions"] = open_transactions()
        except Exception as exc:
            facts["unknown"].append(f"open transactions: {exc}")
    return facts


# kafka-transactions list: "TransactionalId Coordinator ProducerId TransactionState" (header, then a row each)
OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


def open_transactions(version: str, bootstrap: str, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """Transactions the cluster holds open now, from Kafka's own ``kafka-transactions list`` (confluent-kafka has
    no ListTransactions); a secured cluster's settings reach the tool on its standard input."""
    args = ["--bootstrap-server", bootstrap, *(["--command-config", kafka_jars.STDIN_CONFIG] if settings else []), "list"]
    output = kafka_jars.run_tool(version, kafka_jars.TRANSACTIONS_COMMAND, args,
                                 stdin=java_client.tool_config(settings) if settings else None)
    rows = [line.split() for line in output.splitlines() if line.strip()]
    if not rows or rows[0][0] != "TransactionalId":
        return []
    header = rows[0]
    found = [dict(zip(header, row, strict=False)) for row in rows[1:]]
    return [{"transactional_id": row["TransactionalId"], "state": row.get("TransactionState", "?"),
             "producer_id": row.get("ProducerId")} for row in found if row.get("TransactionState") in OPEN_STATES]
