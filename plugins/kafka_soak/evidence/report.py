"""The soak report: one HTML page per run, in the run directory, for the person who reads a 03:00 failure at 09:00.

It answers in order: did it break (verdict table with the expectation and samples behind each anomaly),
when and by whom (the program, load, lag and anomalies on one time axis), how to run it again (params and
replayable program), what the backend could not guarantee, and where every piece of evidence is (Data Docs,
per-instance logs). Links are relative to the run directory, so the page works from the filesystem, from
the Airflow UI plugin, or copied elsewhere; the charts' JavaScript is inlined, so it works offline.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from functools import cache
from pathlib import Path
from typing import Any

from kafka_soak.backends import broker_matrix
from kafka_soak.clients import health
from kafka_soak.evidence import RunEvidence, charts, first_failure, history
from kafka_soak.evidence.pages import TEMPLATES
from kafka_soak.shared import contracts, rundir
from kafka_soak.shared.rundir import read_json
from kafka_soak.toolchain import maven

log = logging.getLogger(__name__)


@cache
def vega_embed_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script, matching the Vega-Lite version Altair writes. vl-convert bundles
    it in about 1.3 s of CPU, most of what a report costs, so it is kept in the project's cache once made (per
    vl-convert and Vega-Lite version); a cache that cannot be written is only a slower report."""
    from importlib.metadata import version

    import altair as alt
    import vl_convert

    vl_version = "_".join(alt.SCHEMA_VERSION.split(".")[:2])
    cached = maven.cache_root() / "vega-embed" / f"vl-convert-{version('vl-convert-python')}-vega-lite-{vl_version}.js"
    if cached.is_file():
        return cached.read_text()
    bundle = vl_convert.javascript_bundle(vl_version=vl_version)
    if "</script" in bundle.lower():  # inlined as is: it must not end its own <script> element
        raise ValueError("the Vega-Embed bundle contains '</script' and cannot be inlined")
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        rundir.write_text(cached, bundle)
    except OSError:
        pass
    return bundle


def verdict_rows(verdict: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per anomaly: its count, the expectations that judged it, the first samples."""
    if not verdict:
        return []
    by_anomaly: dict[str, list[dict[str, Any]]] = {}
    for e in verdict.get("expectations", []):
        if e.get("anomaly"):
            by_anomaly.setdefault(e["anomaly"], []).append(e)
    return [{"anomaly": name, "count": verdict["anomalies"].get(name, 0), "expectations": by_anomaly.get(name, []),
             "samples": [json.dumps(s, sort_keys=True, default=str) for s in verdict.get("samples", {}).get(name, [])[:3]]}
            for name in contracts.ANOMALIES if name in verdict["anomalies"]]


def step_rows(evidence: RunEvidence) -> list[dict[str, Any]]:
    t0 = evidence.started_at or 0
    return [{**s, "planned_rel": s["planned_at"] - t0, "actual_rel": (s["actual_at"] - t0) if s.get("actual_at") else None}
            for s in evidence.steps]


def replay(evidence: RunEvidence) -> dict[str, str]:
    """Commands that run the same program again: the program alone, and every param as this run had them."""
    program_conf = json.dumps(evidence.program.get("replay_conf") or {})
    all_params = json.dumps(evidence.params, sort_keys=True)
    return {"program": f"make soak SCENARIO={shlex.quote(evidence.dag_id)} CONF={shlex.quote(program_conf)}",
            "airflow": f"airflow dags trigger {shlex.quote(evidence.dag_id)} --conf {shlex.quote(all_params)}"}


def quota_rows(verified: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per quota setting, as verified on the broker (``cluster.json``: client id and its settings)."""
    return [{"client_id": q["client_id"], "setting": k, "value": v} for q in verified for k, v in q.items()
            if k not in ("client_id", "previous")]


def render(run_dir: Path, airflow_url: str | None = None) -> str:
    evidence = RunEvidence.load(run_dir)
    has_timeline = bool(evidence.events or evidence.steps)
    return TEMPLATES.get_template("report.html.j2").render(
        e=evidence, verdict=evidence.verdict, rows=verdict_rows(evidence.verdict), steps=step_rows(evidence),
        replay=replay(evidence), files=evidence.files(), airflow_url=airflow_url,
        drain=read_json(run_dir / rundir.DRAIN) or {}, failure=first_failure(run_dir),
        quotas=quota_rows(evidence.cluster.get("quotas", [])),
        quota_usage={(u["client_id"], u["setting"]): u for u in read_json(run_dir / rundir.QUOTAS) or []},
        timeline_error=evidence.timeline.get("error"), anomaly_order=contracts.ANOMALIES, health=evidence.health,
        health_summary=health.one_line(evidence.health) if evidence.health else "",
        spec=json.dumps(charts.timeline_spec(evidence)) if has_timeline else None,
        bundle=vega_embed_bundle() if has_timeline else "", generated_at=time.time())


def write(run_dir: Path, airflow_url: str | None = None) -> Path:
    """Write ``report.html`` into the run directory (atomically) and return its path."""
    path = run_dir / rundir.REPORT
    rundir.write_text(path, render(run_dir, airflow_url))
    return path


def write_pages(run_dir: Path, url: str | None, unwritten: list[str]) -> Path | None:
    """The run's report and the history page, written when the run is over (whatever it reached: a DAG callback,
    not a task, so it never changes the run's state). What cannot be written is added to ``unwritten``; the
    alert still goes out, and says so."""
    if not run_dir.is_dir():
        unwritten.append(f"the run directory {run_dir} (it was never made)")
        return None
    try:
        for member in broker_matrix.member_dirs(run_dir):  # a cluster of a broker version matrix: its own report
            write(member, url)
        path = write(run_dir, url)
        history.write_history()
    except OSError as exc:
        log.error("could not write the report of %s: %s", run_dir, exc)
        unwritten.append(f"the report in {run_dir} ({exc.strerror or exc})")
        return None
    except Exception:  # the alert matters more than its attachment
        log.exception("could not write the report of %s", run_dir)
        unwritten.append(f"the report in {run_dir} (see the log)")
        return None
    log.info("report: %s", path)
    return path
