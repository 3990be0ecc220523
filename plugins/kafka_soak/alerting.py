"""Alerting on broken runs: one concise message naming the anomaly, its count, the run and the evidence.

The message goes to the task log and is appended to ``$SOAK_RUNS_DIR/alerts.jsonl``; where an Airflow
connection ``soak_alert_smtp`` (SMTP) exists, it is also mailed to ``SOAK_ALERT_TO`` with the SMTP
provider's notifier.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from airflow.sdk import BaseNotifier

from kafka_soak import rundir

log = logging.getLogger(__name__)

SMTP_CONN_ID = "soak_alert_smtp"


def compose(dag_id: str, run_id: str, run_dir: Path, failed_task: str | None) -> dict[str, Any]:
    """The alert for a failed run: the verdict's anomalies when validation got that far, else where it stopped."""
    verdict_path = run_dir / "verdict.json"
    alert: dict[str, Any] = {"dag_id": dag_id, "run_id": run_id, "run_dir": str(run_dir), "at": time.time()}
    if verdict_path.exists():
        verdict = json.loads(verdict_path.read_text())
        found = {k: v for k, v in verdict["anomalies"].items() if v}
        alert.update(status=verdict["status"], anomalies=found, data_docs=verdict.get("data_docs"),
                     samples={k: v[:3] for k, v in verdict.get("samples", {}).items()})
        if verdict["status"] == "failed":
            what = ", ".join(f"{k}={v}" for k, v in found.items())
            alert["message"] = f"soak {dag_id} FAILED: {what} (run {run_id}); evidence: {run_dir}"
            alert["details"] = details(verdict)
        else:
            alert["message"] = (f"soak {dag_id} INCONCLUSIVE: {'; '.join(verdict['inconclusive_reasons'])} "
                                f"(run {run_id}); evidence: {run_dir}")
    else:
        alert.update(status="no_verdict", failed_task=failed_task)
        alert["message"] = (f"soak {dag_id} did not reach a verdict: task {failed_task or 'unknown'} failed "
                            f"(run {run_id}); logs: {run_dir}")
    return alert


def quote_assertion(sample: dict[str, Any]) -> str:
    """An app self-check failure the way the original reproduction printed it."""
    return (f"!!! BROKEN !!! Expected {sample['expected']} but found {sample['found']} partition: "
            f"{sample['partition']} (key {sample['key']}, instance {sample['instance']}, started at step "
            f"{sample.get('step', '?')})")


def details(verdict: dict[str, Any]) -> list[str]:
    """Lines that let a person recognise the failure without opening the run directory."""
    lines = []
    stale = verdict.get("samples", {}).get("stale_state")
    if stale:
        lines.append(quote_assertion(stale[0]))
    records = verdict.get("records", {})
    if verdict["anomalies"].get("id_reuse") and "distinct_keys" in records:
        lines.append(f"each key should have one distinct id: expected {records['distinct_keys']} distinct ids "
                     f"but found {records['distinct_assigned_ids']}")
    return lines


class SoakAlertNotifier(BaseNotifier):
    """DAG failure callback: composes the alert and sends it to every configured channel."""

    template_fields = ()

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        # Nothing to render; skipping the base call also sidesteps apache/airflow#64649, where a DAG-level
        # notifier fails under `airflow dags test` ("SerializedDAG has no attribute get_template_env").
        return None

    def notify(self, context: Any) -> None:
        dag_id, run_id = context["dag"].dag_id, context["run_id"]
        ti = context.get("ti")
        alert = compose(dag_id, run_id, rundir.run_dir(dag_id, run_id), getattr(ti, "task_id", None))
        log.error("ALERT: %s", alert["message"])
        for line in alert.get("details", []):
            log.error("ALERT: %s", line)
        root = rundir.runs_root()
        root.mkdir(parents=True, exist_ok=True)
        rundir.append_jsonl(root / "alerts.jsonl", alert)
        self.send_mail(alert, context)

    @staticmethod
    def send_mail(alert: dict[str, Any], context: Any) -> None:
        from airflow.sdk import Connection
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            Connection.get(SMTP_CONN_ID)
        except AirflowNotFoundException:
            return
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        SmtpNotifier(to=os.environ.get("SOAK_ALERT_TO", "root@localhost"), smtp_conn_id=SMTP_CONN_ID,
                     subject=alert["message"][:200], html_content=f"<pre>{json.dumps(alert, indent=2)}</pre>",
                     ).notify(context)
