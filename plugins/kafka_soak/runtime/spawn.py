"""Start a command detached from the caller, print its PID, and record how it ends.

A task process is short-lived and an Airflow worker may reap or kill its children, so instances, the
generator and the Kafka brokers are started through this: ``python -m kafka_soak.runtime.spawn LOG EXITS --
CMD...`` starts a supervisor in a new session and exits once the supervisor has started the command (output to
``LOG``) and told its PID. The supervisor waits for the command and appends one JSON line to ``EXITS`` when it
ends (``{"pid", "code", "signal", "at"}``): the exit code or signal of a process that is nobody's child, which
the run's app-health check judges against what the program asked for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def supervise(log_path: str, exits_path: str, command: list[str]) -> None:
    """Run ``command``, print its PID on stdout, close stdout, wait, record the exit."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with open(log_path, "ab", buffering=0) as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                close_fds=True, env=os.environ)
    print(proc.pid, flush=True)
    os.close(sys.stdout.fileno())
    code = proc.wait()
    record = {"pid": proc.pid, "code": code if code >= 0 else None,
              "signal": signal.Signals(-code).name if code < 0 else None, "at": time.time()}
    with open(exits_path, "a") as exits:
        exits.write(json.dumps(record) + "\n")


def main() -> None:
    args = sys.argv[1:]
    supervising = args[:1] == ["--supervise"]
    if supervising:
        args = args[1:]
    if len(args) < 4 or args[2] != "--":
        sys.exit("usage: python -m kafka_soak.runtime.spawn LOG EXITS -- CMD...")
    log_path, exits_path, _sep, *command = args
    if supervising:
        supervise(log_path, exits_path, command)
        return
    with open(log_path, "ab", buffering=0) as log:  # the supervisor's own complaints, should it fail to start
        supervisor = subprocess.Popen([sys.executable, "-m", "kafka_soak.runtime.spawn", "--supervise", *args],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                      start_new_session=True, close_fds=True, env=os.environ)
    assert supervisor.stdout is not None
    pid = supervisor.stdout.readline().decode().strip()
    if not pid:
        sys.exit(f"could not start {command[0]}: see {log_path}")
    print(pid, flush=True)


if __name__ == "__main__":
    main()
