"""Waiting on an event in a test.

A test waits for what it needs to see (a line in a log, a file, a process state), never for a number of seconds; the
timeout is only a bound that turns a hang into a failure that names what never came. Bounds are generous because a
passing test never reaches them, and a busy machine (a load average of 20 beside a night's soak) takes long.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(check: Callable[[], T], what: str, timeout_s: float = 60.0, every_s: float = 0.05,
          detail: Callable[[], str] | None = None) -> T:
    """``check()``'s first truthy value, polled every ``every_s``; once ``timeout_s`` has passed without one, the test
    fails with "no ``what`` after ``timeout_s`` s", and ``detail()`` (a log's tail, read only then) below it."""
    deadline = time.monotonic() + timeout_s
    while not (value := check()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"no {what} after {timeout_s:.0f} s" + (f"\n{detail()}" if detail else ""))
        time.sleep(every_s)
    return value
