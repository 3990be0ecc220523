"""What no run may leave behind: a secured cluster's password in its files, or a process it registered."""

from __future__ import annotations

from pathlib import Path

# The secured clusters' password (conftest's connections): no file of a run may hold it.
SECRET = "s3cret-Pa55word-for-the-soak"


def leaked_secret(run_dir: Path) -> list[Path]:
    """The files of a run that hold the secured cluster's password (none may)."""
    return [p for p in run_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def live_processes(run_dir: Path) -> list[str]:
    """Processes registered by a run that are still alive."""
    from kafka_soak.runtime.local import LocalProcesses

    processes = LocalProcesses(run_dir)
    return [name for name in processes.names() if processes.process(name) is not None]
