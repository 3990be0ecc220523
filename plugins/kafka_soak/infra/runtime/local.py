"""The local runtime: instances (and other long-lived helpers) as OS processes on this machine.

Processes are started detached so they outlive the task that started them; each one is recorded in
the run directory (PID and start time, so a recycled PID is never mistaken for it) and managed with
psutil. This runtime assumes every task of the run executes on the same machine.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

import kafka_soak
from kafka_soak.infra.runtime.registry import ProcessRecord, Registry
from kafka_soak.infra.runtime.spawn import NO_RESTART, Restart

log = logging.getLogger(__name__)

PLUGINS_DIR = Path(kafka_soak.__file__).resolve().parent.parent
# The supervisor's module (``spawn``), and where it was before: a run started by an earlier release of the suite is
# still found, and reaped, by this one.
SUPERVISORS = ("kafka_soak.infra.runtime.spawn", "kafka_soak.clients.runtime.spawn")


def exited(proc: psutil.Process, timeout: float) -> bool:
    """Whether ``proc``, which is not this process's child, exited within ``timeout`` seconds (told by its pidfd, the
    moment it exits). psutil's ``wait`` also waits until the process is reaped, by the machine's init for an orphan
    such as a supervisor, and an init that reaps lazily adds that to every stop (1.4 to 1.7 s each on these
    machines)."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return True
    except OSError:  # a kernel without pidfds (before Linux 5.3): psutil's wait, the reaping included
        try:
            proc.wait(timeout)
        except psutil.TimeoutExpired:
            return False
        except psutil.NoSuchProcess:
            pass
        return True
    try:
        if not proc.is_running():  # its PID was another process's by the time the descriptor was opened
            return True
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    finally:
        os.close(pidfd)


