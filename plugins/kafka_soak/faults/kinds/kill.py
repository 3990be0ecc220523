"""``kN``: kill instance N with SIGKILL (it must be running or paused): no commit, no leave-group, its transaction
left open, as a crashed or OOM-killed process."""

from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING, Any

from kafka_soak.faults.kind import MEMBER_LEFT_GRACE_S, Lane, Limits, ProgramState, Step, Target, ended

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances

class Kill:
    name = "kill"
    pattern = re.compile(r"^k(?P<n>[0-9]{1,4})$")
    grammar = "kN (kill -9)"
    actions = ("kill",)
    needs, needs_why = "", ""
    grace = {"kill": MEMBER_LEFT_GRACE_S}
    lanes = {"kill": Lane(ends=ended, mark="kill -9")}

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n = int(match["n"])
        limits.instance(n, position, allowed)
        state.require(n, "kill", ("running", "paused"), position)
        state.set_instance(n, "stopped")
        return Target("kill", instance=n)

    def draw(self, rng: random.Random, state: ProgramState, limits: Limits, step_s: float) -> list[str]:
        """A running instance killed, and started again a step later."""
        running = state.running()
        return [f"k{(n := rng.choice(running))}", str(n)] if running else []

    def describe(self, target: Target) -> str:
        return f"kill -9 instance {target.instance}"

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        return {"exit_code": instances.kill(step.instance)}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        return {}


KIND = Kill()
