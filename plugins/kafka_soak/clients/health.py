"""App health: how each instance ended and what it logged, judged against what the program asked of it.

A data anomaly says what went wrong; app health says what the app went through on the way: every exit of an
instance (exit code or signal, and whether the program or the teardown asked for it), how often each instance
started, and the exceptions it logged, counted by class, each with its first occurrence and stack trace.
Kafka Streams' own troubles show up here (TaskCorruptedException, TaskMigratedException,
ProducerFencedException, InvalidProducerEpochException, TimeoutException, stream thread deaths), the
reference worker's errors likewise.

``health.json`` is written by the ``stop_instances`` teardown; the checker turns its ``incidents`` (unexpected
exits, stream thread deaths and error-level log events, except those made only of exceptions Kafka Streams
recovers from by design and a client's moot failure to leave a group it was already removed from) into anomaly
``app_health``, which fails the run beyond param ``health_allowance``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_soak.infra.runtime.registry import Registry
from kafka_soak.shared import rundir

# Where a log line begins an event: a date and time to the millisecond, as ISO 8601 (``2026-11-23T08:40:03.018+0000``,
# logback's and log4j's ``%d{ISO8601}``), Python logging's ``asctime`` (``2026-11-23 08:40:03,018``) or Kafka's own
# log4j layout (``[2026-11-23 08:40:03,018] INFO ...``, which Kafka Streams apps often keep); finer digits and an offset
# (``Z``, ``+0000``, ``+00:00``) may follow. A line that begins otherwise continues the event before it.
EVENT_START = re.compile(r"^\[?(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})[.,](\d{3})\d*([^\s\]]*)\]?")
LEVEL = re.compile(r"\b(WARN|WARNING|ERROR|FATAL)\b")
# A Java class in a message or a stack trace (``org.apache.kafka.streams.errors.TaskCorruptedException``), or the
# last line of a Python traceback (``confluent_kafka.KafkaException: ...``).
JAVA_CLASS = re.compile(r"\b(?:[a-z_][\w$]*\.)+([A-Z][\w$]*(?:Exception|Error))\b")
PYTHON_RAISED = re.compile(r"^(?:[\w.]+\.)?([A-Z]\w*(?:Exception|Error))(?::|$)")
THREAD_DEATH = re.compile(r"stream thread \S+ died")
# An instance's first work, where the warm-up of anomaly resource_growth begins (a JVM that takes a minute to join its
# group and restore its state is still starting): Kafka Streams' own state log line, which every Kafka Streams app
# writes at INFO (``stream-client [...] State transition from REBALANCING to RUNNING``), and the reference worker's
# first assignment; a team's app says its own line (its profile's ``ready``). An app that writes none warms up from its
# start.
READY = re.compile(r"State transition from \S+ to RUNNING|\] assigned partitions \[")
SELF_CHECK = "!!! BROKEN !!!"  # the app's self-check: a data anomaly (stale_state), not a health one
# Exceptions Kafka Streams handles itself under EOS, though it logs them at ERROR: a fenced producer (the thread's
# tasks migrate and it rejoins the group), the sends of the transaction it then aborts, and corrupted tasks (state
# wiped and restored). They are counted, and shown with their first trace, but an error-level event made only of
# them is not an incident.
RECOVERED_BY_STREAMS = frozenset({"TaskMigratedException", "InvalidProducerEpochException", "ProducerFencedException",
                                  "TransactionAbortedException", "TaskCorruptedException"})
# Error-level lines of Kafka's clients that say nothing went wrong for the app: a member whose session ended while it
# was paused or stalled, already removed from its group, failing to leave it as it rejoins (UNKNOWN_MEMBER_ID); a task
# whose commit at a revocation failed because its producer was fenced (a network cut past the transaction timeout),
# which Kafka Streams then closes dirty, as it does a task of a fenced producer (TaskManager.closeAndRecycleTasks).
MOOT = re.compile(r"LeaveGroup request .* failed with error: The coordinator is not aware of this member|"
                  r"should have been committed when it was suspended, but it reports non-empty offsets")
# A send that failed in a way Kafka Streams handles as a fenced producer, in its own words (RecordCollectorImpl: a
# ProducerFencedException, InvalidProducerEpochException or OutOfOrderSequenceException, the last seen 27 s after a
# 30 s network cut of an instance, longer than its transaction's timeout): it migrates the task and rejoins.
MIGRATED = re.compile(r"no more records would be sent since the producer is fenced, indicating the task may be "
                      r"migrated out")
TRACE_LINES = 30


@dataclass
class LogEvent:
    at: float
    level: str
    lines: list[str] = field(default_factory=list)

    @property
    def classes(self) -> list[str]:
        found = dict.fromkeys(m for line in self.lines for m in JAVA_CLASS.findall(line))
        found.update(dict.fromkeys(m[1] for line in self.lines[1:] if (m := PYTHON_RAISED.match(line.strip()))))
        return list(found)


def timestamp(match: re.Match[str]) -> float:
    """A log line's time: the Kafka Streams app writes an offset, the Python worker local time."""
    stamp = dt.datetime.fromisoformat(f"{match[1]}T{match[2]}.{match[3]}")
    offset = match[4]
    if offset:
        try:
            stamp = stamp.replace(tzinfo=dt.datetime.strptime(offset, "%z").tzinfo)
        except ValueError:
            pass
    return stamp.timestamp()


