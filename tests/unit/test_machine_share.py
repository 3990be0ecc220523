"""How the test session's workers share the machine (support.machine_share): a worker that asks to be alone gets the
machine once the shares taken before are given back, and no share is taken while it waits or holds it."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from support import ROOT, machine_share

HOLD_A_SHARE = """
import sys
from support import machine_share
with machine_share.share():
    print("held", flush=True)
    sys.stdin.read()
"""


def free(lock: Path, mode: int) -> bool:
    """Whether another worker could take ``lock`` in ``mode`` now (asked without waiting)."""
    fd = os.open(lock, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_a_worker_alone_waits_for_the_shares_taken_before_and_keeps_new_ones_out(tmp_path, monkeypatch):
    monkeypatch.setenv(machine_share.LOCKS_ENV, str(tmp_path))
    gate, runs = tmp_path / ".machine-gate.lock", tmp_path / ".machine-runs.lock"
    other = subprocess.Popen([sys.executable, "-c", HOLD_A_SHARE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "tests")})
    try:
        assert other.stdout.readline() == "held\n"
        assert free(runs, fcntl.LOCK_SH) and not free(runs, fcntl.LOCK_EX)

        entered, leave = threading.Event(), threading.Event()

        def be_alone() -> None:
            with machine_share.alone():
                entered.set()
                with machine_share.share():  # this process's own runs while it holds the machine: nothing more to take
                    pass
                leave.wait(60)

        alone = threading.Thread(target=be_alone)
        alone.start()
        deadline = time.monotonic() + 30
        while free(gate, fcntl.LOCK_SH):  # until it asked: from then on no new share is given
            assert time.monotonic() < deadline, "alone() never took the gate"
            time.sleep(0.05)
        assert not entered.is_set(), "alone while another worker still holds its share"

        other.stdin.close()  # the other worker's run ends: its share is given back
        assert other.wait(30) == 0
        assert entered.wait(30)
        assert not free(runs, fcntl.LOCK_SH), "a share was free while a worker held the machine alone"
        leave.set()
        alone.join(30)
        assert free(gate, fcntl.LOCK_SH) and free(runs, fcntl.LOCK_EX)
    finally:
        leave_if_running(other)


def test_without_a_session_s_locks_a_run_takes_none(monkeypatch):
    """Benchmarks run scenarios through the same helper outside a test session: nothing to share there."""
    monkeypatch.delenv(machine_share.LOCKS_ENV, raising=False)
    with machine_share.alone(), machine_share.share():
        pass


def leave_if_running(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
