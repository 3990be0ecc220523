"""The program's fault kinds, one module each (``faults.kind`` says what a kind declares). A new kind is one module
here, one line in ``KINDS``, and the backend or runtime method its steps call."""

from __future__ import annotations

import re

from kafka_soak.faults.kind import FaultKind
from kafka_soak.faults.kinds import broker, kill, network, pause, stall, toggle, upgrade, wait

# In the order the program's grammar lists them; the drain undoes the last first (a broker moved by an upgrade is up
# before anything else is undone, links are healed before a broker comes up, a broker is up before an instance that
# needs it resumes, and a paused instance resumes before the drain waits for its stalled thread).
KINDS: tuple[FaultKind, ...] = (toggle.KIND, kill.KIND, stall.KIND, pause.KIND, broker.KIND, network.INSTANCES,
                                network.BROKERS, upgrade.BROKERS, upgrade.APP, wait.AT_WORK, wait.REBALANCE)


# The kinds a random program can draw (param random_program's faults), by name: those with ``draw``. A rolling upgrade
# is not drawn: it goes one way, to a release a run names.
DRAWN: dict[str, FaultKind] = {kind.name: kind for kind in KINDS if hasattr(kind, "draw")}


def matching(token: str) -> tuple[FaultKind, re.Match[str]] | None:
    """The kind whose tokens ``token`` is, with what it read of it."""
    return next(((kind, match) for kind in KINDS if (match := kind.pattern.match(token))), None)


def of(action: str) -> FaultKind:
    """The kind whose steps lead to ``action``."""
    return next(kind for kind in KINDS if action in kind.actions)