def log_events(path: Path) -> Iterator[LogEvent]:
    """Warning- and error-level events of an instance log, each with its continuation lines (stack trace)."""
    event: LogEvent | None = None
    with path.open(errors="replace") as lines:
        for line in lines:
            start = EVENT_START.match(line)
            if start:
                if event is not None:
                    yield event
                level = LEVEL.search(line[start.end():start.end() + 120])
                event = LogEvent(timestamp(start), level[1].replace("WARNING", "WARN")) if level else None
            if event is not None:
                event.lines.append(line.rstrip("\n"))
    if event is not None:
        yield event


def at_work(ready: str) -> re.Pattern[str]:
    """What says in an app's log that an instance got to work: its profile's ``ready`` (text the line holds), else
    ``READY``."""
    return re.compile(re.escape(ready)) if ready else READY


def ready_lines(path: Path, ready: re.Pattern[str] = READY) -> Iterator[float]:
    """The times of an instance log's lines that say it got to work (``ready``)."""
    with path.open(errors="replace") as lines:
        for line in lines:
            if (start := EVENT_START.match(line)) and ready.search(line, start.end()):
                yield timestamp(start)


def readiness(run_dir: Path, starts: list[dict[str, Any]], ready: re.Pattern[str] = READY) -> dict[str, float]:
    """When each life of an instance (by pid, its ``start``/``restart`` event) first got to work: the first ``ready``
    line of its log after it started and before the next life in that log began; a life without one is left out."""
    found: dict[str, float] = {}
    by_log: dict[str, list[dict[str, Any]]] = {}
    for start in sorted(starts, key=lambda e: e["t"]):
        by_log.setdefault(start["log"], []).append(start)
    for log, lives in by_log.items():
        path = run_dir / rundir.LOGS / log
        if not path.exists():
            continue
        for at in ready_lines(path, ready):
            life = next((s for s in reversed(lives) if s["t"] <= at), None)
            if life is not None:
                found.setdefault(str(life["pid"]), at)
    return found


def who(start: dict[str, Any]) -> str:
    """An instance as the report names it: ``2``, or ``2@3.4.0`` in a version matrix."""
    return f"{start['instance']}@{start['subject']}" if start.get("subject") else str(start["instance"])


