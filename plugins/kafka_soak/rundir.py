"""Where a run's evidence lives: ``$SOAK_RUNS_DIR/<dag_id>/<run_id>/``, kept after the run.

Default ``SOAK_RUNS_DIR`` is ``runs/`` at the project root. ``<dag_id>/latest`` points at the newest run.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def runs_root() -> Path:
    return Path(os.environ.get("SOAK_RUNS_DIR", PROJECT_ROOT / "runs")).resolve()


def safe_name(run_id: str) -> str:
    """A run id as a directory name (run ids carry ':' and '+')."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", run_id)


def run_dir(dag_id: str, run_id: str, create: bool = False) -> Path:
    path = runs_root() / dag_id / safe_name(run_id)
    if create and not path.exists():
        path.mkdir(parents=True)
        latest = path.parent / "latest"
        tmp = path.parent / f".latest.{os.getpid()}"
        tmp.symlink_to(path.name)
        tmp.replace(latest)
    return path


def for_context(context: Any, create: bool = False) -> Path:
    """The run directory of the DAG run a task executes in."""
    return run_dir(context["dag"].dag_id, context["run_id"], create=create)


def write_text(path: Path, text: str) -> None:
    """Write atomically, so a reader (a person's browser, the Airflow UI) never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str))


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(record, sort_keys=True, default=str) + "\n")


def journal(run_dir: Path, event: str, **fields: Any) -> None:
    """Note a change of the run as it happens (an instance started or stopped, a broker down, a lag sample) in
    ``events.jsonl``: the report draws its timeline from it, including what the drain and teardown did."""
    append_jsonl(run_dir / "events.jsonl", {"t": time.time(), "event": event, **fields})