def signal_group(pid: int, signum: signal.Signals) -> None:
    """``signum`` to the process group the supervisor started ``pid`` in (``spawn.launch``: its own, led by it), or
    to ``pid`` alone when it leads no group (a process started before process groups); nothing when it is gone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:  # the leader is gone: its group may live on
        try:
            os.killpg(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def python_command(module: str, *args: str) -> list[str]:
    """A command running one of kafka_soak's modules with this interpreter."""
    return [sys.executable, "-m", module, *args]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGINS_DIR), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class LocalProcesses:
    """Named detached processes of one run, registered under ``<run_dir>/processes/``."""

    def __init__(self, run_dir: Path) -> None:
        self.registry = Registry(run_dir)

    def record(self, name: str) -> ProcessRecord | None:
        return self.registry.record(name)

    def process(self, name: str) -> psutil.Process | None:
        """The live process registered as ``name``, or None (exited, zombie, or PID reused)."""
        rec = self.record(name)
        if rec is None:
            return None
        try:
            proc = psutil.Process(rec.pid)
            if abs(proc.create_time() - rec.create_time) > 0.01 or proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except psutil.NoSuchProcess:
            return None

    def supervisor(self, name: str) -> psutil.Process | None:
        """The live supervisor of ``name`` (``runtime.spawn``): it outlives its process while a restart policy waits
        out a backoff."""
        rec = self.record(name)
        if rec is None or rec.supervisor is None:
            return None
        try:
            proc = psutil.Process(rec.supervisor)
            command = proc.cmdline()
            if any(module in command for module in SUPERVISORS) and rec.log in command:  # not a reused PID
                return proc
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            pass
        return None

    def is_alive(self, name: str) -> bool:
        """Running, paused, or between two runs of a restart policy (as a crash-looping pod still exists)."""
        return self.process(name) is not None or self.supervisor(name) is not None

    def start(self, name: str, command: list[str], log_path: Path, step: str = "",
              extra_env: dict[str, str] | None = None, image: str | None = None,
              restart: Restart | None = None, remove_after: Path | None = None,
              files: dict[str, str] | None = None) -> ProcessRecord:
        """``image`` and ``files`` are for containers; a local process runs ``command`` as it is, restarted by its
        supervisor under ``restart``; the supervisor removes ``remove_after`` when it ends."""
        if files:
            raise ValueError("runtime 'local' puts no files into a process: write them into a directory named in remove_after")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        policy = ["--restart", json.dumps({"backoff_s": restart.backoff_s, "journal": {**restart.journal, "name": name}})
                  ] if restart else []
        policy += ["--remove", str(remove_after)] if remove_after else []
        out = subprocess.run(python_command(SUPERVISORS[0], "--name", name, *policy, str(log_path),
                                            str(self.registry.exits_file), "--", *command),
                             env={**child_env(), **(extra_env or {})}, capture_output=True, text=True, check=True)
        pid = int(out.stdout.split()[0])
        rec = self.registry.record(name)  # written by the supervisor (runtime.spawn) before it told the PID
        if rec is None:
            raise RuntimeError(f"{name} (pid {pid}) started but its supervisor did not register it in {self.registry.path}")
        if not rec.create_time:
            log.warning("%s (pid %d) exited as soon as it started; see %s", name, pid, log_path)
        log.info("started %s: pid %d, log %s", name, pid, log_path)
        return rec

    def no_restart(self, name: str) -> psutil.Process | None:
        """Tell ``name``'s supervisor that the suite ends it, so no restart policy brings it back; returns the
        supervisor, which the caller waits for once the process has ended (see ``settle``)."""
        supervisor = self.supervisor(name)
        if supervisor is not None:
            supervisor.send_signal(NO_RESTART)
        return supervisor

    @staticmethod
    def settle(supervisor: psutil.Process | None, timeout: float = 10.0) -> None:
        """Wait for a supervisor told ``no_restart`` to end: then no process of that name is left, not even one
        it was starting when told."""
        if supervisor is not None and not exited(supervisor, timeout):
            log.warning("supervisor pid %d still running %.0f s after its process ended", supervisor.pid, timeout)

    def stop(self, name: str, timeout: float = 30.0) -> int | None:
        """SIGTERM (after SIGCONT, should it be paused), then SIGKILL after ``timeout`` seconds; returns the
        exit code when known."""
        supervisor = self.no_restart(name)
        try:
            pid = self._stop(name, timeout)
        finally:
            self.settle(supervisor)
        return None if pid is None else self._ended(name, pid, "stopped")

    def _stop(self, name: str, timeout: float) -> int | None:
        """End the process, gracefully if it lets itself; its pid, None if it was not running."""
        proc = self.process(name)
        if proc is None:
            return None
        signal_group(proc.pid, signal.SIGCONT)
        signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except psutil.TimeoutExpired:
            log.warning("%s (pid %d) ignored SIGTERM for %.0f s: killing it", name, proc.pid, timeout)
            signal_group(proc.pid, signal.SIGKILL)
            proc.wait(10)
        signal_group(proc.pid, signal.SIGKILL)  # what the process started and left behind ends with it
        return proc.pid

    def kill(self, name: str) -> int | None:
        """SIGKILL to the process and every process of its group: no shutdown hook runs (no commit, no leave-group);
        returns the exit code."""
        supervisor = self.no_restart(name)
        proc = self.process(name)
        if proc is not None:
            signal_group(proc.pid, signal.SIGKILL)
            proc.wait(10)
        self.settle(supervisor)
        return None if proc is None else self._ended(name, proc.pid, "killed")

    def _ended(self, name: str, pid: int, how: str) -> int | None:
        """The exit code of a process its supervisor has recorded: read once the supervisor ended (``settle``), which
        it does only after recording it, so a busy machine's slow supervisor cannot make it unknown."""
        code = self.exit_code(pid)
        log.info("%s %s (pid %d), exit code %s", how, name, pid, code)
        return code

    def exit_code(self, pid: int, wait_s: float = 2.0) -> int | None:
        """The exit code its supervisor recorded (negative: the signal that ended it); None if not recorded."""
        deadline = time.monotonic() + wait_s
        while True:
            ended = [e for e in self.registry.exits() if e["pid"] == pid]
            if ended:
                return ended[-1]["code"] if ended[-1]["code"] is not None else -signal.Signals[ended[-1]["signal"]]
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def pause(self, name: str) -> bool:
        """SIGSTOP, returning once the process is stopped; False when it is not alive."""
        return self._signal(name, signal.SIGSTOP, paused=True)

    def resume(self, name: str) -> bool:
        """SIGCONT, returning once the process runs again; False when it is not alive."""
        return self._signal(name, signal.SIGCONT, paused=False)

    def is_paused(self, name: str) -> bool:
        proc = self.process(name)
        return proc is not None and proc.status() == psutil.STATUS_STOPPED

    def _signal(self, name: str, signum: signal.Signals, paused: bool, timeout: float = 5.0) -> bool:
        proc = self.process(name)
        if proc is None:
            return False
        signal_group(proc.pid, signum)
        deadline = time.monotonic() + timeout
        while self.is_paused(name) != paused and time.monotonic() < deadline:
            time.sleep(0.01)
        log.info("%s %s (pid %d)", "paused" if paused else "resumed", name, proc.pid)
        return True

    def names(self) -> list[str]:
        return self.registry.names(containers=False)

    def collect_logs(self) -> None:
        """Nothing to do: a local process writes its log file itself."""

    def clean_up(self) -> list[str]:
        """Nothing is left of a stopped process."""
        return []
