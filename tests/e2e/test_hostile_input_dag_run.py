"""Hostile input end to end: a deployer-only param in a real `airflow dags test` trigger, refused before anything
starts, and `make soak` given shell syntax, which reaches the CLI as one argument (the confs themselves:
unit/airflow_side/test_hostile_input.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support import ROOT
from support.checks import live_processes
from support.soak_runs import DAG_ID


def test_a_deployer_only_param_in_a_real_trigger_is_refused_before_anything_starts(runs_dir):
    """`airflow dags test -c` with an app_command: check_params refuses it, the run's first recorded failure says
    why, and nothing was provisioned (no cluster, no process)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SOAK_PARAM_DEFAULTS", "SOAK_TRIGGER_ALLOW")}
    conf = {"app_command": ["sh", "-c", "id > /tmp/owned"], "program": "1"}
    proc = subprocess.run(["airflow", "dags", "test", DAG_ID, "-c", json.dumps(conf)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 1
    run_dir = (runs_dir / DAG_ID / "latest").resolve()
    first = json.loads((run_dir / "failures.jsonl").read_text().splitlines()[0])
    assert first["task_id"] == "check_params"
    assert "refused before provisioning: app_command: decides what runs where" in first["error"]
    assert not (run_dir / "cluster.json").exists() and not (run_dir / "processes").exists()
    assert not live_processes(run_dir)
    assert not Path("/tmp/owned").exists()


def test_make_soak_passes_scenario_and_conf_as_single_arguments(tmp_path):
    """`make soak SCENARIO=...` with shell syntax in it: the CLI gets it as one (unknown) scenario name, nothing runs."""
    marker = tmp_path / "owned"
    proc = subprocess.run(["make", "-s", "soak", f"SCENARIO=x; touch {marker}", "CONF={\"program\": \"it's\"}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert f"kafka-soak: unknown scenario 'x; touch {marker}'" in proc.stderr, proc.stderr[-2000:]
    assert not marker.exists()
