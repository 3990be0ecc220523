"""The local runtime on real processes: kill, pause and resume converge when repeated (a retried step)."""

import os
import shlex
import subprocess
import sys

import psutil
import pytest
from support.waits import until

from kafka_soak import run_plan
from kafka_soak.infra.runtime.local import LocalProcesses, exited

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


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("end", ["stop", "kill"])
def test_a_wrappers_children_are_paused_and_end_with_it(processes, tmp_path, end):
    """An app started through a wrapper (``sh -c``, a launcher script) runs in a process group of its own: a pause
    stops the wrapper's child too, and a stop or a kill leaves none of them behind (they once survived, signalled by
    the registered PID alone)."""
    child_pid = tmp_path / "child.pid"
    wrapper = ["sh", "-c", 'sleep 600 & echo $! > "$0"; wait', str(child_pid)]
    processes.start("wrapped", wrapper, tmp_path / "wrapped.log")
    child = int(until(lambda: child_pid.exists() and child_pid.read_text().strip(), "child the wrapper started"))
    assert processes.pause("wrapped")
    until(lambda: psutil.Process(child).status() == psutil.STATUS_STOPPED, "pause of the wrapper's child")
    assert processes.resume("wrapped")
    getattr(processes, end)("wrapped")
    until(lambda: gone(child), f"end of the wrapper's child on its {end}")


def test_a_process_whose_registration_cannot_be_written_is_not_left_running(tmp_path):
    """A full disk when the supervisor writes the registry record: the start fails, and the command (its whole group)
    is ended rather than left running where no teardown or reaper can find it. (The record's staging file is a
    directory here, which refuses the write as a full disk does.)"""
    import subprocess

    processes = LocalProcesses(tmp_path)
    processes.registry.path.mkdir(parents=True, exist_ok=True)
    (processes.registry.path / ".orphan.tmp").mkdir()
    pid_file = tmp_path / "orphan.pid"
    with pytest.raises(subprocess.CalledProcessError):
        processes.start("orphan", ["sh", "-c", 'echo $$ > "$0"; exec sleep 600', str(pid_file)], tmp_path / "o.log")
    until(lambda: not pid_file.exists() or gone(int(pid_file.read_text() or 0) or 1), "end of the unregistered process")


def test_a_process_whose_starter_dies_right_after_the_start_is_registered_and_reaped(tmp_path):
    """The task that starts a process can be killed the moment the start returns (an interrupted `make soak` whose
    toggle step was starting an instance): the supervisor registered it already, so the run's reaper finds and stops
    it. The start command is run bare here, as that task's last act."""
    import subprocess

    from kafka_soak import reaper
    from kafka_soak.infra.runtime.local import child_env, python_command
    from kafka_soak.infra.runtime.registry import Registry

    registry = Registry(tmp_path)
    out = subprocess.run(python_command("kafka_soak.infra.runtime.spawn", "--name", "instance-2", str(tmp_path / "w.log"),
                                        str(registry.exits_file), "--", *SLEEPER),
                         env=child_env(), capture_output=True, text=True, check=True)
    pid, supervisor = map(int, out.stdout.split())
    record = registry.record("instance-2")
    assert record is not None and (record.pid, record.supervisor) == (pid, supervisor)
    assert record.create_time == psutil.Process(pid).create_time()
    assert reaper.reap(tmp_path, "its starter died") == {"instance-2": -15}
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not psutil.pid_exists(supervisor) or psutil.Process(supervisor).status() == psutil.STATUS_ZOMBIE


def test_a_supervisor_started_under_the_module_path_of_an_earlier_release_is_still_found_and_reaped(tmp_path):
    """A run started before the supervisor moved (``kafka_soak.clients.runtime.spawn``) left it waiting out a backoff:
    the next run's reaper knows it by its command line and stops it."""
    import subprocess
    import time

    from kafka_soak import reaper
    from kafka_soak.infra.runtime.registry import ProcessRecord, Registry

    log = str(tmp_path / "w.log")
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    earlier = subprocess.Popen([*SLEEPER, "kafka_soak.clients.runtime.spawn", "--name", "instance-1", log])
    try:
        Registry(tmp_path).write(ProcessRecord("instance-1", ended.pid, time.time() - 3600, log, time.time(),
                                               supervisor=earlier.pid))
        assert LocalProcesses(tmp_path).supervisor("instance-1").pid == earlier.pid
        assert list(reaper.reap(tmp_path, "left by an earlier release")) == ["instance-1"]
        assert earlier.wait(timeout=30) is not None
    finally:
        earlier.kill()
        earlier.wait()


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
    from kafka_soak.clients.instances import Instances
    from kafka_soak.clients.subjects import Subject

    plan = run_plan.check({"app_command": SLEEPER, "instances": 3})
    subject = Subject("", "app", "", {"output": "out", "changelog": "cl", "assertions": "assertions"})
    cluster = {"backend": "local", "bootstrap_servers": "127.0.0.1:9", "topics": {"input": "in"},
               "subjects": [subject.as_dict()]}
    instances = Instances.for_run(tmp_path, cluster, plan)
    instances.runtime = StopFailsFor(tmp_path, broken="instance-2")
    pids = [instances.start(n, 0).pid for n in (1, 2, 3)]
    with pytest.raises(RuntimeError, match=r"could not stop instance-2: cannot signal instance-2 \(killed instead\)"):
        instances.stop_all(timeout=10)
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


