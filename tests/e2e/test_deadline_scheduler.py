"""A run that outlives its deadline under a real Airflow (API server, scheduler, DAG processor, triggerer on a private
SQLite database) is alerted to a real SMTP server and a webhook on loopback, with no secret in what they or the
Airflow's files hold, and the run's report is then reachable through the plugin (the deadline of each scenario DAG
and its callback: unit/airflow_side/test_deadline.py)."""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import quote

import httpx
from support.airflow_stack import FAILING_DAG, PROBE_DAG, AirflowStack
from support.alert_channels import WEBHOOK_TOKEN, body

from kafka_soak.shared import rundir


def test_a_scheduler_alerts_on_a_run_past_its_deadline(tmp_path, smtp_server, webhook_server):
    inbox, smtp_port = smtp_server
    posts, http_port = webhook_server
    with AirflowStack(tmp_path) as stack:
        stack.start("api-server", "scheduler", "dag-processor", "triggerer")
        token = stack.token()
        api = stack.api(token)
        # The channels as a deployment keeps them: connections in Airflow's database, created through its API.
        for conn in ({"connection_id": "soak_alert_smtp", "conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port,
                      "extra": json.dumps({"disable_ssl": True, "disable_tls": True, "to": "oncall@example.test",
                                           "from_email": "kafka-soak@example.test"})},
                     {"connection_id": "soak_alert_slack", "conn_type": "slackwebhook",
                      "password": f"http://127.0.0.1:{http_port}/services/{WEBHOOK_TOKEN}"}):
            assert api.post("/api/v2/connections", json=conn).status_code == 201
        run_id = stack.trigger(api)
        failed_run_id = stack.trigger(api, FAILING_DAG)
        failed = stack.mark_failed(api, FAILING_DAG, failed_run_id)
        ended_after_s = (dt.datetime.fromisoformat(failed["end_date"])
                         - dt.datetime.fromisoformat(failed["queued_at"])).total_seconds()
        assert ended_after_s < 60, f"the failed run must end before its deadline (1 min): it ended after {ended_after_s} s"

        stack.wait_for("the overdue alert reaches the webhook", lambda: posts, 120)
        text = posts[0]["body"]["text"]
        assert text.startswith(f"soak {PROBE_DAG} is overdue: running for ") and f"(run {run_id})" in text
        assert f"{stack.base}/dags/{PROBE_DAG}/runs/{quote(run_id)}" in text, "the alert links to the DAG run"
        stack.wait_for("the overdue alert reaches the mailbox", lambda: inbox.messages, 60)
        assert f"(run {run_id})" in body(inbox.messages[0])
        alert = json.loads((stack.runs / "alerts.jsonl").read_text().splitlines()[-1])
        assert (alert["status"], alert["run_id"]) == ("overdue", run_id)
        assert stack.run_state(api, PROBE_DAG, run_id, 300) == "success", "a late run is reported, not failed"
        # A run that failed before its deadline: Airflow still calls back when the deadline passes; no alert.
        stack.wait_for("the failed run's deadline passes", lambda: f"run {failed_run_id} ended (failed) before its "
                       "deadline: no overdue alert" in (stack.home / "triggerer.log").read_text(), 300)
        assert len(posts) == 1 and failed_run_id not in (stack.runs / "alerts.jsonl").read_text()

        # The API server mounts the plugin's app: the DAG run's tab reaches the run's report.
        run_dir = stack.runs / PROBE_DAG / rundir.safe_name(run_id)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "report.html").write_text("<html>report of the probe run</html>")
        tab = next(v for p in api.get("/api/v2/plugins").json()["plugins"] for v in p["external_views"]
                   if v["destination"] == "dag_run")
        href = tab["href"].replace("{DAG_ID}", quote(PROBE_DAG, safe="")).replace("{RUN_ID}", quote(run_id, safe=""))
        page = api.get(f"/{href}")
        assert (page.status_code, page.text) == (200, "<html>report of the probe run</html>")
        assert httpx.get(f"{stack.base}/{href}").status_code == 401, "the API server's auth guards the reports"
    written = [p for p in tmp_path.rglob("*") if p.is_file() and not p.name.startswith("airflow.db")]
    assert not [str(p) for p in written if WEBHOOK_TOKEN in p.read_text(errors="replace")], \
        "the webhook token is kept in Airflow's database only: in no log (API server, scheduler, triggerer, " \
        "task, callback) and no run file"
