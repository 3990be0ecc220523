"""The history page: every run of every scenario, newest first, with its status and anomaly counts per night.

Built from the run directories alone (``<runs>/<dag_id>/<run>/params.json`` and ``verdict.json``), so it is
the same page whether it is written after a run (``<runs>/history.html``) or rendered on request by the
Airflow UI plugin. Links are relative to the runs root, behind an optional prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_soak.evidence.pages import TEMPLATES
from kafka_soak.shared import resources, rundir
from kafka_soak.shared.contracts import ANOMALIES
from kafka_soak.shared.rundir import REPORT, read_json

HISTORY = "history.html"


@dataclass
class RunSummary:
    dag_id: str
    run_id: str
    attempt: int  # of the DAG run (a Clear starts a new one)
    path: str  # relative to the runs root
    started_at: float
    status: str
    records: dict[str, Any] = field(default_factory=dict)
    anomalies: dict[str, int] = field(default_factory=dict)
    program: str = ""
    app: str = ""  # "worker", "Kafka Streams 4.3.1", "Kafka Streams matrix", or the user's own
    matrix: list[dict[str, Any]] = field(default_factory=list)  # a version matrix: version x status x anomalies
    has_report: bool = False
    growth: dict[str, dict[str, Any]] = field(default_factory=dict)  # per resource, the app instance that rose fastest


def run_row(run_dir: Path, root: Path) -> RunSummary | None:
    """A run as one row; None for a directory that is not a run (no ``params.json``)."""
    given = read_json(run_dir / rundir.PARAMS)
    if given is None:
        return None
    verdict = read_json(run_dir / rundir.VERDICT) or {}
    program = read_json(run_dir / rundir.PROGRAM) or {}
    return RunSummary(dag_id=given.get("dag_id", run_dir.parent.name), run_id=given.get("run_id", run_dir.name),
                      attempt=given.get("attempt", 1), path=run_dir.relative_to(root).as_posix(),
                      started_at=program.get("t0") or (run_dir / rundir.PARAMS).stat().st_mtime,
                      status=verdict.get("status", "no verdict"), records=verdict.get("records", {}),
                      anomalies=verdict.get("anomalies", {}), program=program.get("program", ""),
                      app=app_label(given.get("plan", {})), matrix=verdict.get("matrix", []),
                      has_report=(run_dir / REPORT).is_file(), growth=resources.steepest(verdict.get("growth", [])))


def app_label(plan: dict[str, Any]) -> str:
    """What a run judged, in a few words (its app's profile says)."""
    app = plan.get("app_profile") or {}
    return app.get("title") or app.get("name") or plan.get("app", "")


@dataclass
class Rate:
    """How one app of a scenario (a version or design of a matrix, or the scenario's one app) fared over the runs the
    history holds: how often a run caught something (failed), passed, stalled, could not be judged."""

    app: str
    runs: int = 0
    caught: int = 0
    passed: int = 0
    stalled: int = 0
    inconclusive: int = 0
    no_verdict: int = 0

    def count(self, status: str, anomalies: dict[str, int]) -> None:
        self.runs += 1
        self.caught += status == "failed"
        self.passed += status == "passed"
        self.stalled += bool(anomalies.get("stalled"))
        self.inconclusive += status == "inconclusive"
        self.no_verdict += status == "no verdict"


def rates(runs: list[RunSummary]) -> list[Rate]:
    """Per app of a scenario's runs (each row of a matrix on its own, by its label), its reproduction rate: the
    numbers ``docs/scenarios.md`` quotes, from every run the history holds rather than from a benchmark's."""
    found: dict[str, Rate] = {}
    for run in runs:
        rows = [(m.get("label") or f"Kafka Streams {m['version']}", m["status"], m["anomalies"]) for m in run.matrix] \
            or [(run.app, run.status, run.anomalies)]
        for app, status, anomalies in rows:
            found.setdefault(app, Rate(app)).count(status, anomalies)
    return sorted(found.values(), key=lambda r: r.app)


def scenarios(root: Path, only: set[str] | None = None) -> dict[str, list[RunSummary]]:
    """``{dag_id: [runs, newest first]}`` for every scenario (of ``only``, if given) with a run under ``root``."""
    found: dict[str, list[RunSummary]] = {}
    for dag_dir in sorted(p for p in root.iterdir() if p.is_dir() and (only is None or p.name in only)) \
            if root.is_dir() else []:
        runs = [run_row(d, root) for d in dag_dir.iterdir() if d.is_dir() and not d.is_symlink()]
        runs = sorted((r for r in runs if r), key=lambda r: r.started_at, reverse=True)
        if runs:
            found[dag_dir.name] = runs
    return found


def render_history(root: Path, link_prefix: str = "", only: set[str] | None = None) -> str:
    return TEMPLATES.get_template("history.html.j2").render(scenarios=scenarios(root, only), anomalies=ANOMALIES,
                                                            prefix=link_prefix, report=REPORT, root=root, rates=rates,
                                                            labels=resources.LABELS)


def write_history(root: Path | None = None) -> Path:
    """Rewrite ``<runs>/history.html`` (atomically, and one run at a time: parallel runs of other scenarios write it
    too, and the last must include every run)."""
    root = root or rundir.runs_root()
    path = root / HISTORY
    with rundir.locked(path):
        rundir.write_text(path, render_history(root))
    return path
