"""Where a run's evidence lives: ``$SOAK_RUNS_DIR/<dag_id>/<run_id>/``, kept after the run; what its files are
called, and how they are written and read back.

Default ``SOAK_RUNS_DIR`` is ``runs/`` at the project root. ``<dag_id>/latest`` points at the newest run. Each
attempt of a DAG run (a Clear starts a new one) has a directory of its own: ``<run>``, ``<run>.attempt-2``, ...

The one owner of the run directory for the Airflow side and the Spark job alike (shipped to it with ``--py-files``):
it imports nothing of the project's and nothing outside the standard library.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PACKAGE = Path(__file__).resolve().parents[1]  # kafka_soak/, this module being kafka_soak/shared/rundir.py
# What the suite ships besides its code, by the name it has inside an installed package (``pip install``), with where
# it is in a checkout: the checker's job and its suites, the Kafka Streams reference app's sources.
RESOURCES = {"spark_jobs": "spark_jobs", "expectations": "expectations", "streams_app": "apps/streams"}
# A checkout (plugins/kafka_soak beside spark_jobs/) keeps evidence and caches at its root; an installed package keeps
# them under SOAK_HOME (default ~/kafka-soak).
_CHECKOUT = PACKAGE.parents[1]
IS_CHECKOUT = (_CHECKOUT / "plugins" / PACKAGE.name).is_dir() and (_CHECKOUT / "spark_jobs").is_dir()
PROJECT_ROOT = _CHECKOUT if IS_CHECKOUT else Path(os.environ.get("SOAK_HOME", Path.home() / "kafka-soak"))


def resource(name: str) -> Path:
    """One of the ``RESOURCES``: at the checkout's root, or inside the installed package."""
    return _CHECKOUT / RESOURCES[name] if IS_CHECKOUT else PACKAGE / name

# The files of a run directory, by who writes them: check_params; provision; the program's steps; the drain; the
# teardowns (instances' health, quotas' usage); the checker (its verdict, the report's timeline, Data Docs, one
# directory per subject of a matrix); the alerting; the report; `make soak` (Airflow's log of the run).
PARAMS = "params.json"
STATE = "state"  # the instances' state directories ({state_dir}): the app's data, never served
STALLS = "stalls"  # one directory per instance or broker the program stalls: its arms, traces, agent's rules (stalls.py)
APP_VERSIONS = "app_versions.json"  # the version each instance was moved to (the program's N^V), by process name
CLUSTER = "cluster.json"
PROGRAM, STEPS, EVENTS = "program.json", "program.jsonl", "events.jsonl"
GENERATOR = "generator.json"
DRAIN = "drain.json"
HEALTH, QUOTAS = "health.json", "quotas.json"
VERDICT, TIMELINE, DATA_DOCS, SUBJECTS = "verdict.json", "timeline.json", "data_docs", "subjects"
BROKERS = "brokers"  # a broker version matrix: one directory per Apache Kafka release, each laid out as a run's
FAILURES = "failures.jsonl"  # why each failed task failed (alerting.record_task_failure)
REPORT = "report.html"
DAGS_TEST_LOG = "dags-test.log"
# Set by ``make soak`` for the Airflow process it starts; the run's params.json keeps it (``launch``), so the CLI knows
# its own run from a scheduled or triggered one of the same DAG that runs beside it.
LAUNCH_ENV = "SOAK_LAUNCH"
LOGS = "logs"  # one log per process and program step
LATEST = "latest"  # <dag_id>/latest: a link to the newest run directory
ATTEMPT = re.compile(r"\.attempt-(\d+)$")


def runs_root() -> Path:
    return Path(os.environ.get("SOAK_RUNS_DIR", PROJECT_ROOT / "runs")).resolve()


