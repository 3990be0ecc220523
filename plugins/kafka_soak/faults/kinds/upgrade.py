"""The steps of a rolling upgrade. ``bN^V``: broker N stops gracefully (SIGTERM, a controlled shutdown) and starts
again on Apache Kafka release V on its own data (its node id, the cluster's id, its log directories), so the cluster
runs mixed releases until every broker is moved; only a backend whose brokers the run started can (capability
``broker_faults``). ``N^V``: instance N of the app stops gracefully and starts again on version V (a Kafka Streams
release for the suite's Kafka Streams app, one of a profile's ``versions``), which it keeps through later restarts.

Each move is checked against what the broker or instance runs at that point of the program, and a move Kafka does
not support is refused before anything starts, naming the token: a broker release that cannot run the cluster's
metadata.version (``backends.kafka_releases``), an app move the app's own rule refuses (``Releases.app_move``). The
releases moved to are fetched or built before anything starts (``targets``), as ``kafka_version``'s are. The drain
undoes nothing of an upgrade: the cluster and the app stay on what they were moved to.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from kafka_soak.backends.kafka_releases import move_problem
from kafka_soak.faults.kind import Lane, Limits, ProgramError, ProgramState, Step, Target
from kafka_soak.shared.rundir import journal

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances

log = logging.getLogger(__name__)
TO = r"\^(?P<to>[A-Za-z0-9][A-Za-z0-9._-]{0,39})$"  # a release number or a profile's version name


def refuse(position: str, target: str, current: str, to: str, problem: Callable[[], str]) -> None:
    """Refuse a move of ``target`` (``broker 2``) from ``current`` to ``to`` that is none, or one its rule finds a
    ``problem`` with."""
    why = f"{target} already runs {to} at that point" if to == current else problem()
    if why:
        raise ProgramError(f"program: {position}: {why}")


def moved_to(step: Step, kind: BrokerUpgrade | AppUpgrade) -> str:
    """What a step's token moves its target to."""
    return kind.pattern.fullmatch(step.token)["to"]


class Move:
    """What the two kinds of move share: how a step says itself (``says``, of its target's fields), and that the drain
    undoes nothing of them (the cluster and the app stay on what they were moved to)."""

    says: ClassVar[str]

    def describe(self, target: Target) -> str:
        return self.says.format(target=target)

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        return {}


class BrokerUpgrade(Move):
    name = "broker-upgrade"
    pattern = re.compile(r"^b(?P<n>[0-9]{1,4})" + TO)
    grammar = "bN^V (broker N restarts on Apache Kafka release V)"
    actions = ("broker-upgrade",)
    says = "broker {target.broker} to Apache Kafka {target.to}"
    needs, needs_why = "broker_faults", "restart brokers on another release"
    grace: dict[str, float] = {}  # the step returns once the broker is back in every in-sync replica set
    lanes = {"broker-upgrading": Lane(opens="down"),
             "broker-upgraded": Lane(ends=lambda event: f"up on Apache Kafka {event['release']}", label="{release}")}

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n, to = int(match["n"]), match["to"]
        limits.broker(n, position)
        if n in state.brokers_down:
            raise ProgramError(f"program: {position}: broker {n} is down at that point (a rolling upgrade restarts a "
                               f"broker that serves: bring it up first with b{n}+)")
        if f"broker {n}" in state.cut:
            raise ProgramError(f"program: {position}: broker {n} is cut from the other brokers at that point: restarted, "
                               f"it could not rejoin the controller quorum (heal it first with nb{n}+)")
        formatted = limits.releases.kafka
        if formatted is not None:
            refuse(position, f"broker {n}", state.releases.get(n, formatted), to, lambda: move_problem(formatted, to))
        state.releases[n] = to
        return Target("broker-upgrade", broker=n, to=to)

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        release = moved_to(step, self)
        journal(instances.run_dir, "broker-upgrading", broker=step.broker, release=release)
        moved = kafka.upgrade_broker(step.broker, release)
        log.info("broker %d moved from Apache Kafka %s to %s (stopped in %.1f s, serving after %.1f s, in sync after "
                 "%.1f s more)", step.broker, moved["from"], release, moved["stop_s"], moved["serving_s"],
                 moved["in_sync_s"])
        journal(instances.run_dir, "broker-upgraded", broker=step.broker, **moved)
        return {"broker": "upgraded", **moved}


class AppUpgrade(Move):
    name = "app-upgrade"
    pattern = re.compile(r"^(?P<n>[0-9]{1,4})" + TO)
    grammar = "N^V (instance N restarts on app version V)"
    actions = ("upgrade",)
    says = "instance {target.instance} to version {target.to}"
    needs, needs_why = "", ""
    # An upgrade stops the instance gracefully: the drain grants it what it grants a stop (``drain.fault_grace_s``: a
    # Kafka Streams instance that closes does not leave its group, an app that leaves it costs nothing).
    grace: dict[str, float] = {}
    lanes = {"upgrade": Lane(label="{version}")}  # its stop and start draw the spans

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n, to = int(match["n"]), match["to"]
        limits.instance(n, position, allowed)
        state.require(n, "upgrade", ("running",), position)
        move = limits.releases.app_move
        if move is not None:
            current = state.versions.get(n, limits.releases.app or "")
            refuse(position, f"instance {n}", current, to, lambda: move(current, to))
        state.versions[n] = to
        return Target("upgrade", instance=n, to=to)

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        version = moved_to(step, self)
        code, started = instances.upgrade(step.instance, version, step.index)
        journal(instances.run_dir, "upgrade", instance=step.instance, version=version)
        return {"exit_code": code, "version": version, **({"pid": started.pid, "log": started.log} if started else {})}


BROKERS, APP = BrokerUpgrade(), AppUpgrade()


def targets(steps: list[Step]) -> tuple[dict[str, str], dict[str, str]]:
    """The Apache Kafka releases brokers are moved to and the app versions instances are moved to, each with the first
    token that asks for it (``token 'b1^4.3.1' at position 5``), to fetch or build them before anything starts."""
    found: tuple[dict[str, str], dict[str, str]] = ({}, {})
    for step in steps:
        for kind, into in ((BROKERS, found[0]), (APP, found[1])):
            if step.action in kind.actions:
                into.setdefault(moved_to(step, kind), f"token {step.token!r} at position {step.index + 1}")
    return found
