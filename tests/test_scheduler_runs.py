"""Soak DAG runs through a real Airflow deployment (API server, scheduler, DAG processor, triggerer, LocalExecutor): a
run refused by its params, then cleared; a run marked failed from the API mid-program, as a person does from the UI,
then cleared; and their reports in the UI for a user who may read only some DAGs.

What Airflow 3.3.2 does, and what the suite makes of it: marking a run failed fails its running tasks, skips the
rest, then runs its teardowns and calls the run *successful*, with no failure callback. The teardowns stop the
broker, generator and instance; the success callback finds no passed verdict and alerts the run as broken. The
Clear is a fresh attempt in a directory of its own, which runs the program and load from scratch on topics of its
own to a verdict of its own, and recovers the scenario; the earlier attempt's evidence is kept beside it. (Clearing
a run that is still running is refused by Airflow's API with a 500; the reaper covers an attempt whose teardowns
never ran, in tests/test_rundir.py.)
"""

from __future__ import annotations

import json

import pytest
from airflow_stack import PROBE_DAG, AirflowStack

from kafka_soak import reaper, rundir, ui

DAG_ID = "soak_cleared_probe"
RECORDS = 3000
# One instance, two 20 s steps: the run is marked failed while step 1 waits in the triggerer.
SCENARIO = {"schedule": None, "description": "a soak run marked failed, then cleared",
            "params": {"program": "1 0", "interval_s": 20, "records": RECORDS, "keys": 100, "partitions": 2,
                       "instances": 1, "drain_timeout_s": 90}}
READER = "probe-reader"  # may read the probe DAG's runs only


def alerts_of(stack: AirflowStack, run_id: str) -> list[dict]:
    path = stack.runs / "alerts.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [row for row in rows if row.get("run_id") == run_id]


@pytest.mark.xdist_group("scheduler")
def test_refused_and_marked_failed_runs_are_alerted_and_a_clear_runs_them_again_from_scratch(tmp_path):
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
        stack.wait_for("instance 1 runs", lambda: (first / "program" / "step-0.json").exists(), 240)
        assert {"kafka-1", "generator", "instance-1"} <= set(reaper.leftovers(first))
        assert api.patch(f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}", json={"state": "failed"}).is_success
        assert stack.run_state(api, DAG_ID, run_id) == "success", "Airflow calls it so once its teardowns ran"
        assert not reaper.leftovers(first), "the teardowns stopped the broker, the generator and the instance"
        alert = stack.wait_for("the broken run is alerted", lambda: alerts_of(stack, run_id), 60)[0]
        assert alert["status"] == "no_verdict" and "validate did not run" in alert["message"]

        assert api.post(f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/clear", json={"dry_run": False}).is_success
        second = first.with_name(f"{first.name}.attempt-2")
        stack.wait_for("the Clear starts attempt 2", lambda: (second / "params.json").exists(), 120)
        assert stack.run_state(api, DAG_ID, run_id, timeout=480) == "success"
        recovered = stack.wait_for("the scenario recovers", lambda: [
            a for a in alerts_of(stack, run_id) if a["status"] == "recovered"], 60)
        assert second.name in recovered[0]["run_dir"]

        # The UI's listing and a run's files, for a user who may read the probe DAG only.
        probe_run = stack.runs / PROBE_DAG / "manual__probe"
        probe_run.mkdir(parents=True)
        rundir.write_json(probe_run / "params.json", {"dag_id": PROBE_DAG, "run_id": "manual__probe"})
        reader = stack.api(stack.token(READER))
        for listing in (f"{ui.URL_PREFIX}/", f"{ui.URL_PREFIX}/?dag_id={PROBE_DAG}"):
            page = reader.get(listing)
            assert page.status_code == 200 and "manual__probe" in page.text and DAG_ID not in page.text, listing
        assert DAG_ID in api.get(f"{ui.URL_PREFIX}/").text, "the admin reads every DAG's runs"
        assert reader.get(f"{ui.URL_PREFIX}/runs/{DAG_ID}/{second.name}/").status_code == 403

    assert rundir.attempts(DAG_ID, run_id, stack.runs) == [first, second]
    # The first attempt's evidence is kept as it was: one step applied, no verdict, a report that says so.
    assert [json.loads(s)["label"] for s in (first / "program.jsonl").read_text().splitlines()] == [
        "step 0: start instance 1"]
    assert not (first / "verdict.json").exists() and (first / "report.html").exists()
    # The second ran the whole program and load again, on topics of its own.
    assert [json.loads(s)["label"] for s in (second / "program.jsonl").read_text().splitlines()] == [
        "step 0: start instance 1", "step 1: no-op"]
    assert json.loads((second / "params.json").read_text())["attempt"] == 2
    assert json.loads((second / "cluster.json").read_text())["topics"]["input"] == f"soak.{DAG_ID}.{second.name}.input"
    verdict = json.loads((second / "verdict.json").read_text())
    assert (verdict["status"], verdict["records"]["input"]) == ("passed", RECORDS), verdict
    assert first.name in (second / "report.html").read_text(), "the report links the earlier attempt"
    assert not reaper.leftovers(second)