def assess(run_dir: Path, allowance: int = 0, crash_code: int | None = None,
           ready: re.Pattern[str] = READY) -> dict[str, Any]:
    """The run's app health from the journal (``events.jsonl``), the exits its runtimes recorded and the
    instance logs. ``crash_code``: the exit code of the crashes the run injects (param crash_probability), which
    are counted but are no incident; ``ready``: the app's line that says an instance got to work (``at_work``)."""
    journal = rundir.read_jsonl(run_dir / rundir.EVENTS)
    starts = {e["pid"]: e for e in journal if e["event"] in ("start", "restart") and e.get("pid")}
    asked = {e["pid"]: e["event"] for e in journal if e["event"] in ("stop", "kill") and e.get("pid")}
    instances: dict[str, dict[str, Any]] = {}
    for e in journal:
        if e["event"] in ("start", "restart"):
            counts = instances.setdefault(who(e), {"starts": 0, "restarts": 0, "exits": []})
            counts["starts" if e["event"] == "start" else "restarts"] += 1
    incidents = []
    crashes = 0
    for ended in Registry(run_dir).exits():
        start = starts.get(ended["pid"])
        if start is None:  # a broker, the generator, a meter: not the app
            continue
        # an injected crash first: a stop of an instance waiting out its restart backoff names the crashed pid too
        by = "crash" if crash_code is not None and ended["code"] == crash_code else asked.get(ended["pid"])
        exit_ = {"instance": start["instance"], "step": start["step"], "pid": ended["pid"], "code": ended["code"],
                 "signal": ended["signal"], "at": ended["at"], "expected": by is not None,
                 "by": {"stop": "a graceful stop", "kill": "kill -9", "crash": "an injected crash (crash_probability)"
                        }.get(by or "", "nobody: it exited by itself")}
        instances[who(start)]["exits"].append(exit_)
        crashes += by == "crash"
        if by is None:
            how = f"signal {ended['signal']}" if ended["signal"] else f"exit code {ended['code']}"
            incidents.append({"kind": "unexpected_exit", "instance": start["instance"], "subject": start.get("subject", ""),
                              "at": ended["at"], "what": f"instance {who(start)} (started at step {start['step']}) "
                                                         f"exited by itself with {how}", "log": start["log"]})
    exceptions: dict[str, dict[str, Any]] = {}
    thread_deaths = 0
    for start in sorted(starts.values(), key=lambda e: e["t"]):
        path = run_dir / rundir.LOGS / start["log"]
        if not path.exists():
            continue
        for event in log_events(path):
            if SELF_CHECK in event.lines[0]:
                continue
            death = bool(THREAD_DEATH.search(event.lines[0]))
            thread_deaths += death
            for cls in event.classes:
                seen = exceptions.setdefault(cls, {"count": 0, "errors": 0, "first": None})
                seen["count"] += 1
                seen["errors"] += event.level in ("ERROR", "FATAL")
                if seen["first"] is None:
                    seen["first"] = {"at": event.at, "instance": start["instance"],
                                     "subject": start.get("subject", ""), "log": start["log"],
                                     "level": event.level, "trace": event.lines[:TRACE_LINES]}
            if event.level in ("ERROR", "FATAL") and not MOOT.search(event.lines[0]) and (
                    death or not event.classes or not set(event.classes) <= RECOVERED_BY_STREAMS) and not any(
                    MIGRATED.search(line) for line in event.lines[:TRACE_LINES]):
                incidents.append({"kind": "thread_death" if death else "error", "instance": start["instance"],
                                  "subject": start.get("subject", ""), "at": event.at, "what": event.lines[0][:300],
                                  "log": start["log"]})
    incidents.sort(key=lambda i: i["at"])
    return {"instances": instances, "exceptions": dict(sorted(exceptions.items(), key=lambda kv: -kv[1]["count"])),
            "thread_deaths": thread_deaths, "incidents": incidents, "allowance": allowance,
            "injected_crashes": crashes, "ready": readiness(run_dir, list(starts.values()), ready),
            "restarts": sum(i["restarts"] for i in instances.values()),
            "unexpected_exits": sum(i["kind"] == "unexpected_exit" for i in incidents),
            "errors": sum(i["kind"] != "unexpected_exit" for i in incidents)}


def one_line(health: dict[str, Any]) -> str:
    """One line for the task log and the alert."""
    counts = ", ".join(f"{cls} x{seen['count']}" for cls, seen in list(health["exceptions"].items())[:6])
    exits = sum(len(i["exits"]) for i in health["instances"].values())
    crashes = f", {health['injected_crashes']} injected crashes" if health.get("injected_crashes") else ""
    restarts = f", {health['restarts']} restarts" if health.get("restarts") else ""
    return (f"{exits} instance exits ({health['unexpected_exits']} unexpected{crashes}){restarts}, {health['errors']} "
            f"error incidents, {health['thread_deaths']} stream thread deaths; exceptions: {counts or 'none'}")


def merge(healths: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The app's health over the clusters of a matrix (each member's ``health.json``): every instance and incident
    named with its release, the counts added up."""
    merged: dict[str, Any] = {"instances": {}, "exceptions": {}, "incidents": [], "allowance": None}
    for name, health in healths.items():
        merged["allowance"] = health["allowance"]
        merged["instances"].update({f"{key}/{name}": value for key, value in health["instances"].items()})
        merged["incidents"].extend({**i, "what": f"Apache Kafka {name}: {i['what']}"} for i in health["incidents"])
        for cls, seen in health["exceptions"].items():
            total = merged["exceptions"].setdefault(cls, {**seen, "count": 0})
            total["count"] += seen["count"]
        for count in ("thread_deaths", "injected_crashes", "restarts", "unexpected_exits", "errors"):
            merged[count] = merged.get(count, 0) + (health.get(count) or 0)
    merged["exceptions"] = dict(sorted(merged["exceptions"].items(), key=lambda kv: -kv[1]["count"]))
    return merged
