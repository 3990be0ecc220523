"""What no run may leave behind: a secured cluster's password in its files, or a process it registered; and what a run
refused by `make soak` must not make."""

from __future__ import annotations

import json
from pathlib import Path

# The secured clusters' password (conftest's connections): no file of a run may hold it.
SECRET = "s3cret-Pa55word-for-the-soak"


def leaked_secret(run_dir: Path) -> list[Path]:
    """The files of a run that hold the secured cluster's password (none may)."""
    return [p for p in run_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def live_processes(run_dir: Path) -> list[str]:
    """Processes registered by a run that are still alive."""
    from kafka_soak.infra.runtime.local import LocalProcesses

    processes = LocalProcesses(run_dir)
    return [name for name in processes.names() if processes.process(name) is not None]


def cli_refusal(conf: dict, capsys, runs: Path, scenario: str = "soak_eos_id_assignment") -> str:
    """`make soak`'s command (``kafka_soak.cli``, in this process: the refusal never reaches Airflow) on ``conf``:
    refused with exit code 2 and one line on stderr, no traceback, nothing made under ``runs``. Returns the line."""
    from kafka_soak import cli

    code = cli.main(["soak", scenario, "--conf", json.dumps(conf)])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err and err.count("\n") == 1 and err.startswith("kafka-soak: "), err
    assert list(runs.iterdir()) == [], "a refused run creates nothing"
    return err
