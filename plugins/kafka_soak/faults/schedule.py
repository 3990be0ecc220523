"""Applying program steps exactly once, in order, whichever step task is awake at a step's deadline.

Every step is claimed by creating ``program/step-<i>.claim`` exclusively; the claimant drives the
instance to the step's desired state and writes ``program/step-<i>.json`` (planned vs. actual time,
PID, log). A step task first applies any earlier step that nobody has claimed yet: ``airflow dags
test`` runs mapped tasks one at a time in no fixed order, and a scheduler may start them late, yet the
program must still run in order and on time.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends import broker_matrix, registry
from kafka_soak.backends.registry import Backend
from kafka_soak.clients.instances import Instances
from kafka_soak.faults import kinds
from kafka_soak.faults.kind import Step
from kafka_soak.faults.kinds import wait
from kafka_soak.faults.program import render, schedule
from kafka_soak.shared import rundir
from kafka_soak.shared.rundir import append_jsonl, write_json

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)


class StepFailed(RuntimeError):
    pass


class StepBook:
    """The claims and results of a run's program steps."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir / "program"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.timeline = run_dir / rundir.STEPS

    def result(self, index: int) -> dict[str, Any] | None:
        path = self.dir / f"step-{index}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def claimant(self, index: int) -> dict[str, Any] | None:
        path = self.dir / f"step-{index}.claim"
        return json.loads(path.read_text() or "{}") if path.exists() else None

    def claim(self, index: int, by: dict[str, Any]) -> bool:
        """True when this caller owns step ``index`` (first claim, or its own earlier claim on a retry)."""
        path = self.dir / f"step-{index}.claim"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            current = self.claimant(index) or {}
            return current.get("map_index") == by.get("map_index")
        with os.fdopen(fd, "w") as fh:
            json.dump(by, fh)
        return True

    def delay(self, index: int) -> float:
        """How much later than planned step ``index`` fires: as much as the waits before it (``wN``, ``wr``) held the
        program past their own due time, so that each later step keeps its distance to the event a wait stood for.
        Steps run in order, so the step before has its result; ``delayed_s`` carries the sum on."""
        before = self.result(index - 1) if index else None
        if before is None:
            return 0.0
        held = before["actual_at"] + before["took_s"] - before["planned_at"] \
            if before["action"] in wait.HOLDING and "took_s" in before else 0.0
        return before.get("delayed_s", 0.0) + max(0.0, held)

    def next_pending(self, up_to: int) -> int | None:
        """The first step ``<= up_to`` with no result yet."""
        return next((i for i in range(up_to + 1) if self.result(i) is None), None)

    def refuse_after_failure(self, up_to: int) -> None:
        """Once a step failed, no later step is applied: the program would no longer be the one asked for."""
        for index in range(up_to + 1):
            result = self.result(index)
            if result and "failed" in result:
                raise StepFailed(f"{result['label']} failed ({result['failed']}): the rest of the program is not "
                                 f"applied; see {self.timeline}")

    def record(self, step: Step, outcome: dict[str, Any]) -> dict[str, Any]:
        result = {**step.as_dict(), "label": step.label, **outcome}
        write_json(self.dir / f"step-{step.index}.json", result)
        append_jsonl(self.timeline, result)
        return result


def write_program(run_dir: Path, plan: Plan, t0: float, steps: list[dict[str, Any]]) -> None:
    """The program as it will run, with the conf (``replay_conf``) that runs the same program again."""
    write_json(run_dir / rundir.PROGRAM, {"program": render(plan["program"]), "source": plan["program_source"],
                                          "seed": plan["seed"], "t0": t0, "steps": steps,
                                          "replay_conf": {"program": render(plan["program"]),
                                                          "interval_s": plan["interval_s"]}})


def plan_steps(run_dir: Path, plan: Plan, lead_s: float) -> list[dict[str, Any]]:
    """The program's steps with their planned times: T0 a little ahead (``lead_s``), so that the generator and the
    first step start together; written to ``program.json`` with the conf that replays it."""
    t0 = time.time() + lead_s
    steps = [s.as_dict() for s in schedule(plan["program"], t0, plan["interval_s"])]
    for member in {run_dir, *(m.dir for m in broker_matrix.members(run_dir, plan))}:  # each cluster's generator reads it
        write_program(member, plan, t0, steps)
    for s in steps:
        log.info("  %s at T0%+.0f s", Step(**s).label, s["planned_at"] - t0)
    log.info("replay this program with -c '%s'", json.dumps({"program": render(plan["program"]),
                                                              "interval_s": plan["interval_s"]}))
    return steps


def read_steps(run_dir: Path) -> list[Step]:
    return [Step(**s) for s in json.loads((run_dir / rundir.PROGRAM).read_text())["steps"]]


def sleep_until(deadline: float) -> None:
    """Sleep to ``deadline`` (epoch s) precisely: coarse sleeps, then a short spin for the last few ms."""
    while True:
        remaining = deadline - time.time()
        if remaining <= 0:
            return
        time.sleep(remaining - 0.002 if remaining > 0.004 else 0)


def apply(step: Step, instances: Instances, kafka: Backend, by: dict[str, Any]) -> dict[str, Any]:
    """Drive the step's instance (``instances``) or broker (the ``kafka`` backend) to the step's desired state now,
    as its fault kind does; returns the step's evidence."""
    actual = time.time()
    outcome: dict[str, Any] = {"actual_at": actual, "jitter_ms": round((actual - step.planned_at) * 1000, 1),
                               "applied_by": by}
    n = step.instance
    before = instances.record(n) if n and instances.is_running(n) else None
    if before is not None:
        outcome.update({"pid": before.pid, "log": before.log})
    outcome.update(kinds.of(step.action).apply(step, instances, kafka))
    outcome["took_s"] = round(time.time() - actual, 3)
    instances.sync_logs()
    outcome["running_after"] = instances.running()
    outcome["paused_after"] = instances.paused()
    log.info("%s at %+.1f ms from plan (took %.2f s)%s; running now: %s%s", step.label, outcome["jitter_ms"],
             outcome["took_s"], f", pid {outcome['pid']}" if outcome.get("pid") else "",
             outcome["running_after"] or "none",
             f" (paused: {outcome['paused_after']})" if outcome["paused_after"] else "")
    return outcome


class Targets:
    """What a run's program steps act on: the instances and the Kafka of the run's cluster, or of every cluster of a
    broker version matrix; made before a step's deadline, so that applying it costs no more than the step itself."""

    def __init__(self, run_dir: Path, plan: Plan, cluster: dict[str, Any]) -> None:
        self.members = broker_matrix.members(run_dir, plan)
        self.of = {m.name: (Instances.for_run(m.dir, m.cluster(cluster), m.plan), registry.create(m.plan, m.dir))
                   for m in self.members}

    def apply(self, step: Step, by: dict[str, Any]) -> dict[str, Any]:
        """``apply`` the step to every cluster at the same moment: each member's evidence goes to its own directory,
        and the run's records every member's outcome (``members``)."""

        def on(member: broker_matrix.ClusterMember) -> dict[str, Any]:
            outcome = apply(step, *self.of[member.name], by)
            if member.name:
                StepBook(member.dir).record(step, outcome)
            return outcome

        outcomes = broker_matrix.each(self.members, on, alone=f"step {step.index} ({step.token})")
        if "" in outcomes:
            return outcomes[""]
        return {"actual_at": min(o["actual_at"] for o in outcomes.values()),
                "jitter_ms": max(o["jitter_ms"] for o in outcomes.values()), "applied_by": by,
                "took_s": max(o["took_s"] for o in outcomes.values()), "members": outcomes}
