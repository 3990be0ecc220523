"""The local runtime on real processes: kill, pause and resume converge when repeated (a retried step)."""

import sys

import psutil
import pytest

from kafka_soak.runtime.local import LocalProcesses

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


@pytest.fixture
def processes(tmp_path):
    registry = LocalProcesses(tmp_path)
    yield registry
    for name in registry.names():
        if registry.process(name) is not None:
            registry.kill(name)


def test_pause_resume_and_graceful_stop_of_a_paused_process(processes, tmp_path):
    processes.start("worker", SLEEPER, tmp_path / "w.log")
    assert processes.pause("worker") and processes.pause("worker")
    assert processes.is_paused("worker")
    assert processes.resume("worker") and not processes.is_paused("worker")
    processes.pause("worker")
    pid = processes.record("worker").pid
    processes.stop("worker", timeout=10)
    assert processes.process("worker") is None and not psutil.pid_exists(pid) or \
        psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, "a paused process must still stop on SIGTERM"
    assert processes.stop("worker") is None and not processes.pause("worker") and not processes.resume("worker")


def test_kill_is_sigkill_and_idempotent(processes, tmp_path):
    processes.start("worker", SLEEPER, tmp_path / "w.log")
    pid = processes.record("worker").pid
    processes.kill("worker")
    assert processes.process("worker") is None and not psutil.pid_exists(pid)
    assert processes.kill("worker") is None
    assert processes.process("worker") is None
