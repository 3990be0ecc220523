"""End to end: the scenario DAG through `airflow dags test`, embedded broker, real Spark and GX.

Each run takes about a minute and a half (a 3-step program, then spark-submit), so the bug switches
run with the same short program as the healthy case.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import live_processes

DAG_ID = "soak_eos_id_assignment"
SHORT = {"program": "1 2 1", "interval_s": 6, "records": 6000, "keys": 300, "partitions": 4}


def soak(runs_dir: Path, **conf) -> tuple[int, Path, dict | None]:
    """Run the DAG once; returns (airflow exit code, run directory, verdict or None)."""
    env = {**os.environ, "SOAK_RUNS_DIR": str(runs_dir)}
    proc = subprocess.run(["airflow", "dags", "test", DAG_ID, "-c", json.dumps({**SHORT, **conf})], env=env,
                          capture_output=True, text=True, timeout=600)
    run_dir = (runs_dir / DAG_ID / "latest").resolve()
    (run_dir / "dags-test.log").write_text(proc.stdout + proc.stderr)
    verdict_path = run_dir / "verdict.json"
    verdict = json.loads(verdict_path.read_text()) if verdict_path.exists() else None
    assert not live_processes(run_dir), "broker, generator and instances must be stopped after the run"
    return proc.returncode, run_dir, verdict


def last_alert(runs_dir: Path) -> dict:
    return json.loads((runs_dir / "alerts.jsonl").read_text().splitlines()[-1])


def test_healthy_app_passes(runs_dir):
    code, run_dir, verdict = soak(runs_dir)
    assert code == 0, (run_dir / "dags-test.log").read_text()[-3000:]
    assert verdict["status"] == "passed"
    assert set(verdict["anomalies"].values()) == {0}
    assert verdict["records"]["input"] == verdict["records"]["output"] == SHORT["records"]
    assert "read_committed" in verdict["backend"]["limitations"]
    assert (run_dir / "data_docs" / "index.html").exists()
    steps = [json.loads(line) for line in (run_dir / "program.jsonl").read_text().splitlines()]
    assert [(s["index"], s["action"], s["instance"]) for s in steps] == [(0, "start", 1), (1, "start", 2),
                                                                         (2, "stop", 1)]
    assert all(abs(s["jitter_ms"]) < 1000 for s in steps)
    assert {p.name for p in (run_dir / "logs").glob(f"{DAG_ID}-app-*.log")} == \
        {f"{DAG_ID}-app-1.0.log", f"{DAG_ID}-app-2.1.log"}


@pytest.mark.parametrize("bug, anomaly, exact", [
    ("drop", "lost", SHORT["records"] // 1000),
    ("duplicate", "duplicated", SHORT["records"] // 1000),
    ("skip-restore", "id_reuse", None),
])
def test_bug_switches_fail_with_the_anomaly_they_cause(runs_dir, bug, anomaly, exact):
    code, run_dir, verdict = soak(runs_dir, bug=bug)
    assert code == 1
    assert verdict["status"] == "failed"
    count = verdict["anomalies"][anomaly]
    assert count == exact if exact is not None else count > 0
    if bug != "skip-restore":
        assert {k for k, v in verdict["anomalies"].items() if v} == {anomaly}
    alert = last_alert(runs_dir)
    assert alert["run_dir"] == str(run_dir)
    assert f"{anomaly}={count}" in alert["message"]
