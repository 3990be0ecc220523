"""``bN-`` / ``bN+``: take broker N down (SIGKILL, as a lost machine) and bring it back on its own data; ``bN+``
returns once the broker serves again and lists itself (registered and unfenced). Only a backend whose brokers the
run started can (capability ``broker_faults``)."""

from __future__ import annotations

import logging
import random
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.faults.kind import Lane, Limits, ProgramError, ProgramState, Step, Target
from kafka_soak.shared.rundir import journal

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances

log = logging.getLogger(__name__)


def set_broker(kafka: Backend, run_dir: Path, broker: int, up: bool) -> str:
    """Kill broker N or start it again, noted in the run's events."""
    state = kafka.set_broker(broker, up)
    log.info("broker %d %s", broker, state)
    journal(run_dir, f"broker-{state}", broker=broker)
    return state


class Broker:
    name = "broker"
    pattern = re.compile(r"^b(?P<n>[0-9]{1,4})(?P<dir>[+-])$")
    grammar = "bN- / bN+ (broker N down/up, 1..{brokers})"
    actions = ("broker-down", "broker-up")
    needs, needs_why = "broker_faults", "kill and restart brokers"
    grace = {"broker-down": 30.0}  # its partitions' leaders move, and its transactions' coordinator
    lanes = {"broker-down": Lane(opens="down", color="#c62828"), "broker-up": Lane(ends=lambda _event: "up again")}

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n, down = int(match["n"]), match["dir"] == "-"
        limits.broker(n, position)
        if down == (n in state.brokers_down):
            raise ProgramError(f"program: {position}: broker {n} is already {'down' if down else 'up'} at that point")
        if not down and f"broker {n}" in state.cut:
            raise ProgramError(f"program: {position}: broker {n} cannot come up while it is cut from the other brokers "
                               f"(it could not rejoin the controller quorum); heal it first (nb{n}+)")
        (state.brokers_down.add if down else state.brokers_down.discard)(n)
        return Target("broker-down" if down else "broker-up", broker=n)

    def draw(self, rng: random.Random, state: ProgramState, limits: Limits, step_s: float) -> list[str]:
        """One broker of two or more down for a step while the others serve, when all of them serve."""
        brokers = limits.brokers or 1
        up = [n for n in range(1, brokers + 1) if n not in state.brokers_down and f"broker {n}" not in state.cut]
        return [f"b{(n := rng.choice(up))}-", f"b{n}+"] if brokers >= 2 and len(up) == brokers else []

    def describe(self, target: Target) -> str:
        return f"broker {target.broker} {'down' if target.action == 'broker-down' else 'up'}"

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        return {"broker": set_broker(kafka, instances.run_dir, step.broker, up=step.action == "broker-up")}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        """A broker the program left down comes up: the app cannot catch up on partitions it led."""
        for broker in sorted(left.brokers_down):
            log.warning("the program left broker %d down: bringing it up to drain", broker)
            set_broker(kafka, instances.run_dir, broker, up=True)
        return {"brokers_up": sorted(left.brokers_down)}


KIND = Broker()
