"""The toggle program: what changes at which step (the soak's nemesis).

A program is a list of tokens, one per step, as in the original multi-runner reproduction:

==========  ===================================================================================
``N``       toggle instance *N*: start it when it is stopped, stop it gracefully otherwise
``0``       no-op step
``kN``      kill instance *N* with SIGKILL: no commit, no leave-group (it must be running or paused)
``pN``      pause instance *N* with SIGSTOP (it must be running)
``rN``      resume instance *N* with SIGCONT (it must be paused)
``bN-``     take broker *N* down; ``bN+`` brings it back
==========  ===================================================================================

Each step carries the **desired state** it leads to (instance running/stopped/paused, broker up/down),
worked out from the program up to that step, so a retried step converges instead of undoing itself.
A program that asks for an impossible transition (``r2`` while 2 runs) is refused before the run,
naming the token.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass
from typing import Any

from kafka_soak.params import MAX_STEPS

INSTANCE_ACTIONS = ("start", "stop", "kill", "pause", "resume")
BROKER_ACTIONS = ("broker-down", "broker-up")

# ASCII digits only: ``\d`` would take "١" (Arabic-Indic one) for instance 1.
TOKEN = re.compile(r"^(?:(?P<toggle>[0-9]{1,4})|(?P<op>[kpr])(?P<instance>[0-9]{1,4})|b(?P<broker>[0-9]{1,4})(?P<dir>[+-]))$")


class ProgramError(ValueError):
    """A program that cannot be run; the message names the token and what is allowed."""


@dataclass(frozen=True)
class Step:
    index: int
    token: str
    action: str  # "noop" | one of INSTANCE_ACTIONS | one of BROKER_ACTIONS
    instance: int = 0
    broker: int = 0
    planned_at: float = 0.0

    @property
    def label(self) -> str:
        what = {"noop": "no-op", "start": f"start instance {self.instance}",
                "stop": f"stop instance {self.instance}", "kill": f"kill -9 instance {self.instance}",
                "pause": f"pause instance {self.instance}", "resume": f"resume instance {self.instance}",
                "broker-down": f"broker {self.broker} down", "broker-up": f"broker {self.broker} up"}
        return f"step {self.index}: {what[self.action]}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def allowed(instances: int, brokers: int = 1) -> str:
    return (f"tokens separated by spaces: N (toggle instance N, 1..{instances}), 0 (no-op), kN (kill -9), "
            f"pN (pause), rN (resume), bN- / bN+ (broker N down/up, 1..{brokers}); e.g. \"1 2 k1 1\"")


def parse(program: str | list[int | str], instances: int, brokers: int = 1) -> list[str]:
    """Validate ``"1 2 k1 1"`` or ``[1, 2, "k1", 1]``; returns the normalised tokens.

    Checks the range of every number and that each operation is possible at its point of the program.
    """
    tokens = program.split() if isinstance(program, str) else list(program)
    normal = [str(t).strip() for t in tokens]
    if not normal:
        raise ProgramError(f"program: has no steps; allowed: {allowed(instances, brokers)} (or leave it empty "
                           "for a random program from seed)")
    if len(normal) > MAX_STEPS:
        raise ProgramError(f"program: {len(normal)} steps, more than the {MAX_STEPS} a run can map (Airflow's "
                           "max_map_length); split the soak into several runs or lengthen interval_s")
    schedule(normal, instances=instances, brokers=brokers)
    return normal


def schedule(program: list[str], t0: float = 0.0, interval_s: float = 0.0, instances: int | None = None,
             brokers: int | None = None) -> list[Step]:
    """Each step with the action that leads to its desired state, firing at ``t0 + i * interval_s``."""
    state: dict[int, str] = {}  # instance -> "running" | "paused" (absent: stopped)
    down: set[int] = set()
    result = []
    for i, token in enumerate(program):
        position = f"token {token!r} at position {i + 1}"
        match = TOKEN.match(token)
        if not match:
            raise ProgramError(f"program: {position} is not an operation; allowed: "
                               f"{allowed(instances or 1, brokers or 1)}")
        if match["broker"] is not None:
            n = int(match["broker"])
            if brokers is not None and not 1 <= n <= brokers:
                raise ProgramError(f"program: {position}: broker {n} is out of range: this run has {brokers} "
                                   f"broker(s) (param 'brokers')")
            if (match["dir"] == "-") == (n in down):
                raise ProgramError(f"program: {position}: broker {n} is already {'down' if n in down else 'up'} "
                                   "at that point")
            if match["dir"] == "-":
                down.add(n)
            else:
                down.discard(n)
            result.append(Step(i, token, "broker-down" if match["dir"] == "-" else "broker-up", broker=n,
                               planned_at=t0 + i * interval_s))
            continue
        n = int(match["toggle"] if match["toggle"] is not None else match["instance"])
        if match["toggle"] is not None and n == 0:
            result.append(Step(i, token, "noop", planned_at=t0 + i * interval_s))
            continue
        if instances is not None and not 1 <= n <= instances:
            raise ProgramError(f"program: {position}: instance {n} is out of range: this run has {instances} "
                               f"instances (param 'instances'); allowed: {allowed(instances, brokers or 1)}")
        current = state.get(n, "stopped")
        op = match["op"]
        if op is None:
            action = "start" if current == "stopped" else "stop"
        else:
            action = {"k": "kill", "p": "pause", "r": "resume"}[op]
            needed = {"kill": ("running", "paused"), "pause": ("running",), "resume": ("paused",)}[action]
            if current not in needed:
                raise ProgramError(f"program: {position}: cannot {action} instance {n}: it is {current} at that "
                                   f"point (it must be {' or '.join(needed)})")
        state[n] = {"start": "running", "resume": "running", "pause": "paused"}.get(action, "stopped")
        if state[n] == "stopped":
            del state[n]
        result.append(Step(i, token, action, instance=n, planned_at=t0 + i * interval_s))
    return result


def random_program(seed: int, instances: int, length: int | None = None) -> list[str]:
    """A seeded program of ``length`` toggles (default: two per instance) that can be replayed from the seed."""
    rng = random.Random(seed)
    return [str(rng.randint(1, instances)) for _ in range(length or 2 * instances)]


def brokers_left_down(program: list[str]) -> set[int]:
    """Brokers the program takes down and does not bring back."""
    down: set[int] = set()
    for step in schedule(program):
        if step.action == "broker-down":
            down.add(step.broker)
        elif step.action == "broker-up":
            down.discard(step.broker)
    return down


def render(program: list[str]) -> str:
    return " ".join(program)
