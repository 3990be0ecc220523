"""``N``: start instance N when it is stopped, stop it gracefully otherwise (a rolling restart, a scale-in); ``0``: a
step that does nothing (time for the app to settle)."""

from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING, Any

from kafka_soak.faults.kind import RUNNING, Lane, Limits, ProgramState, Step, Target, ended

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances


class Toggle:
    name = "toggle"
    pattern = re.compile(r"^(?P<n>[0-9]{1,4})$")  # ASCII digits only: ``\d`` would take "١" (Arabic-Indic one) for 1
    grammar = "N (toggle instance N, 1..{instances}), 0 (no-op)"
    actions = ("noop", "start", "stop")
    needs, needs_why = "", ""
    grace: dict[str, float] = {}
    lanes = {"start": Lane(ends=lambda _event: "restarted", opens="running", color=RUNNING), "stop": Lane(ends=ended)}

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n = int(match["n"])
        if n == 0:
            return Target("noop")
        limits.instance(n, position, allowed)
        action = "start" if state.instance(n) == "stopped" else "stop"
        state.set_instance(n, "running" if action == "start" else "stopped")
        return Target(action, instance=n)

    def draw(self, rng: random.Random, state: ProgramState, limits: Limits, step_s: float) -> list[str]:
        """A rolling restart of one running instance: stopped gracefully, started again a step later."""
        running = state.running()
        return [str(n := rng.choice(running)), str(n)] if running else []

    def describe(self, target: Target) -> str:
        return "no-op" if target.action == "noop" else f"{target.action} instance {target.instance}"

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        if step.action == "start":
            started = instances.start(step.instance, step.index)
            return {"pid": started.pid, "log": started.log}
        if step.action == "stop":
            return {"exit_code": instances.stop(step.instance)}
        return {}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        return {}


KIND = Toggle()
