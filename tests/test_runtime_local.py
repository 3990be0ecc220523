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


class StopFailsFor(LocalProcesses):
    """The local runtime with one injected fault: stopping ``broken`` raises (as a hung engine call would)."""

    def __init__(self, run_dir, broken: str) -> None:
        super().__init__(run_dir)
        self.broken = broken

    def stop(self, name, timeout=30.0):
        if name == self.broken:
            raise OSError(f"cannot signal {name}")
        return super().stop(name, timeout)


def test_an_instance_that_fails_to_stop_stops_none_of_the_others_and_nothing_is_left(tmp_path):
    from kafka_soak import params
    from kafka_soak.instances import Instances
    from kafka_soak.subjects import Subject

    plan = params.check({"app_command": SLEEPER, "instances": 3}).as_dict()
    subject = Subject("", "app", "", "out", "assertions")
    cluster = {"backend": "local", "bootstrap_servers": "127.0.0.1:9", "topics": {"input": "in", "changelog": "cl"},
               "subjects": [subject.as_dict()]}
    instances = Instances.for_run(tmp_path, cluster, plan)
    instances.runtime = StopFailsFor(tmp_path, broken="instance-2")
    pids = [instances.start(n, 0).pid for n in (1, 2, 3)]
    with pytest.raises(RuntimeError, match=r"could not stop instance-2: cannot signal instance-2 \(killed instead\)"):
        instances.stop_all(timeout=10)
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
