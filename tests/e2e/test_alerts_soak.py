"""Alerts of real soak runs (the broken run and the recovered run of ``conftest.alerted_runs``) reach a real SMTP server
(aiosmtpd) and a real HTTP server standing in for a Slack incoming webhook, both on loopback."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from support.alert_channels import WEBHOOK_TOKEN, body
from support.soak_runs import ALERTED_RUNS, SHORT


def verdict_run_id(run_dir) -> str:
    return json.loads((run_dir / "params.json").read_text())["run_id"]


@pytest.mark.xdist_group(name=ALERTED_RUNS)
def test_a_broken_run_alerts_every_channel_and_the_next_passing_run_says_it_recovered(alerted_runs):
    (code, run_dir, verdict), (mails, posts) = alerted_runs.broken, alerted_runs.broken_alerts
    assert code == 1 and verdict["anomalies"]["lost"] == SHORT["records"] // 1000
    assert len(mails) == 1 and len(posts) == 1
    mail = mails[0]
    assert mail["To"] == "oncall@example.test"
    assert "FAILED: lost=6" in mail["Subject"] and "soak_eos_id_assignment" in mail["Subject"]
    text = body(mail)
    assert "lost: " in text and "data docs: " in text and str(run_dir) in text
    assert f"report: {run_dir / 'report.html'}" in text
    assert (f"report in Airflow: http://127.0.0.1:8080/soak-reports/runs/soak_eos_id_assignment/"
            f"{quote(verdict_run_id(run_dir), safe='')}/") in text
    assert "DAG run in Airflow: http://127.0.0.1:8080/dags/soak_eos_id_assignment/runs/" in text
    slack = posts[0]
    assert slack["path"] == f"/services/{WEBHOOK_TOKEN}"
    assert "FAILED: lost=6" in slack["body"]["text"] and "lost: " in slack["body"]["text"]

    (code, run_dir2, verdict), mails, posts = alerted_runs.passed, alerted_runs.mails, alerted_runs.posts
    assert code == 0 and verdict["status"] == "passed"
    assert len(mails) == 2 and len(posts) == 2
    assert "RECOVERED" in mails[1]["Subject"] and "after 1 broken run(s)" in posts[1]["body"]["text"]

    evidence = [alerted_runs.runs_dir / "alerts.jsonl",
                *[p for d in (run_dir, run_dir2) for p in d.rglob("*") if p.is_file()]]
    leaks = [str(p) for p in evidence if WEBHOOK_TOKEN in p.read_text(errors="replace")]
    assert not leaks, "the webhook token is a secret"
