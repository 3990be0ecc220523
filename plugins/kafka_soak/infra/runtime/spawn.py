"""Start a command detached from the caller, print its PID, record how it ends, and restart it if asked to.

A task process is short-lived and an Airflow worker may reap or kill its children, so instances, the
generator and the Kafka brokers are started through this: ``python -m kafka_soak.infra.runtime.spawn --name NAME LOG
EXITS -- CMD...`` starts a supervisor in a new session and exits once the supervisor has started the command
(output to ``LOG``), registered it as ``NAME`` in the run's registry (``EXITS``' directory) and told its PID (printed
with the supervisor's: ``PID SUPERVISOR_PID``). The supervisor registers, not the caller: a task killed right after
the start (an interrupted ``make soak``, a run marked failed) still leaves a process that its teardowns and the
reaper find. The supervisor waits for the command and appends one JSON line to ``EXITS`` when it ends (``{"pid",
"code", "signal", "at"}``): the exit code or signal of a process that is nobody's child, which the run's app-health
check judges against what the program asked for.

With ``--restart RESTART_JSON`` (``Restart``: a backoff and the instance's journal fields) the supervisor is the
instance's restart policy, as Kubernetes' kubelet or Compose's ``restart: on-failure`` are: a command that exits by
itself with anything but 0 is started again after a backoff that doubles with each consecutive failure (up to
``MAX_BACKOFF_S``; back to the first after a run of ``RESET_AFTER_S``). Each exit and restart is noted in the
run's journal, and the registry's record points at the new process, which finds its restart count in
``SOAK_RESTART`` (0 for the first start, as Kubernetes' restartCount). SIGUSR1 tells the supervisor that the suite
ends the instance (a stop, a kill): whatever the command's exit, it is not restarted.

With ``--remove PATH`` the supervisor removes the instance's private directory (a profile's properties file, which may
hold the cluster's credentials; its temporary files) once the instance has ended for good: restarts still find it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafka_soak.shared.contracts import RESTART_ENV
from kafka_soak.shared.rundir import append_jsonl, journal

MAX_BACKOFF_S = 30.0  # CrashLoopBackOff's doubling, with a cap that suits a soak of minutes
RESET_AFTER_S = 30.0  # a process that ran this long starts the backoff over
NO_RESTART = signal.SIGUSR1


@dataclass(frozen=True)
class Restart:
    """An instance's restart policy: its first backoff, and the fields of its journal events (instance, subject,
    step, log, name) so the report and the app-health check see every exit and restart."""

    backoff_s: float
    journal: dict[str, Any] = field(default_factory=dict)


def exit_record(pid: int, code: int) -> dict[str, Any]:
    return {"pid": pid, "code": code if code >= 0 else None,
            "signal": signal.Signals(-code).name if code < 0 else None, "at": time.time()}


def launch(log_path: str, command: list[str], restarts: int = 0) -> subprocess.Popen:
    """The command in a process group of its own (its PID is the group's id): a stop, kill or pause reaches the
    processes a wrapper (``sh -c …``, a launcher script) starts as well as the wrapper."""
    with open(log_path, "ab", buffering=0) as log:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                close_fds=True, start_new_session=True, env={**os.environ, RESTART_ENV: str(restarts)})


def supervise(name: str, log_path: str, exits_path: str, command: list[str], restart: Restart | None,
              remove: str | None = None) -> None:
    """``follow`` the command, then remove the instance's private directory ``remove``, whatever ended it."""
    try:
        follow(name, log_path, exits_path, command, restart)
    finally:
        if remove:
            shutil.rmtree(remove, ignore_errors=True)


def follow(name: str, log_path: str, exits_path: str, command: list[str], restart: Restart | None) -> None:
    """Run ``command``, register it as ``name``, print its PID on stdout, close stdout, wait, record the exit; under
    a restart policy, start it again after each failure until it exits with 0 or the suite ends it."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    ending: list[bool] = []
    signal.signal(NO_RESTART, lambda *_: ending.append(True))
    run_dir = Path(exits_path).parent.parent
    proc = launch(log_path, command)
    registered(run_dir, name, log_path, proc)
    print(proc.pid, flush=True)
    os.close(sys.stdout.fileno())
    backoff = restart.backoff_s if restart else 0.0
    restarts = 0
    ended_here = False  # the suite's stop or kill named the process before this one
    while True:
        started = time.monotonic()
        code = proc.wait()
        ended = exit_record(proc.pid, code)
        append_jsonl(Path(exits_path), ended)
        if ended_here:
            journal(run_dir, "stop", **restart.journal, pid=proc.pid, exit_code=ended["code"], by="supervisor")
        if restart is None or code == 0 or ending:
            return
        if time.monotonic() - started >= RESET_AFTER_S:
            backoff = restart.backoff_s
        journal(run_dir, "exit", **restart.journal, pid=proc.pid, exit_code=ended["code"], signal=ended["signal"],
                backoff_s=backoff)
        with open(log_path, "a") as log:
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} supervisor: exited by itself "
                      f"({ended['signal'] or 'code ' + str(ended['code'])}); restarting in {backoff:g} s ---\n")
        deadline = time.monotonic() + backoff
        while time.monotonic() < deadline and not ending:
            time.sleep(0.05)
        if ending:
            return
        restarts += 1
        proc = launch(log_path, command, restarts)
        registered(run_dir, name, log_path, proc)
        journal(run_dir, "restart", **restart.journal, pid=proc.pid, restart=restarts)
        if ending:  # the suite ended the instance while it was being restarted: end this one too
            proc.terminate()
            ended_here = True
        backoff = min(backoff * 2, MAX_BACKOFF_S)


def registered(run_dir: Path, name: str, log_path: str, proc: subprocess.Popen) -> None:
    """``register`` the process just started, or end it (its whole group) when its record cannot be written (a full
    disk): nothing may run that the run's teardowns and reaper cannot find."""
    try:
        register(run_dir, name, log_path, proc)
    except OSError:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


def register(run_dir: Path, name: str, log_path: str, proc: subprocess.Popen) -> None:
    """Point ``name``'s record in the run's registry (``runtime.Registry``) at ``proc``, just started."""
    import psutil  # after the launch: the command does not wait for this import

    from kafka_soak.infra.runtime.registry import ProcessRecord, Registry

    try:
        created = psutil.Process(proc.pid).create_time()
    except psutil.NoSuchProcess:  # ended already: the exit record says how
        created = 0.0
    Registry(run_dir).write(ProcessRecord(name, proc.pid, created, log_path, time.time(), supervisor=os.getpid()))


def main() -> None:
    args = sys.argv[1:]
    supervising = args[:1] == ["--supervise"]
    if supervising:
        args = args[1:]
    name = args[1] if args[:1] == ["--name"] and len(args) > 1 else ""
    args = args[2:] if name else args
    restart = remove = None
    if args[:1] == ["--restart"] and len(args) > 1:
        restart = Restart(**json.loads(args[1]))
        args = args[2:]
    if args[:1] == ["--remove"] and len(args) > 1:
        remove = args[1]
        args = args[2:]
    if not name or len(args) < 4 or args[2] != "--":
        sys.exit("usage: python -m kafka_soak.infra.runtime.spawn --name NAME [--restart RESTART_JSON] [--remove PATH] LOG "
                 "EXITS -- CMD...")
    log_path, exits_path, _sep, *command = args
    if supervising:
        supervise(name, log_path, exits_path, command, restart, remove)
        return
    policy = (["--restart", json.dumps(asdict(restart))] if restart else []) + (["--remove", remove] if remove else [])
    with open(log_path, "ab", buffering=0) as log:  # the supervisor's own complaints, should it fail to start
        supervisor = subprocess.Popen([sys.executable, "-m", "kafka_soak.infra.runtime.spawn", "--supervise", "--name", name,
                                       *policy, *args],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                      start_new_session=True, close_fds=True, env=os.environ)
    assert supervisor.stdout is not None
    pid = supervisor.stdout.readline().decode().strip()
    if not pid:
        sys.exit(f"could not start {command[0]}: see {log_path}")
    print(pid, supervisor.pid, flush=True)


if __name__ == "__main__":
    main()