# A process that fails on its first two runs and then sleeps: a crash loop that recovers. Its run count lives in a file.
FLAKY = [sys.executable, "-c", "import os, pathlib, sys, time; p = pathlib.Path(sys.argv[1]); n = int(p.read_text() or 0) "
         "if p.exists() else 0; p.write_text(str(n + 1)); print('SOAK_RESTART', os.environ['SOAK_RESTART'], flush=True); "
         "sys.exit(3) if n < 2 else time.sleep(120)"]


def journal_events(run_dir):
    import json

    path = run_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_restart_policy_brings_a_crashed_process_back_with_a_doubling_backoff_and_its_private_dir(processes,
                                                                                                 tmp_path):
    from kafka_soak.infra.runtime.spawn import Restart

    runs, private = tmp_path / "runs", tmp_path / "private"
    private.mkdir()
    (private / "app.properties").write_text("sasl.jaas.config=...\n")
    first = processes.start("worker-1", [*FLAKY, str(runs)], tmp_path / "w.log",
                            restart=Restart(0.2, {"instance": 1, "subject": "", "step": "0", "log": "w.log"}),
                            remove_after=private)
    until(lambda: runs.exists() and runs.read_text() == "3" and processes.process("worker-1") is not None,
          "third start of the crash-looping process")
    assert (private / "app.properties").exists(), "a restarted instance still finds its private directory"
    record = processes.record("worker-1")
    assert record.pid != first.pid, "the registry follows the restarted process"
    events = journal_events(tmp_path)
    exits = [e for e in events if e["event"] == "exit"]
    restarts = [e for e in events if e["event"] == "restart"]
    assert [e["exit_code"] for e in exits] == [3, 3] and [e["backoff_s"] for e in exits] == [0.2, 0.4]
    assert [e["restart"] for e in restarts] == [1, 2] and restarts[-1]["pid"] == record.pid
    assert all(e["instance"] == 1 and e["name"] == "worker-1" for e in exits + restarts)
    assert [e["code"] for e in processes.registry.exits()] == [3, 3]
    assert processes.stop("worker-1", timeout=10) is not None
    assert not processes.is_alive("worker-1") and processes.supervisor("worker-1") is None
    assert not private.exists(), "the supervisor removes the instance's private directory once the instance has ended"
    output = (tmp_path / "w.log").read_text()
    assert "restarting in 0.2 s" in output
    assert [line for line in output.splitlines() if line.startswith("SOAK_RESTART")] == [
        "SOAK_RESTART 0", "SOAK_RESTART 1", "SOAK_RESTART 2"], "each start is told its restart count"


def test_a_stop_during_the_backoff_ends_the_restart_loop(processes, tmp_path):
    from kafka_soak.infra.runtime.spawn import Restart

    crashing = [sys.executable, "-c", "import sys; sys.exit(5)"]
    processes.start("worker-2", crashing, tmp_path / "w.log", restart=Restart(30, {"instance": 2, "log": "w.log"}))
    until(processes.registry.exits, "exit of the crashing process")
    assert processes.is_alive("worker-2"), "a process waiting out its backoff still exists, as a crash-looping pod"
    assert processes.stop("worker-2", timeout=5) is None
    assert not processes.is_alive("worker-2")
    assert not [e for e in journal_events(tmp_path) if e["event"] == "restart"]


def test_the_suite_s_own_kill_is_not_restarted(processes, tmp_path):
    from kafka_soak.infra.runtime.spawn import Restart

    private = tmp_path / "private"
    private.mkdir()
    (private / "librocksdbjni1.so").write_bytes(b"\0")  # what a JVM killed with -9 leaves of its temporary files
    processes.start("worker-3", SLEEPER, tmp_path / "w.log", restart=Restart(0.1, {"instance": 3, "log": "w.log"}),
                    remove_after=private)
    assert processes.kill("worker-3") == -9
    assert not processes.is_alive("worker-3")
    assert not private.exists(), "what the killed process left in its private directory goes with it"
    assert not [e for e in journal_events(tmp_path) if e["event"] in ("exit", "restart")]


def test_an_orphan_has_exited_once_it_ends_not_once_init_reaps_it():
    """A supervisor is nobody's child once its starter exits; ``exited`` says it ended as it ends (its pidfd), where
    psutil's wait would also wait for the machine's init to reap it."""
    out = subprocess.run(["sh", "-c", f"{shlex.join(SLEEPER)} >/dev/null 2>&1 & echo $!"], capture_output=True,
                         text=True, check=True)
    orphan = psutil.Process(int(out.stdout))
    try:
        assert orphan.ppid() != os.getpid() and not exited(orphan, 0.2), "still running"
    finally:
        orphan.terminate()
    assert exited(orphan, 10)
    assert exited(orphan, 0), "and stays so, reaped or not"
