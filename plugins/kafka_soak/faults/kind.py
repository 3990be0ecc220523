"""What a fault kind of the program is: one unit, as a Trogdor fault spec or a Jepsen nemesis package is.

Each kind (``faults/kinds/``) declares its tokens and how they read, its state rule (what a step needs at its point of
the program and what it leads to), how a step is applied, what the drain undoes of what the program left, the grace
the drain gives it, the capability of the backend it needs, and the events it writes with how the report draws them.
The program's parser, the step task, the drain and the report iterate the kinds; none names one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances


class ProgramError(ValueError):
    """A program that cannot be run; the message names the token and what is allowed."""


@dataclass(frozen=True)
class Step:
    """One step of the program: its token, the action that leads to its desired state, its target, when it is due,
    and what it does in words (``what``, the kind's)."""

    index: int
    token: str
    action: str  # "noop" or one of a kind's ``actions``
    instance: int = 0
    broker: int = 0
    planned_at: float = 0.0
    what: str = ""

    @property
    def label(self) -> str:
        return f"step {self.index}: {self.what or self.action}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProgramState:
    """Where the program stands after a step: each started instance's state (absent: stopped), the brokers down, the
    hosts whose network is cut, and what a rolling upgrade moved each broker and instance to (absent: what the run
    started on)."""

    instances: dict[int, str] = field(default_factory=dict)  # instance -> "running" | "paused"
    brokers_down: set[int] = field(default_factory=set)
    cut: set[str] = field(default_factory=set)  # "instance 1", "broker 2": hosts whose links the program cut
    releases: dict[int, str] = field(default_factory=dict)  # broker -> the Apache Kafka release it was moved to
    versions: dict[int, str] = field(default_factory=dict)  # instance -> the app version it was moved to

    def running(self) -> list[int]:
        """The instances running at this point, in order."""
        return sorted(n for n, s in self.instances.items() if s == "running")

    def instance(self, n: int) -> str:
        return self.instances.get(n, "stopped")

    def require(self, n: int, action: str, needed: tuple[str, ...], position: str) -> None:
        """Refuse ``action`` on instance ``n`` unless it is in one of the ``needed`` states at that point."""
        current = self.instance(n)
        if current not in needed:
            raise ProgramError(f"program: {position}: cannot {action} instance {n}: it is {current} at that point (it "
                               f"must be {' or '.join(needed)})")

    def set_instance(self, n: int, state: str) -> None:
        if state == "stopped":
            self.instances.pop(n, None)
        else:
            self.instances[n] = state


@dataclass(frozen=True)
class Releases:
    """What a run starts on, for the checks of an upgrade's path (None: not checked, as when a program is only
    scheduled): the brokers' Apache Kafka release (the one that formats the cluster), the app's version, and why the
    app cannot move from one version to another ("" when it can; the rule of the app: Kafka Streams', a profile's
    versions)."""

    kafka: str | None = None
    app: str | None = None
    app_move: Callable[[str, str], str] | None = None


@dataclass(frozen=True)
class Limits:
    """What the run has for a program's numbers to name (None: not checked, as when a program is only scheduled), and
    what it starts on."""

    instances: int | None = None
    brokers: int | None = None
    releases: Releases = Releases()

    def instance(self, n: int, position: str, allowed: str) -> None:
        if self.instances is not None and not 1 <= n <= self.instances:
            raise ProgramError(f"program: {position}: instance {n} is out of range: this run has {self.instances} "
                               f"instances (param 'instances'); allowed: {allowed}")

    def broker(self, n: int, position: str) -> None:
        if self.brokers is not None and not 1 <= n <= self.brokers:
            raise ProgramError(f"program: {position}: broker {n} is out of range: this run has {self.brokers} "
                               "broker(s) (param 'brokers')")


# A killed or paused member keeps its partitions until its session times out (session.timeout.ms, 45 s), and its open
# transaction blocks read_committed readers until it is aborted (transaction.timeout.ms, 60 s, checked every 10 s).
MEMBER_LEFT_GRACE_S = 45.0 + 70.0


RUNNING = "#2e7d32"  # the colour of an instance's span while it runs, whichever kind's event opens it


def ended(event: dict[str, Any]) -> str:
    """How a stop or a kill ended an instance's span, in the report's words."""
    if event["event"] == "kill":
        return "killed (kill -9)"
    code = event.get("exit_code")
    return f"stopped (exit code {code})" if code is not None else "stopped"


@dataclass(frozen=True)
class Lane:
    """How the report draws an event of ``events.jsonl`` on its target's lane: the span it ends (and in which words,
    from the event) and the span it opens, if any, in its colour; ``mark`` puts a marker on the lane at the event,
    ``label`` a text made of the event's fields (``"{release}"``). ``row`` draws it on a row of its own under the
    target's lane (``instance 1 network``), for a state that overlaps the lane's own."""

    ends: Callable[[dict[str, Any]], str] | None = None
    opens: str = ""
    color: str = ""  # of the state it opens
    mark: str = ""
    row: str = ""
    label: str = ""


@dataclass(frozen=True)
class Target:
    """A step's target as the kind read it from the token: an instance or a broker (and what an upgrade moves it to),
    and what else its label says."""

    action: str
    instance: int = 0
    broker: int = 0
    to: str = ""
    detail: str = ""


class FaultKind(Protocol):
    """A kind of fault the program can inject."""

    name: ClassVar[str]
    pattern: ClassVar[re.Pattern[str]]  # its tokens, whole
    grammar: ClassVar[str]  # its tokens as the refusal of a bad token lists them
    actions: ClassVar[tuple[str, ...]]  # the actions its steps lead to (``Step.action``)
    needs: ClassVar[str]  # the backend capability its steps need ("": any backend)
    needs_why: ClassVar[str]  # what its steps do that needs it, as a refusal says
    # A kind may also name the runtimes (param runtime) its steps work on, as ``runtimes``: a tuple; absent: any.
    # Likewise the rebalance protocols (param group_protocol) it works with, as ``group_protocols``.
    # A kind a random program can draw (param random_program) has ``draw(rng, state, limits, step_s) -> list[str]``:
    # the tokens of one fault of its kind on consecutive steps of ``step_s`` seconds, the last of which undoes it (a
    # stall ends by itself), drawn for ``state`` (which it does not advance), or none when nothing can take one then.
    # And it may have ``conclude(instances) -> dict[str, list[int]]``: what the drain does once the app caught up or
    # the drain ended (the stall kind disarms what no thread took), which drain.json adds to what ``restore`` did.
    # The seconds the drain waits beyond drain_timeout_s after a step of each action, for what the fault leaves the
    # app's group to wait out (a session to time out, a transaction to be aborted, a partition to get its leader back).
    grace: ClassVar[dict[str, float]]
    lanes: ClassVar[dict[str, Lane]]  # the events it writes, and how the report draws each

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        """The step a token leads to from ``state`` (which it advances), or ``ProgramError`` naming the token."""

    def describe(self, target: Target) -> str:
        """The step in words, as its label says it."""

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        """Drive the step's target to its desired state now; returns what the step's evidence adds."""

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        """What the drain undoes of what the program left (``left``: its state after the last step), before it waits
        for the app to catch up; returns what was done."""
