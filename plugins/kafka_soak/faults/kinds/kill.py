"""``kN``: kill instance N with SIGKILL (it must be running or paused): no commit, no leave-group, its transaction
left open, as a crashed or OOM-killed process."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kafka_soak.faults.kind import Lane, Limits, ProgramError, ProgramState, Step, Target
from kafka_soak.faults.kinds.toggle import ended

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances

# A killed member keeps its partitions until its session times out (session.timeout.ms, 45 s), and its open
# transaction blocks read_committed readers until it is aborted (transaction.timeout.ms, 60 s, checked every 10 s).
MEMBER_LEFT_GRACE_S = 45.0 + 70.0


def need(state: ProgramState, n: int, action: str, needed: tuple[str, ...], position: str) -> None:
    """Refuse ``action`` on instance ``n`` unless it is in one of the ``needed`` states at that point."""
    current = state.instance(n)
    if current not in needed:
        raise ProgramError(f"program: {position}: cannot {action} instance {n}: it is {current} at that point (it "
                           f"must be {' or '.join(needed)})")


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
        need(state, n, "kill", ("running", "paused"), position)
        state.set_instance(n, "stopped")
        return Target("kill", instance=n)

    def describe(self, target: Target) -> str:
        return f"kill -9 instance {target.instance}"

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        return {"exit_code": instances.kill(step.instance)}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        return {}


KIND = Kill()
