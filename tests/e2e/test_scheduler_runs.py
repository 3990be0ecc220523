"""Soak DAG runs through a real Airflow deployment (API server, scheduler, DAG processor, triggerer, LocalExecutor), as
people drive them from the UI: a run refused by its params, then cleared; a run cleared while it runs, its next
attempt marked failed, then cleared again; and their reports for a user who may read only some DAGs.

What Airflow 3.3.2 does, and what the suite makes of it:
- A Clear of a running run kills its running tasks and runs none of its teardowns: the broker, generator and
  instance of that attempt stay up, and the next attempt's ``check_params`` runs that attempt's teardowns (the
  reaper).
- Marking a run failed fails its running tasks, skips the rest, then runs its teardowns and calls the run
  *successful*, with no failure callback: the teardowns stop everything, and the success callback, finding no passed
  verdict, alerts the run as broken.
- Each Clear is a fresh attempt in a directory of its own, which runs the program and load from scratch on topics of
  its own to a verdict of its own; the earlier attempts' evidence is kept beside it. (With Airflow's own queued-at
  deadline reference a Clear was an HTTP 500: kafka_soak.deadline.)
- On a shared cluster (backend ``external``) a cleared attempt has nothing local left to find but its journal: the
  next attempt releases it from its evidence alone (topics, quotas, consumer group), and a run marked failed
  releases its own through its teardowns, so the cluster keeps nothing of either.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import AdminClient
from support.airflow_stack import PROBE_DAG, AirflowStack
from support.outside_apps import stuck_app_command

from kafka_soak import provision, reaper
from kafka_soak.backends import kafka_jars, quotas
from kafka_soak.evidence import ui
from kafka_soak.params import KAFKA_VERSION
from kafka_soak.shared import rundir

DAG_ID = "soak_cleared_probe"
RECORDS = 3000
# One instance, two 75 s steps: each attempt is cleared or marked failed while step 1 waits in the triggerer. Step 1's
# task defers only if it starts more than 5 s before its step is due: 75 s leaves room for a task's start on a busy
# machine (32 s seen), where 20 s did not.
SCENARIO = {"schedule": None, "description": "a soak run marked failed, then cleared",
            "params": {"program": "1 0", "interval_s": 75, "records": RECORDS, "keys": 100, "partitions": 2,
                       "instances": 1, "drain_timeout_s": 90}}
READER = "probe-reader"  # may read the probe DAG's runs only


def alerts_of(stack: AirflowStack, run_id: str) -> list[dict]:
    path = stack.runs / "alerts.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [row for row in rows if row.get("run_id") == run_id]


def step_1_waits(api: httpx.Client, run_id: str, attempt: Path) -> bool:
    """Step 0 of ``attempt`` is applied and step 1's task is deferred. The run is cleared or marked failed only then:
    on SQLite, this stack's metadata database, Airflow 3.3.2's row lock is a no-op, and a deferral sent while the run
    is being marked failed overwrites ``failed``; the task then resumes and applies step 1."""
    if not (attempt / "program" / "step-0.json").exists():
        return False
    ti = api.get(f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/program_step/1")
    return ti.is_success and ti.json()["state"] == "deferred"


@pytest.mark.xdist_group("scheduler")
def test_runs_refused_cleared_while_running_or_marked_failed_are_reclaimed_alerted_and_run_again(tmp_path):
    with AirflowStack(tmp_path, scenarios={DAG_ID: SCENARIO}, readers={READER: [PROBE_DAG]}) as stack:
        stack.start("api-server", "scheduler", "dag-processor", "triggerer")
        api = stack.api(stack.token())
        # A run refused before anything starts fails, and is alerted; a Clear of a failed run (before its deadline:
        # Airflow 3.3's own queued-at reference makes that an HTTP 500) is a fresh attempt, refused again.
        refused_id = stack.trigger(api, DAG_ID, conf={"backend": "external"})
        assert stack.run_state(api, DAG_ID, refused_id) == "failed"
        assert api.post(f"/api/v2/dags/{DAG_ID}/dagRuns/{refused_id}/clear", json={"dry_run": False}).is_success
        stack.wait_for("the refused run's Clear is refused again", lambda: len(alerts_of(stack, refused_id)) == 2, 120)
        refusal = (f"soak {DAG_ID} did not reach a verdict: task check_params failed: refused before provisioning: "
                   "backend: decides what runs where or with which credentials")
        assert [a["message"][:len(refusal)] for a in alerts_of(stack, refused_id)] == [refusal, refusal]
        assert [p.name for p in rundir.attempts(DAG_ID, refused_id, stack.runs)] == [
            rundir.attempt_name(refused_id, 1), rundir.attempt_name(refused_id, 2)]

        run_id = stack.trigger(api, DAG_ID)
        first = stack.runs / DAG_ID / rundir.safe_name(run_id)
        second, third = (first.with_name(f"{first.name}.attempt-{n}") for n in (2, 3))
        stack.wait_for("instance 1 runs and step 1 waits in the triggerer", lambda: step_1_waits(api, run_id, first), 240)
        left = reaper.leftovers(first)
        assert {"kafka-1", "generator", "instance-1"} <= set(left)
        assert api.post(f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/clear", json={"dry_run": False}).is_success
        stack.wait_for("attempt 2 runs instance 1 and defers step 1", lambda: step_1_waits(api, run_id, second), 240)
        assert not reaper.leftovers(first), "attempt 2 tore down what the cleared attempt 1 left running"

        assert api.patch(f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}", json={"state": "failed"}).is_success
        stack.wait_for("Airflow calls the run marked failed successful once its teardowns ran", lambda: api.get(
            f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}").json()["state"] == "success", 120)
        assert not reaper.leftovers(second), "the teardowns stopped the broker, the generator and the instance"
        alert = stack.wait_for("the broken run is alerted", lambda: alerts_of(stack, run_id), 60)[0]
        assert alert["status"] == "no_verdict" and "validate did not run" in alert["message"]
        assert second.name in alert["run_dir"]

        assert api.post(f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/clear", json={"dry_run": False}).is_success
        stack.wait_for("the Clear starts attempt 3", lambda: (third / "params.json").exists(), 120)
        assert stack.run_state(api, DAG_ID, run_id, timeout=600) == "success"
        recovered = stack.wait_for("the scenario recovers", lambda: [
            a for a in alerts_of(stack, run_id) if a["status"] == "recovered"], 60)
        assert third.name in recovered[0]["run_dir"]

        # The UI's listing and a run's files, for a user who may read the probe DAG only.
        probe_run = stack.runs / PROBE_DAG / "manual__probe"
        probe_run.mkdir(parents=True)
        rundir.write_json(probe_run / "params.json", {"dag_id": PROBE_DAG, "run_id": "manual__probe"})
        reader = stack.api(stack.token(READER))
        for listing in (f"{ui.URL_PREFIX}/", f"{ui.URL_PREFIX}/?dag_id={PROBE_DAG}"):
            page = reader.get(listing)
            assert page.status_code == 200 and "manual__probe" in page.text and DAG_ID not in page.text, listing
        assert DAG_ID in api.get(f"{ui.URL_PREFIX}/").text, "the admin reads every DAG's runs"
        assert reader.get(f"{ui.URL_PREFIX}/runs/{DAG_ID}/{third.name}/").status_code == 403

    assert rundir.attempts(DAG_ID, run_id, stack.runs) == [first, second, third]
    # Attempt 2 ran attempt 1's teardowns: its instance stopped and judged, its broker and generator stopped.
    torn = [e for e in map(json.loads, (first / "events.jsonl").read_text().splitlines()) if e["event"] == "torn-down"]
    assert len(torn) == 1 and torn[0]["instances"] == ["instance-1"] and second.name in torn[0]["why"]
    assert (first / "health.json").exists()
    # The earlier attempts' evidence is kept as it was: one step applied each, no verdict, a report that says so.
    for attempt in (first, second):
        assert [json.loads(s)["label"] for s in (attempt / "program.jsonl").read_text().splitlines()] == [
            "step 0: start instance 1"], attempt.name
        assert not (attempt / "verdict.json").exists() and (attempt / "params.json").exists()
    assert (second / "report.html").exists()
    # The last ran the whole program and load again, on topics of its own.
    assert [json.loads(s)["label"] for s in (third / "program.jsonl").read_text().splitlines()] == [
        "step 0: start instance 1", "step 1: no-op"]
    assert json.loads((third / "params.json").read_text())["attempt"] == 3
    assert json.loads((third / "cluster.json").read_text())["topics"]["input"] == f"soak.{DAG_ID}.{third.name}.input"
    verdict = json.loads((third / "verdict.json").read_text())
    assert (verdict["status"], verdict["records"]["input"]) == ("passed", RECORDS), verdict
    report = (third / "report.html").read_text()
    assert first.name in report and second.name in report, "the report links the earlier attempts"
    assert not reaper.leftovers(third)


EXTERNAL_DAG = "soak_cleared_external"
STUCK_CLIENT = "{app_id}-1"  # the stuck app's client id: {app_id}-{instance}, the app id the run's own on the cluster


def external_scenario(conn_id: str) -> dict:
    """A run on a shared cluster (the deployment's scenario chooses backend, connection, app and quotas) whose app
    joins its group and never commits: it stays in its drain, deterministically, until it is cleared or marked failed."""
    return {"schedule": None, "description": "a run on a shared cluster cleared during its drain",
            "params": {"backend": "external", "kafka_conn_id": conn_id, "app_command": stuck_app_command(),
                       "program": "1", "interval_s": 3, "records": 600, "keys": 50, "partitions": 2, "instances": 1,
                       "drain_timeout_s": 3600,
                       "quotas": [{"client_id": STUCK_CLIENT, "consumer_byte_rate": 1_000_000}]}}


def draining(api: httpx.Client, run_id: str, attempt: Path) -> bool:
    """The attempt's drain task runs and has polled its group's lag at least once."""
    ti = api.get(f"/api/v2/dags/{EXTERNAL_DAG}/dagRuns/{run_id}/taskInstances/drain")
    polled = any(e.get("event") == "lag" and e.get("source") == "drain"
                 for e in rundir.read_jsonl(attempt / rundir.EVENTS))
    return ti.is_success and ti.json()["state"] == "running" and polled


def group_of(attempt: Path) -> str:
    """The group (and application id) an attempt's app ran as: ``<dag>-app-<the attempt's scope>``."""
    return json.loads((attempt / rundir.PARAMS).read_text())["plan"]["app_profile"]["group_id"]


def on_cluster(bootstrap: str, *attempts: Path) -> dict[str, set[str]]:
    """What the shared cluster holds of the scenario: its topics, its consumer groups, the quotas of the attempts'
    clients."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = {t for t in admin.list_topics(timeout=30).topics if t.startswith(f"soak.{EXTERNAL_DAG}.")}
    listed = admin.list_consumer_groups(request_timeout=30).result(30)
    groups = {g.group_id for g in listed.valid if g.group_id.startswith(EXTERNAL_DAG)}
    held = set()
    for client in (f"{group_of(attempt)}-1" for attempt in attempts):
        described = kafka_jars.run_tool(KAFKA_VERSION, kafka_jars.CONFIG_COMMAND,
                                        quotas.describe_command(client, bootstrap))
        held |= set(quotas.parse_describe(described).get(client, {}))
    return {"topics": topics, "groups": groups, "quotas": held}


@pytest.mark.xdist_group("scheduler-external")
def test_a_run_cleared_during_its_drain_on_a_shared_cluster_leaves_nothing_on_it(tmp_path, kafka_connection, broker):
    bootstrap = broker.bootstrap_servers
    try:
        with AirflowStack(tmp_path, scenarios={EXTERNAL_DAG: external_scenario(kafka_connection)}) as stack:
            stack.start("api-server", "scheduler", "dag-processor", "triggerer")
            api = stack.api(stack.token())
            run_id = stack.trigger(api, EXTERNAL_DAG)
            first = stack.runs / EXTERNAL_DAG / rundir.safe_name(run_id)
            second = first.with_name(f"{first.name}.attempt-2")
            stack.wait_for("attempt 1 drains", lambda: draining(api, run_id, first), 300)
            held = stack.wait_for("the stuck app has joined its group", lambda: (
                cluster := on_cluster(bootstrap, first))["groups"] and cluster, 120)
            assert group_of(first).startswith(f"{EXTERNAL_DAG}-app-"), "the run's own group on a shared cluster"
            assert held == {"topics": set(json.loads((first / rundir.CLUSTER).read_text())["topics"].values()),
                            "groups": {group_of(first)}, "quotas": {"consumer_byte_rate"}}, held
            assert reaper.leftovers(first) == ["instance-1", "resource-sampler"]

            assert api.post(f"/api/v2/dags/{EXTERNAL_DAG}/dagRuns/{run_id}/clear", json={"dry_run": False}).is_success
            stack.wait_for("attempt 2 drains", lambda: draining(api, run_id, second), 300)
            assert provision.released(first) and not reaper.leftovers(first), "attempt 2 released what attempt 1 held"
            second_topics = set(json.loads((second / rundir.CLUSTER).read_text())["topics"].values())
            stack.wait_for("attempt 1's topics are gone from the cluster's metadata, attempt 2's are there",
                           lambda: on_cluster(bootstrap)["topics"] == second_topics, 60)

            assert api.patch(f"/api/v2/dags/{EXTERNAL_DAG}/dagRuns/{run_id}", json={"state": "failed"}).is_success
            stack.wait_for("the teardowns of the run marked failed ran", lambda: api.get(
                f"/api/v2/dags/{EXTERNAL_DAG}/dagRuns/{run_id}").json()["state"] == "success", 180)
        assert provision.released(second) and not reaper.leftovers(second)
        nothing = {"topics": set(), "groups": set(), "quotas": set()}
        assert group_of(second) != group_of(first), "each attempt's group is its own"
        stack.wait_for("the cluster's metadata holds nothing of the run",
                       lambda: on_cluster(bootstrap, first, second) == nothing, 60)
        released = [e for e in rundir.read_jsonl(first / rundir.EVENTS) if e["event"] == "released"]
        assert len(released) == 1
    finally:  # a failing run leaves its instances to the next attempt's reaper, which never comes here
        for attempt in (tmp_path / "runs" / EXTERNAL_DAG).glob("*"):
            if attempt.is_dir() and not attempt.is_symlink():
                reaper.reap(attempt, "test teardown", timeout=5)
