"""A run directory read back as the evidence a person looks at: what was asked, what happened when, what was found.

Everything comes from the files the run left (``params.json``, ``program.json[l]``, ``events.jsonl``,
``cluster.json``, ``verdict.json``, ``timeline.json``, ``health.json``); a file a run never reached is simply absent, so the
report of a run that stopped at provisioning still shows what there is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_soak.faults import kinds
from kafka_soak.shared import resources, rundir

# What a person may want to open, in the order the report lists it; logs/, quotas/ and resources/ are added file by
# file.
EVIDENCE_FILES = (rundir.VERDICT, f"{rundir.DATA_DOCS}/index.html", rundir.PARAMS, rundir.PROGRAM, rundir.STEPS,
                  rundir.EVENTS, rundir.CLUSTER, rundir.DRAIN, rundir.HEALTH, rundir.FAILURES, rundir.QUOTAS,
                  rundir.TIMELINE, rundir.GENERATOR, rundir.DAGS_TEST_LOG)
# How the report draws each event a fault kind's steps write (``events.jsonl``) on its target's lane.
LANES = {event: lane for kind in kinds.KINDS for event, lane in kind.lanes.items()}
# The colour of each state a lane can be in, as the kind whose event opens it says.
STATE_COLORS = {lane.opens: lane.color for lane in LANES.values() if lane.opens and lane.color}


def instance_lane(record: dict[str, Any]) -> str:
    """The timeline row of the instance a record names: ``instance 2``, or ``instance 2 @3.4.0`` in a matrix."""
    return f"instance {record['instance']}" + (f" @{record['subject']}" if record.get("subject") else "")


def lane_of(event: dict[str, Any]) -> str:
    """The timeline row an event is drawn on: its instance's, or its broker's."""
    return instance_lane(event) if "instance" in event else f"broker {event.get('broker')}"


@dataclass
class Interval:
    """A lane of the timeline (``instance 2``, ``broker 1``) in one state from ``start`` to ``end`` (epoch s)."""

    lane: str
    state: str
    start: float
    end: float
    ended_by: str = ""


@dataclass
class RunEvidence:
    run_dir: Path
    dag_id: str
    run_id: str
    attempt: int = 1  # of the DAG run: each Clear is a new attempt in a directory of its own
    params: dict[str, Any] = field(default_factory=dict)  # as given
    plan: dict[str, Any] = field(default_factory=dict)  # as resolved (the program actually run)
    program: dict[str, Any] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    cluster: dict[str, Any] = field(default_factory=dict)
    verdict: dict[str, Any] | None = None
    timeline: dict[str, Any] = field(default_factory=dict)
    health: dict[str, Any] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list)  # what each process used (shared/resources.py)
    disk: list[dict[str, Any]] = field(default_factory=list)  # the run directory's and the brokers' sizes

    @classmethod
    def load(cls, run_dir: Path) -> RunEvidence:
        def read(name: str) -> Any:
            return rundir.read_json(run_dir / name)

        given = read(rundir.PARAMS) or {}
        steps = {s["index"]: s for s in rundir.read_jsonl(run_dir / rundir.STEPS)}  # a retried step: its last record
        return cls(run_dir=run_dir, dag_id=given.get("dag_id", run_dir.parent.name),
                   run_id=given.get("run_id", run_dir.name), attempt=given.get("attempt", 1),
                   params=given.get("params", {}), plan=given.get("plan", {}), program=read(rundir.PROGRAM) or {},
                   steps=[steps[i] for i in sorted(steps)], events=rundir.read_jsonl(run_dir / rundir.EVENTS),
                   cluster=read(rundir.CLUSTER) or {}, verdict=read(rundir.VERDICT),
                   timeline=read(rundir.TIMELINE) or {}, health=read(rundir.HEALTH) or {},
                   samples=rundir.read_jsonl(run_dir / resources.DIR / resources.SAMPLES),
                   disk=rundir.read_jsonl(run_dir / resources.DIR / resources.DISK))

    @property
    def other_attempts(self) -> list[str]:
        """The directory names of the DAG run's other attempts (siblings of this one), first to newest."""
        return [p.name for p in rundir.attempts(self.run_dir.parent.name, self.run_id, self.run_dir.parent.parent)
                if p.name != self.run_dir.name]

    @property
    def status(self) -> str:
        return self.verdict["status"] if self.verdict else "no verdict"

    @property
    def started_at(self) -> float | None:
        """T0 of the program, else the first thing that happened."""
        if self.program.get("t0"):
            return float(self.program["t0"])
        return min((e["t"] for e in self.events), default=None)

    @property
    def ended_at(self) -> float:
        """The last moment anything of the run was recorded."""
        moments = [e["t"] for e in self.events] + [s.get("actual_at") or s["planned_at"] for s in self.steps]
        moments += [r["t"] + 1 for r in self.timeline.get("committed", [])]
        return max(moments, default=time.time())

    def intervals(self) -> list[Interval]:
        """Each instance's running/paused spans and each broker's outages, from ``events.jsonl``."""
        open_: dict[str, tuple[str, float]] = {}
        spans: list[Interval] = []

        def close(lane: str, t: float, ended_by: str) -> None:
            if lane in open_:
                state, start = open_.pop(lane)
                spans.append(Interval(lane, state, start, t, ended_by))

        for e in sorted(self.events, key=lambda e: e["t"]):
            kind, t = e["event"], e["t"]
            lane = lane_of(e)
            if kind == "restart":  # by its restart policy (runtime.spawn)
                close(lane, t, "restarted")
                open_[lane] = ("running", t)
            elif kind == "exit":  # by itself; its restart policy brings it back (runtime.spawn)
                how = f"signal {e['signal']}" if e.get("signal") else f"exit code {e.get('exit_code')}"
                close(lane, t, f"exited by itself ({how}), its restart due after {e.get('backoff_s', 0):g} s")
            elif kind in LANES:  # a step of a fault kind, as the kind draws it
                drawn = LANES[kind]
                lane = f"{lane} {drawn.row}" if drawn.row else lane
                if drawn.ends:
                    close(lane, t, drawn.ends(e))
                if drawn.opens:
                    open_[lane] = (drawn.opens, t)
        end = self.ended_at
        for lane in list(open_):
            close(lane, end, "still running when the record ends")
        return sorted(spans, key=lambda s: (s.lane, s.start))

    def lag_samples(self) -> list[dict[str, Any]]:
        return [{"t": e["t"], "lag": e["lag"], "source": e.get("source", "")} for e in self.events if e["event"] == "lag"]

    def files(self) -> list[str]:
        """Evidence files present in the run directory, relative to it (so links resolve wherever it is served)."""
        present = [name for name in EVIDENCE_FILES if (self.run_dir / name).is_file()]
        for folder in ("logs", "quotas", resources.DIR):
            if (self.run_dir / folder).is_dir():
                present += sorted(f"{folder}/{p.name}" for p in (self.run_dir / folder).iterdir() if p.is_file())
        return present


def first_failure(run_dir: Path) -> dict[str, Any] | None:
    """The earliest task failure of the run (the others usually follow from it)."""
    return min(rundir.read_jsonl(run_dir / rundir.FAILURES), key=lambda row: row["at"], default=None)
