"""Start a command detached from the caller (new session, not our child) and print its PID.

A task process is short-lived and an Airflow worker may reap or kill its children, so instances,
the generator and the Kafka brokers are started through this tiny intermediate: it starts the
command in a new session with output to a log file, prints the PID and exits, leaving the command
to init. ``python -m kafka_soak.runtime.spawn LOG -- CMD...``
"""

from __future__ import annotations

import os
import subprocess
import sys


def main() -> None:
    log_path, sep, *command = sys.argv[1:]
    if sep != "--" or not command:
        sys.exit("usage: python -m kafka_soak.runtime.spawn LOG -- CMD...")
    with open(log_path, "ab", buffering=0) as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=os.environ)
    print(proc.pid, flush=True)


if __name__ == "__main__":
    main()
