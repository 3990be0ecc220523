"""A run that takes far longer than its program should gets a deadline alert: every scenario DAG carries an
Airflow deadline, and its callback reaches the alert channels (a real SMTP server and a webhook on loopback) with
no secret in them (a real Airflow raising it for a run that outlives its deadline: e2e/test_deadline_scheduler.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

from airflow.dag_processing.dagbag import DagBag
from support import ROOT
from support.alert_channels import WEBHOOK_TOKEN, body

from kafka_soak import deadline
from kafka_soak.factory import build_dag
from kafka_soak.shared import rundir

DAGS = ROOT / "dags"


def test_every_scenario_dag_has_a_deadline_from_its_program():
    bag = DagBag(str(DAGS))
    assert bag.import_errors == {}
    scenarios = [d for d in bag.dags.values() if "kafka-soak" in d.tags]
    assert len(scenarios) >= 3
    for dag in scenarios:
        (alert,) = dag.deadline
        values = dag.params.validate()
        expected_min = deadline.expected_s(values, 5) / 60
        assert alert.interval == dt.timedelta(minutes=-(-deadline.OVERDUE_FACTOR * expected_min // 1)), dag.dag_id
        assert alert.callback.path == "kafka_soak.deadline.overdue"
        assert alert.callback.kwargs == {"expected_minutes": round(expected_min, 1)}
        assert isinstance(alert.reference, deadline.SoakRunQueuedAt), "a Clear trips over DAGRUN_QUEUED_AT"
    eos = bag.dags["soak_eos_id_assignment"].deadline[0]
    # lead 5 s + program 3 x 10 s + drain timeout 180 s + 300 s allowance = 8.6 min; twice that, rounded up.
    assert (eos.interval, eos.callback.kwargs["expected_minutes"]) == (dt.timedelta(minutes=18), 8.6)


def test_the_plugin_gives_the_scheduler_the_deadline_reference():
    """The scheduler imports a custom deadline reference only from a plugin's ``deadline_references``."""
    from airflow import plugins_manager

    assert plugins_manager.get_deadline_references_plugins() == {
        "kafka_soak.deadline.SoakRunQueuedAt": deadline.SoakRunQueuedAt}


def test_a_scenario_file_can_set_its_own_deadline():
    dag = build_dag({"dag_id": "soak_long_one", "deadline_minutes": 240, "params": {"program": "1 2 1"}})
    assert dag.deadline[0].interval == dt.timedelta(minutes=240)


def test_airflow_dags_test_gets_no_deadline(monkeypatch):
    """`airflow dags test` parses the DAG in its own process; with a deadline it would exit 1 after a passing run
    (apache/airflow#73428). The e2e tests run it and expect 0."""
    monkeypatch.setattr("sys.argv", ["airflow", "dags", "test", "soak_eos_id_assignment"])
    assert not build_dag({"dag_id": "soak_under_dags_test", "params": {}}).deadline


def scheduler_context(dag_id: str, run_id: str, queued_minutes_ago: float) -> dict:
    """What the scheduler hands a deadline callback: the DAG run as the REST API shows it, and the deadline."""
    queued = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=queued_minutes_ago)
    return {"dag_run": {"dag_id": dag_id, "dag_run_id": run_id, "queued_at": queued.isoformat(),
                        "start_date": (queued + dt.timedelta(seconds=2)).isoformat(), "state": "running"},
            "deadline": {"id": "0193", "deadline_time": queued.isoformat()}}


def test_a_run_that_ended_before_its_deadline_passed_gets_no_overdue_alert(channels, runs_dir):
    mails, posts = channels
    context = scheduler_context("soak_eos_id_assignment", "manual__2026-11-22T03:00:00+00:00", 20)
    context["dag_run"]["state"] = "failed"
    asyncio.run(deadline.overdue(context=context, expected_minutes=8.6))
    assert (mails, posts) == ([], [])
    alerts = runs_dir / "alerts.jsonl"
    assert not alerts.exists() or "manual__2026-11-22T03:00:00" not in alerts.read_text()


def test_a_run_still_queued_is_overdue_as_queued(channels, runs_dir):
    context = scheduler_context("soak_eos_id_assignment", "scheduled__2026-11-23T02:00:00+00:00", 31)
    context["dag_run"].update(state="queued", start_date=None)
    asyncio.run(deadline.overdue(context=context, expected_minutes=8.6))
    assert "is overdue: queued for 31 min, expected about 9 min" in channels[1][0]["body"]["text"]


def test_the_overdue_alert_reaches_every_channel_without_secrets(channels, runs_dir):
    mails, posts = channels
    run_id = "scheduled__2026-11-22T02:00:00+00:00"
    asyncio.run(deadline.overdue(context=scheduler_context("soak_eos_id_assignment", run_id, 47.2), expected_minutes=8.6))
    run_dir = rundir.run_dir("soak_eos_id_assignment", run_id)
    message = (f"soak soak_eos_id_assignment is overdue: running for 47 min, expected about 9 min (run {run_id}); "
               f"evidence: {run_dir}")
    alert = json.loads((runs_dir / "alerts.jsonl").read_text().splitlines()[-1])
    assert (alert["status"], alert["message"]) == ("overdue", message)
    assert len(mails) == 1 and mails[0]["Subject"].startswith("[kafka-soak] soak soak_eos_id_assignment is overdue")
    assert message in body(mails[0])
    assert len(posts) == 1 and posts[0]["body"]["text"].startswith(message)
    sent = [(runs_dir / "alerts.jsonl").read_text(), body(mails[0]), mails[0]["Subject"], json.dumps(posts)]
    assert not [s for s in sent[:3] if WEBHOOK_TOKEN in s], "the webhook token is a secret"
    assert WEBHOOK_TOKEN not in json.dumps([p["body"] for p in posts])
