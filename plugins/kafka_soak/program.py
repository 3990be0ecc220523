"""The toggle program: which instance changes state at which step (the soak's nemesis).

A program is a list of instance numbers, as in the original multi-runner reproduction: each number
toggles that instance (``1 2 1`` = start 1, start 2, stop 1) and ``0`` is a no-op step. Step *i* drives
instance *n* to a **desired state** — running when *n* occurs an odd number of times in
``program[:i+1]`` — rather than flipping it, so a retried step converges instead of undoing itself.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any


class ProgramError(ValueError):
    """A program that cannot be run; the message names the token and what is allowed."""


@dataclass(frozen=True)
class Step:
    index: int
    instance: int  # 0 = no-op
    action: str  # "start" | "stop" | "noop"
    planned_at: float = 0.0

    @property
    def label(self) -> str:
        return f"step {self.index}: no-op" if self.action == "noop" else \
            f"step {self.index}: {self.action} instance {self.instance}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def allowed(instances: int) -> str:
    return f'instance numbers 1..{instances} or 0 for a no-op, separated by spaces, e.g. "1 2 1"'


def parse(program: str | list[int], instances: int) -> list[int]:
    """Turn ``"1 2 1"`` or ``[1, 2, 1]`` into a validated list of instance numbers."""
    tokens = program.split() if isinstance(program, str) else list(program)
    result = []
    for position, token in enumerate(tokens, start=1):
        try:
            number = int(token)
            if isinstance(token, float) or str(number) != str(token).strip():
                raise ValueError
        except (TypeError, ValueError):
            raise ProgramError(f"program: token {token!r} at position {position} is not an instance number; "
                               f"allowed: {allowed(instances)}") from None
        if not 0 <= number <= instances:
            raise ProgramError(f"program: instance {number} at position {position} is out of range: this run has "
                               f"{instances} instances (param 'instances'); allowed: {allowed(instances)}")
        result.append(number)
    return result


def random_program(seed: int, instances: int, steps: int | None = None) -> list[int]:
    """A seeded program of ``steps`` toggles (default: two per instance) that can be replayed from the seed."""
    rng = random.Random(seed)
    return [rng.randint(1, instances) for _ in range(steps or 2 * instances)]


def steps(program: list[int], t0: float = 0.0, interval_s: float = 0.0) -> list[Step]:
    """Each step with its desired state, firing at ``t0 + i * interval_s``."""
    result, counts = [], {}
    for i, n in enumerate(program):
        if n == 0:
            action = "noop"
        else:
            counts[n] = counts.get(n, 0) + 1
            action = "start" if counts[n] % 2 else "stop"
        result.append(Step(i, n, action, t0 + i * interval_s))
    return result


def running_after(program: list[int]) -> set[int]:
    """Instances the program leaves running."""
    return {n for n in set(program) if n and program.count(n) % 2 == 1}


def render(program: list[int]) -> str:
    return " ".join(str(n) for n in program)
