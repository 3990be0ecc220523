"""How a test session's pytest-xdist workers share the machine: an end-to-end test or a soak run holds a share of it,
and the known-bug runs, whose faults keep margins on the clock, hold it alone.

Those margins are made for a machine two to three times slower than a quiet one (test_known_bugs says how). While the
known-bug runs go, the other workers' soak runs wait, so the session may run a third worker without eating into them;
outside that window the three workers fill the time the clocked programs of two would leave idle.

Two lock files in a directory every worker of the session shares (``configure``): ``runs``, shared by each holder of
a share and held alone by ``alone``; ``gate``, which ``alone`` takes first, so a worker waiting to be alone is not kept
waiting by shares taken after it asked. Within one process a share or ``alone`` is taken once: the known-bug runs'
threads and a test's runs inside its own share take nothing more."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCKS_ENV = "SOAK_TEST_MACHINE_LOCKS"
_state = {"holders": 0, "alone": False}
_guard = threading.Lock()
_taken: list[int] = []  # this process's open lock files, while it holds a share or the machine


def configure(session_dir: Path) -> None:
    """Where this session's workers keep their locks (the session's base temporary directory, the same for all)."""
    os.environ[LOCKS_ENV] = str(session_dir)


def _open(name: str) -> int:
    return os.open(Path(os.environ[LOCKS_ENV], f".machine-{name}.lock"), os.O_CREAT | os.O_RDWR, 0o600)


@contextmanager
def share() -> Iterator[None]:
    """Hold a share of the machine: waits while a worker holds it alone, or waits to."""
    with _guard:
        first = _state["holders"] == 0 and not _state["alone"] and LOCKS_ENV in os.environ
        _state["holders"] += 1
        if first:
            gate, runs = _open("gate"), _open("runs")
            fcntl.flock(gate, fcntl.LOCK_SH)
            fcntl.flock(runs, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
            os.close(gate)
            _taken.append(runs)
    try:
        yield
    finally:
        with _guard:
            _state["holders"] -= 1
            if _state["holders"] == 0 and _taken:
                os.close(_taken.pop())  # closing the file releases its lock


@contextmanager
def alone() -> Iterator[None]:
    """Hold the machine alone: once every share taken before has been given back; shares asked for meanwhile wait."""
    assert _state["holders"] == 0, "a process holding a share would wait on itself"
    if LOCKS_ENV not in os.environ:
        yield
        return
    gate, runs = _open("gate"), _open("runs")
    fcntl.flock(gate, fcntl.LOCK_EX)
    fcntl.flock(runs, fcntl.LOCK_EX)
    _state["alone"] = True
    try:
        yield
    finally:
        _state["alone"] = False
        os.close(runs)
        os.close(gate)
