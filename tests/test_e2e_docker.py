"""End to end with runtime=docker: the same scenario DAGs, the app's instances as containers of the reference
app's image (built on this machine), the embedded broker on loopback reached over the host network.
Same DAG, same verdict as with local processes; no container, network or volume of the run is left."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_e2e import DAG_ID, REBALANCE_SHORT, SHORT, STALE_SHORT, last_alert, soak


@pytest.fixture
def docker_conf(docker_engine):
    client = docker_engine.client()
    networks, volumes = {n.id for n in client.networks.list()}, {v.id for v in client.volumes.list()}
    yield {"runtime": "docker", "app_image": docker_engine.WORKER_IMAGE}
    assert {n.id for n in client.networks.list()} == networks, "a run must leave no network"
    assert {v.id for v in client.volumes.list()} == volumes, "a run must leave no volume"


def test_healthy_app_in_containers_passes_with_a_log_per_instance_and_step(docker_engine, docker_conf, runs_dir):
    code, run_dir, verdict = soak(runs_dir, **docker_conf)
    assert code == 0, (run_dir / "dags-test.log").read_text()[-3000:]
    assert verdict["status"] == "passed"
    assert verdict["records"]["input"] == verdict["records"]["output"] == SHORT["records"]
    assert docker_engine.run_containers(run_dir) == []
    steps = [json.loads(line) for line in (run_dir / "program.jsonl").read_text().splitlines()]
    assert [s["action"] for s in steps] == ["start", "start", "stop"]
    assert steps[2]["exit_code"] == 0, "a toggled-off container stops gracefully"
    logs = {p.name: p.read_text() for p in (run_dir / "logs").glob(f"{DAG_ID}-app-*.log")}
    assert set(logs) == {f"{DAG_ID}-app-1.0.log", f"{DAG_ID}-app-2.1.log"}
    assert all("assigned partitions" in text for text in logs.values()), logs


def test_a_bug_in_containers_fails_with_the_same_anomaly_count(docker_engine, docker_conf, runs_dir):
    code, run_dir, verdict = soak(runs_dir, bug="drop", **docker_conf)
    assert code == 1 and verdict["status"] == "failed"
    assert verdict["anomalies"]["lost"] == SHORT["records"] // 1000
    assert docker_engine.run_containers(run_dir) == []


def test_a_run_that_breaks_down_leaves_no_container(docker_engine, docker_conf, runs_dir):
    """An app that exits at once (a bad flag): the drain restarts it until it gives up, the run fails without a
    verdict, and the teardown still removes every container the run made."""
    code, run_dir, verdict = soak(runs_dir, app_command=["--no-such-flag"], drain_timeout_s=10, **docker_conf)
    assert code == 1 and verdict is None
    assert docker_engine.run_containers(run_dir) == []
    assert "error: the following arguments are required" in (run_dir / "logs" / f"{DAG_ID}-app-1.0.log").read_text()
    assert "did not reach a verdict: task drain failed" in last_alert(runs_dir)["message"]


def test_an_image_the_engine_cannot_get_is_refused_before_anything_starts(docker_engine, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kafka_soak.cli", "soak", DAG_ID, "--conf",
                           json.dumps({"runtime": "docker", "app_image": "kafka-soak-absent:none"})],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "SOAK_RUNS_DIR": str(tmp_path)})
    assert proc.returncode == 2
    assert "image 'kafka-soak-absent:none' (param app_image) is not on the Docker engine and cannot be pulled" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout and not any(tmp_path.iterdir())


def test_kill_and_pause_act_on_containers_and_nothing_is_left(docker_engine, docker_conf, runs_dir):
    code, run_dir, verdict = soak(runs_dir, program="1 2 k1 p2 r2", **docker_conf)
    steps = {s["token"]: s for s in map(json.loads, (run_dir / "program.jsonl").read_text().splitlines())}
    assert steps["k1"]["exit_code"] == 137 and steps["k1"]["running_after"] == [2]
    assert steps["p2"]["paused_after"] == [2] and steps["r2"]["paused_after"] == []
    assert verdict["status"] in ("passed", "inconclusive"), verdict
    assert docker_engine.run_containers(run_dir) == []


@pytest.mark.parametrize("dag_id, conf", [("soak_stale_state_standby", STALE_SHORT),
                                           ("soak_id_assignment_rebalance", REBALANCE_SHORT)])
def test_other_scenarios_run_unchanged_in_containers(docker_engine, docker_conf, runs_dir, dag_id, conf):
    code, run_dir, verdict = soak(runs_dir, dag_id, **conf, **docker_conf)
    assert code == 0, (run_dir / "dags-test.log").read_text()[-3000:]
    assert verdict["status"] == "passed" and verdict["records"]["output"] == conf["records"]
    assert docker_engine.run_containers(run_dir) == []
