"""End to end with runtime=docker: the same scenario DAGs, the app's instances as containers of the reference
app's image (built on this machine), the embedded broker on loopback reached over the host network.
Same DAG, same verdict as with local processes; no container, network or volume of the run is left."""

from __future__ import annotations

import json

import pytest
from test_e2e import DAG_ID, SHORT, soak


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


def test_a_bug_in_containers_fails_with_the_same_anomaly_count(docker_conf, runs_dir):
    code, run_dir, verdict = soak(runs_dir, bug="drop", **docker_conf)
    assert code == 1 and verdict["status"] == "failed"
    assert verdict["anomalies"]["lost"] == SHORT["records"] // 1000


def test_kill_and_pause_act_on_containers_and_nothing_is_left(docker_engine, docker_conf, runs_dir):
    code, run_dir, verdict = soak(runs_dir, program="1 2 k1 p2 r2", **docker_conf)
    steps = {s["token"]: s for s in map(json.loads, (run_dir / "program.jsonl").read_text().splitlines())}
    assert steps["k1"]["exit_code"] == 137 and steps["k1"]["running_after"] == [2]
    assert steps["p2"]["paused_after"] == [2] and steps["r2"]["paused_after"] == []
    assert verdict["status"] in ("passed", "inconclusive"), verdict
    assert docker_engine.run_containers(run_dir) == []


@pytest.mark.parametrize("dag_id, conf", [
    ("soak_stale_state_standby", {"interval_s": 8, "records": 9000, "keys": 600, "partitions": 12}),
])
def test_other_scenarios_run_unchanged_in_containers(docker_engine, docker_conf, runs_dir, dag_id, conf):
    code, run_dir, verdict = soak(runs_dir, dag_id, **conf, **docker_conf)
    assert code == 0, (run_dir / "dags-test.log").read_text()[-3000:]
    assert verdict["status"] == "passed" and verdict["records"]["output"] == conf["records"]
    assert docker_engine.run_containers(run_dir) == []
