"""Alerts reach people: a real SMTP server (aiosmtpd) and a real HTTP server standing in for a Slack incoming
webhook, both on loopback, receive what the Airflow notifiers send; the tests read what arrived (the alerts of real soak runs:
e2e/test_alerts_soak.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from support.alert_channels import body

from kafka_soak import alerting
from kafka_soak.shared import rundir


def test_a_broken_channel_does_not_silence_the_others(monkeypatch, webhook_server, runs_dir):
    posts, http_port = webhook_server
    monkeypatch.setenv("AIRFLOW_CONN_SOAK_ALERT_SMTP", json.dumps({"conn_type": "smtp", "host": "127.0.0.1",
                                                                   "port": 1, "extra": {"disable_ssl": True,
                                                                                        "disable_tls": True}}))
    monkeypatch.setenv("AIRFLOW_CONN_SOAK_ALERT_SLACK", json.dumps({
        "conn_type": "slackwebhook", "password": f"http://127.0.0.1:{http_port}/services/x"}))
    alert = {"dag_id": "d", "run_id": "r", "status": "no_verdict", "message": "soak d did not reach a verdict: "
             "task provision failed (run r); logs: /runs/d/r", "run_dir": "/runs/d/r"}
    alerting.publish(alert, {})
    assert [p["body"]["text"] for p in posts] == ["soak d did not reach a verdict: task provision failed (run r); "
                                                  "logs: /runs/d/r\nrun dir: /runs/d/r"]
    assert json.loads((runs_dir / "alerts.jsonl").read_text().splitlines()[-1])["message"] == alert["message"]


def test_a_run_without_a_verdict_says_which_task_failed_first_and_why(tmp_path):
    """The tasks' failure callback keeps why each failed (failures.jsonl); the alert leads with the earliest."""
    run_dir = tmp_path / "d" / "r"
    run_dir.mkdir(parents=True)
    rows = [{"task_id": "validate", "map_index": -1, "try": 1, "error": "upstream failed", "at": 20.0},
            {"task_id": "provision", "map_index": -1, "try": 1, "at": 10.0,
             "error": "BrokerStartError: broker 1 exited while starting\n[kafka-1.log] Address already in use"}]
    (run_dir / "failures.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    alert = alerting.compose("d", "r", run_dir, failed_task="validate")
    assert alert["status"] == "no_verdict" and alert["failed_task"] == "provision"
    assert alert["message"] == (f"soak d did not reach a verdict: task provision failed: BrokerStartError: broker 1 "
                                f"exited while starting (run r); logs: {run_dir}")
    assert alert["details"] == ["[kafka-1.log] Address already in use"]
    (run_dir / "failures.jsonl").unlink()
    assert alerting.compose("d", "r", run_dir, failed_task="drain")["message"] == (
        f"soak d did not reach a verdict: task drain failed (run r); logs: {run_dir}")


def test_a_torn_line_in_the_evidence_still_alerts_and_names_the_damaged_file(tmp_path, caplog):
    """A full disk or a network file system tears a run's last JSONL line: the alert goes out from the rest of the
    evidence, and the log says which file and line were skipped (one torn line once meant no alert and no report)."""
    run_dir = tmp_path / "d" / "r"
    run_dir.mkdir(parents=True)
    row = {"task_id": "provision", "map_index": -1, "try": 1, "at": 10.0, "error": "BrokerStartError: no broker"}
    (run_dir / "failures.jsonl").write_text(json.dumps(row) + '\n{"task_id": "drain", "map_in')
    (run_dir / "events.jsonl").write_text('{"event": "start", "instance": 1, "at": 1.0}\n\x00\x00\n')
    alert = alerting.compose("d", "r", run_dir, failed_task="drain")
    assert alert["message"] == (f"soak d did not reach a verdict: task provision failed: BrokerStartError: no broker "
                                f"(run r); logs: {run_dir}")
    assert f"{run_dir / 'failures.jsonl'}: line 2 is no JSON record" in caplog.text
    assert rundir.read_jsonl(run_dir / "events.jsonl") == [{"event": "start", "instance": 1, "at": 1.0}]
    assert f"{run_dir / 'events.jsonl'}: line 2 is no JSON record" in caplog.text


def test_a_run_airflow_calls_successful_without_a_passed_verdict_is_alerted_as_broken(tmp_path, monkeypatch):
    """A DAG run marked failed by hand: Airflow runs its teardowns, then calls it successful (the success callback,
    no failure callback, no task failure on record). Without a passed verdict that is a broken run; the next passing
    run recovers from it. (tests/e2e/test_scheduler_runs.py shows it under a real scheduler.)"""
    monkeypatch.setenv("SOAK_RUNS_DIR", str(tmp_path))
    dag_id = "soak_eos_id_assignment"
    context = {"dag": SimpleNamespace(dag_id=dag_id), "run_id": "r", "dag_run": SimpleNamespace(clear_number=0),
               "ti": SimpleNamespace(task_id="release")}  # the context of a DAG callback names the last task
    run_dir = rundir.run_dir(dag_id, "r", 1, create=True)
    alerting.SoakAlertNotifier(on="success").notify(context)
    alert = json.loads((tmp_path / "alerts.jsonl").read_text())
    assert (alert["status"], alert["message"]) == ("no_verdict", (
        f"soak {dag_id} did not reach a verdict: validate did not run and no task failure is on record (a DAG run "
        f"marked failed by hand ends so, after its teardowns) (run r); logs: {run_dir}"))
    (rundir.run_dir(dag_id, "r", 2, create=True) / "verdict.json").write_text(json.dumps({"status": "passed"}))
    alerting.SoakAlertNotifier(on="success").notify({**context, "dag_run": SimpleNamespace(clear_number=1)})
    assert json.loads((tmp_path / "alerts.jsonl").read_text().splitlines()[-1])["status"] == "recovered"


def test_an_alert_goes_out_when_no_evidence_can_be_written(channels, tmp_path, monkeypatch):
    """A full disk or an unwritable runs directory: the channels are tried first, each on its own, and the alert says
    what could not be written. (Tests run as root, whom permissions do not stop: a runs directory below a regular
    file refuses every write, as a full disk does.)"""
    mails, posts = channels
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("SOAK_RUNS_DIR", str(blocker / "runs"))
    context = {"dag": SimpleNamespace(dag_id="soak_eos_id_assignment"), "run_id": "manual__2026-11-23T12:00:00+00:00",
               "dag_run": SimpleNamespace(clear_number=0), "ti": SimpleNamespace(task_id="check_params")}
    alerting.SoakAlertNotifier().notify(context)
    assert len(mails) == 1 and len(posts) == 1
    text = posts[0]["body"]["text"]
    assert "did not reach a verdict: task check_params failed" in text
    assert "evidence not written: the run directory" in text and "evidence not written: the alert streak" in text
    assert "evidence not written" in body(mails[0])
    assert blocker.read_text() == ""


def test_the_details_name_the_quota_s_outcome_and_the_app_s_exceptions(tmp_path):
    """The quota scenario's alert says what the quota did and what the app went through, beside the anomalies, and so
    does the alert of a run that stopped before a verdict (its drain task failed)."""
    usage = {"client_id": "a-1-StreamThread-1-producer", "setting": "producer_byte_rate", "quota": 35000.0,
             "unit": "B/s", "measured": "byte-rate", "achieved": 34890.2, "peak": 41020.0, "throttle_ms_max": 812.0,
             "bit": True, "per_broker": {}}
    health = {"instances": {"1": {"starts": 1, "restarts": 0, "exits": [{"expected": True, "by": "a graceful stop"}]}},
              "exceptions": {"InvalidProducerEpochException": {"count": 2, "errors": 2, "first": None}},
              "thread_deaths": 0, "incidents": [], "allowance": 0, "unexpected_exits": 0, "errors": 0,
              "injected_crashes": 0, "restarts": 0}
    lines = alerting.details({"anomalies": {"lost": 0}, "health": health, "quotas": [usage]})
    assert lines == [
        "app health: 1 instance exits (0 unexpected), 0 error incidents, 0 stream thread deaths; exceptions: "
        "InvalidProducerEpochException x2",
        "quota a-1-StreamThread-1-producer producer_byte_rate=35000 B/s: the broker measured byte-rate 34890.2 (median; "
        "peak 41020.0) and throttled it up to 812.0 ms"]
    rundir.write_json(tmp_path / "health.json", health)
    rundir.write_json(tmp_path / "quotas.json", [usage])
    rundir.append_jsonl(tmp_path / "failures.jsonl", {"task_id": "drain", "map_index": -1, "try": 1, "at": 1.0,
                                                      "error": "the group still lags 5062 records\npartition 0: 5062"})
    alert = alerting.compose("q", "r", tmp_path, failed_task="drain")
    assert alert["status"] == "no_verdict" and alert["details"] == ["partition 0: 5062", *lines]
