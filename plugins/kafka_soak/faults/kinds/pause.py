"""``pN`` / ``rN``: pause instance N with SIGSTOP (it must be running) and resume it with SIGCONT (it must be
paused): a process that stops answering without dying, as in a long GC pause or a frozen VM."""

from __future__ import annotations

import logging
import random
import re
from typing import TYPE_CHECKING, Any

from kafka_soak.faults.kind import MEMBER_LEFT_GRACE_S, RUNNING, Lane, Limits, ProgramState, Step, Target

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances

log = logging.getLogger(__name__)


class Pause:
    name = "pause"
    pattern = re.compile(r"^(?P<op>[pr])(?P<n>[0-9]{1,4})$")
    grammar = "pN (pause), rN (resume)"
    actions = ("pause", "resume")
    needs, needs_why = "", ""
    grace = {"pause": MEMBER_LEFT_GRACE_S}  # a paused member, as a killed one, until its session times out
    lanes = {"pause": Lane(ends=lambda _event: "paused", opens="paused", color="#f9a825"),
             "resume": Lane(ends=lambda _event: "resumed", opens="running", color=RUNNING)}

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n = int(match["n"])
        limits.instance(n, position, allowed)
        action, needed, after = ("pause", "running", "paused") if match["op"] == "p" else ("resume", "paused", "running")
        state.require(n, action, (needed,), position)
        state.set_instance(n, after)
        return Target(action, instance=n)

    def draw(self, rng: random.Random, state: ProgramState, limits: Limits, step_s: float) -> list[str]:
        """A running instance paused for a step."""
        running = state.running()
        return [f"p{(n := rng.choice(running))}", f"r{n}"] if running else []

    def describe(self, target: Target) -> str:
        return f"{target.action} instance {target.instance}"

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        signal = instances.pause if step.action == "pause" else instances.resume
        return {"signalled": signal(step.instance)}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        """An instance left paused resumes, so that it can commit what it holds (its own record, not the program's:
        a step that failed may have left another state)."""
        resumed = []
        for n in instances.paused():
            log.warning("the program left instance %d paused: resuming it to drain", n)
            instances.resume(n)
            resumed.append(n)
        return {"resumed": resumed}


KIND = Pause()
