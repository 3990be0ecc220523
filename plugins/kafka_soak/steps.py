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
from typing import Any

from kafka_soak.instances import Instances
from kafka_soak.program import Step
from kafka_soak.rundir import append_jsonl, write_json

log = logging.getLogger(__name__)


class StepBook:
    """The claims and results of a run's program steps."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir / "program"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.timeline = run_dir / "program.jsonl"

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

    def next_pending(self, up_to: int) -> int | None:
        """The first step ``<= up_to`` with no result yet."""
        return next((i for i in range(up_to + 1) if self.result(i) is None), None)

    def record(self, step: Step, outcome: dict[str, Any]) -> dict[str, Any]:
        result = {**step.as_dict(), "label": step.label, **outcome}
        write_json(self.dir / f"step-{step.index}.json", result)
        append_jsonl(self.timeline, result)
        return result


def write_program(run_dir: Path, program: list[int], t0: float, steps: list[dict[str, Any]]) -> None:
    write_json(run_dir / "program.json", {"program": program, "t0": t0, "steps": steps})


def read_steps(run_dir: Path) -> list[Step]:
    return [Step(**s) for s in json.loads((run_dir / "program.json").read_text())["steps"]]


def sleep_until(deadline: float) -> None:
    """Sleep to ``deadline`` (epoch s) precisely: coarse sleeps, then a short spin for the last few ms."""
    while True:
        remaining = deadline - time.time()
        if remaining <= 0:
            return
        time.sleep(remaining - 0.002 if remaining > 0.004 else 0)


def apply(step: Step, instances: Instances, by: dict[str, Any]) -> dict[str, Any]:
    """Drive ``step.instance`` to the step's desired state now; returns the step's evidence."""
    actual = time.time()
    outcome: dict[str, Any] = {"actual_at": actual, "jitter_ms": round((actual - step.planned_at) * 1000, 1),
                               "applied_by": by}
    if step.action == "start":
        rec = instances.start(step.instance, step.index)
        outcome.update({"pid": rec.pid if rec else None, "log": rec.log if rec else None})
    elif step.action == "stop":
        outcome["exit_code"] = instances.stop(step.instance)
        outcome["stopped_in_s"] = round(time.time() - actual, 2)
    outcome["running_after"] = instances.running()
    log.info("%s at %+.1f ms from plan; running now: %s", step.label, outcome["jitter_ms"],
             outcome["running_after"] or "none")
    return outcome