def safe_name(run_id: str) -> str:
    """A run id as a directory name of its own: run ids carry ':' and '+', and two ids that differ only there (or
    one named like the ``latest`` link or a hidden file) must not share a directory, so an altered name gets a
    digest of the id."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", run_id)
    if safe != run_id or safe == LATEST or safe.startswith(".") or ATTEMPT.search(safe):
        safe = f"{safe.lstrip('.') or 'run'}-{hashlib.sha256(run_id.encode()).hexdigest()[:8]}"
    return safe


def attempt_name(run_id: str, attempt: int) -> str:
    """The directory of one attempt of a DAG run: the first has the run's name; each Clear of the run is a fresh
    attempt beside it (``<name>.attempt-2``), so nothing of an earlier attempt is reused or overwritten."""
    return safe_name(run_id) + (f".attempt-{attempt}" if attempt > 1 else "")


def attempts(dag_id: str, run_id: str, root: Path | None = None) -> list[Path]:
    """The attempt directories of a DAG run, first to newest."""
    dag_dir, name = (root or runs_root()) / dag_id, safe_name(run_id)
    found = [p for p in dag_dir.glob(f"{glob.escape(name)}*") if p.is_dir() and not p.is_symlink()
             and (p.name == name or p.name.removeprefix(name + ".attempt-").isdigit())]
    return sorted(found, key=lambda p: int(ATTEMPT.search(p.name)[1]) if ATTEMPT.search(p.name) else 1)


def run_dir(dag_id: str, run_id: str, attempt: int | None = None, create: bool = False) -> Path:
    """The directory of attempt ``attempt`` of a DAG run (None: its newest, or its first if there is none yet).
    ``create`` makes it, refusing a path that exists already as a link, and points ``<dag_id>/latest`` at it."""
    dag_dir = runs_root() / dag_id
    if attempt is None:
        existing = attempts(dag_id, run_id)
        return existing[-1] if existing else dag_dir / attempt_name(run_id, 1)
    path = dag_dir / attempt_name(run_id, attempt)
    if path.is_symlink():
        raise FileExistsError(f"{path} is a link; a run directory is never one")
    if create and not path.is_dir():
        path.mkdir(parents=True)
        tmp = dag_dir / f".latest.{os.getpid()}"
        tmp.symlink_to(path.name)
        tmp.replace(dag_dir / LATEST)
    return path


def attempt_of(dag_run: Any) -> int:
    """Which attempt of its DAG run a task runs in: 1, plus one for each Clear of the run."""
    return (getattr(dag_run, "clear_number", 0) or 0) + 1


def for_context(context: Any, create: bool = False) -> Path:
    """The run directory of the DAG-run attempt a task executes in. A task cleared on its own in a run whose
    attempt has no directory (its check_params did not run again) works in the newest attempt's."""
    dag_id, run_id, attempt = context["dag"].dag_id, context["run_id"], attempt_of(context["dag_run"])
    path = run_dir(dag_id, run_id, attempt, create=create)
    return path if path.is_dir() else run_dir(dag_id, run_id)


def write_text(path: Path, text: str) -> None:
    """Write atomically, so a reader (a person's browser, the Airflow UI) never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_json(path: Path, data: Any, indent: int | None = 2) -> None:
    """Write ``data`` as JSON atomically, keys in the order the writer gave them (a verdict's anomalies in theirs);
    ``indent=None`` for a large file no person reads as text."""
    write_text(path, json.dumps(data, indent=indent, default=str))


def read_json(path: Path) -> Any:
    """A run file's JSON, or None when the run never wrote it (or is writing it)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_t0(run_dir: Path) -> float:
    """The program's T0 (epoch s), which the first step and the generator start at: written to ``program.json`` once
    the steps are planned, read by every process that keeps time with the program."""
    return json.loads((run_dir / PROGRAM).read_text())["t0"]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a run's ``.jsonl`` file; none when the run never wrote it. A torn line (a full disk, a network
    file system, a writer killed mid-line) is skipped and named in the log: the rest of the evidence, the report and
    the alert do not depend on it."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            log.warning("%s: line %d is no JSON record (a torn write?); read without it", path, number)
    return records


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """One record, written whole under the file's lock: runs of other DAGs append to the same ``alerts.jsonl``, and a
    long record is more than one write."""
    line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode()
    with path.open("ab") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            fh.write(line)
            fh.flush()
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold ``<path>.lock`` exclusively: one writer at a time of a file that every run rewrites (the history page), so
    the last one includes what the others added."""
    with path.with_name(f".{path.name}.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


APP_CLOSED = "app-closed"  # the teardown stopped the attempt's app: nothing of it starts again until provision


class AppClosed(RuntimeError):
    """A start asked of an attempt whose teardown has stopped its app."""


@contextmanager
def starting(run_dir: Path, what: str) -> Iterator[None]:
    """Start ``what`` (an instance, the generator) of the attempt, unless its teardown has stopped the app: a task
    still running when the run was marked failed (the drain replacing an instance, a step) would otherwise start one
    after the teardown stopped them all, and leave it running. The lock orders the two: a start registers what it
    started before the teardown looks for what runs, or it is refused."""
    with locked(run_dir / APP_CLOSED):
        if (run_dir / APP_CLOSED).exists():
            raise AppClosed(f"not starting {what}: the teardown of {run_dir.name} has stopped its app (the run was "
                            "marked failed, cleared or interrupted while this task ran)")
        yield


def close_app(run_dir: Path) -> None:
    """The teardown stops the app for good: from now on ``starting`` refuses (until provision opens the attempt
    again, as a task cleared on its own does)."""
    with locked(run_dir / APP_CLOSED):
        (run_dir / APP_CLOSED).write_text(f"{time.time()}\n")


def reopen_app(run_dir: Path) -> None:
    (run_dir / APP_CLOSED).unlink(missing_ok=True)


def journal(run_dir: Path, event: str, **fields: Any) -> None:
    """Note a change of the run as it happens (an instance started or stopped, a broker down, a lag sample) in
    ``events.jsonl``: the report draws its timeline from it, including what the drain and teardown did."""
    append_jsonl(run_dir / EVENTS, {"t": time.time(), "event": event, **fields})
