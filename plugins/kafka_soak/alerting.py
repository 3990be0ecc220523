"""Alerting: one message per broken run that a person can act on, and one when a scenario recovers.

A failed verdict names scenario, run, anomaly counts, the first samples and where the evidence is; a run
that never reached a verdict says so, names the task where it stopped and why (``failures.jsonl``, written by
every task's failure callback); the first passing run after
failures sends a recovery message. Every message goes to the task log and ``$SOAK_RUNS_DIR/alerts.jsonl``,
and through the providers' notifiers to each channel that has an Airflow connection:
``soak_alert_smtp`` (SMTP; recipients in its extra ``to``, else ``SOAK_ALERT_TO``) and
``soak_alert_slack`` (a Slack incoming webhook, conn type ``slackwebhook``). A channel that fails is
logged; it never hides the alert from the others. No connection field is ever part of a message.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from airflow.sdk import BaseNotifier
from airflow.sdk.exceptions import AirflowFailException

from kafka_soak import evidence
from kafka_soak.backends.quota_meter import describe
from kafka_soak.clients.health import one_line
from kafka_soak.shared import rundir

log = logging.getLogger(__name__)

SMTP_CONN_ID = "soak_alert_smtp"
SLACK_CONN_ID = "soak_alert_slack"
# Where the evidence is, in the order a person would open it.
LINKS = {"report_url": "report in Airflow", "report": "report", "data_docs": "data docs", "run_dir": "run dir",
         "airflow_url": "DAG run in Airflow"}
# A DAG run that ended without its validation and with no task failure on record: Airflow calls a run marked failed
# by hand successful once its teardowns have run, and calls no failure callback for it.
NOT_VALIDATED = ("validate did not run and no task failure is on record (a DAG run marked failed by hand ends so, "
                 "after its teardowns)")


def compose(dag_id: str, run_id: str, run_dir: Path, failed_task: str | None) -> dict[str, Any]:
    """The alert for a failed run: the verdict's anomalies when validation got that far, else where it stopped."""
    verdict_path = run_dir / rundir.VERDICT
    alert: dict[str, Any] = {"dag_id": dag_id, "run_id": run_id, "run_dir": str(run_dir), "at": time.time()}
    if verdict_path.exists():
        verdict = json.loads(verdict_path.read_text())
        found = {k: v for k, v in verdict["anomalies"].items() if v}
        alert.update(status=verdict["status"], anomalies=found, data_docs=verdict.get("data_docs"),
                     samples={k: v[:3] for k, v in verdict.get("samples", {}).items()})
        if verdict["status"] == "failed":
            what = ", ".join(f"{k}={v}" for k, v in found.items())
            alert["message"] = f"soak {dag_id} FAILED: {what} (run {run_id}); evidence: {run_dir}"
            alert["details"] = drain_lines(rundir.read_json(run_dir / rundir.DRAIN) or {}) + details(verdict)
        else:
            alert["message"] = (f"soak {dag_id} INCONCLUSIVE: {'; '.join(verdict['inconclusive_reasons'])} "
                                f"(run {run_id}); evidence: {run_dir}")
    else:
        failure = evidence.first_failure(run_dir)
        task = failure["task_id"] if failure else failed_task
        why = failure["error"].splitlines() if failure else []
        alert.update(status="no_verdict", failed_task=task)
        stopped = f"task {task} failed" if task else NOT_VALIDATED
        alert["message"] = (f"soak {dag_id} did not reach a verdict: {stopped}"
                            f"{': ' + why[0] if why else ''} (run {run_id}); logs: {run_dir}")
        # e.g. the drain's lag per partition, owners and open transactions; then what the app went through
        health, quotas = rundir.read_json(run_dir / rundir.HEALTH), rundir.read_json(run_dir / rundir.QUOTAS)
        alert["details"] = why[1:] + app_lines(health or {}, quotas or [], incidents=True)
    return alert


def record_task_failure(context: Any) -> None:
    """Every task's ``on_failure_callback``: why it failed, into the run's ``failures.jsonl``. A DAG-level callback
    knows which task failed but not why; the alert and the report say why in their first lines."""
    try:
        ti, exc = context["ti"], context.get("exception")
        error = (str(exc) if isinstance(exc, AirflowFailException) else f"{type(exc).__name__}: {exc}") if exc else \
            "no exception was given"
        rundir.append_jsonl(rundir.for_context(context) / rundir.FAILURES, {
            "task_id": ti.task_id, "map_index": ti.map_index, "try": ti.try_number, "error": error, "at": time.time()})
    except Exception:  # a callback must not hide the failure it reports
        log.exception("could not record why the task failed")


def quote_assertion(sample: dict[str, Any]) -> str:
    """An app self-check failure the way the original reproduction printed it."""
    return (f"!!! BROKEN !!! Expected {sample['expected']} but found {sample['found']} partition: "
            f"{sample['partition']} (key {sample['key']}, instance {sample['instance']}, started at step "
            f"{sample.get('step', '?')})")


def drain_lines(drain: dict[str, Any]) -> list[str]:
    """A drain that timed out, in the alert's first lines: which partitions stalled, the lag it left and how fast
    the app was working it off."""
    if drain.get("status") != "timed out":
        return []
    return [line for line in drain.get("summary", "").splitlines()
            if "drain timed out:" in line or line.startswith(("stalled:", "backlog:"))]


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
    for row in verdict.get("matrix", []):  # which versions or designs have it
        found = ", ".join(f"{k}={v}" for k, v in row["anomalies"].items() if v)
        lines.append(f"{row.get('label') or 'Kafka Streams ' + row['version']}: {row['status']}"
                     + (f" ({found})" if found else ""))
    return lines + app_lines(verdict.get("health") or {}, verdict.get("quotas") or [],
                             incidents=bool(verdict["anomalies"].get("app_health")))


def app_lines(health: dict[str, Any], quotas: list[dict[str, Any]], incidents: bool) -> list[str]:
    """What the app went through (``health.json``: its first incidents, its exceptions by class, its injected
    crashes) and what each quota did (``quotas.json``), whether or not the run reached a verdict."""
    lines = [f"app health: {i['what']}" for i in health.get("incidents", [])[:3]] if incidents else []
    if health.get("exceptions") or health.get("injected_crashes"):
        lines.append(f"app health: {one_line(health)}")
    return lines + [describe(usage) for usage in quotas]


def text(alert: dict[str, Any]) -> str:
    """The alert as plain text: the headline, the counts, the first samples, where to look."""
    lines = [alert["message"], *alert.get("details", [])]
    for anomaly, samples in alert.get("samples", {}).items():
        for sample in samples:
            lines.append(f"  {anomaly}: " + ", ".join(f"{k}={v}" for k, v in sample.items()))
    for name, label in LINKS.items():
        if alert.get(name):
            lines.append(f"{label}: {alert[name]}")
    return "\n".join(lines)


def recovery(dag_id: str, run_id: str, run_dir: Path, failures: list[str]) -> dict[str, Any]:
    return {"dag_id": dag_id, "run_id": run_id, "run_dir": str(run_dir), "at": time.time(), "status": "recovered",
            "message": f"soak {dag_id} RECOVERED: run {run_id} passed after {len(failures)} broken run(s) "
                       f"(first: {failures[0]}); evidence: {run_dir}"}


def airflow_url(dag_id: str, run_id: str, report: bool = False) -> str | None:
    """The DAG run's page in the Airflow UI (or, with ``report``, its soak report served by the UI plugin), when
    the deployment says where the UI is (``[api] base_url``)."""
    from urllib.parse import quote

    from airflow.configuration import conf

    base = conf.get("api", "base_url", fallback="").rstrip("/")
    if not base:
        return None
    if report:
        from kafka_soak.evidence.ui import URL_PREFIX

        return f"{base}{URL_PREFIX}/runs/{quote(dag_id)}/{quote(run_id, safe='')}/"
    return f"{base}/dags/{quote(dag_id)}/runs/{quote(run_id)}"


class StreakBook:
    """Per scenario: the broken runs since the last passing one (``<runs>/<dag_id>/alert-state.json``)."""

    def __init__(self, dag_id: str) -> None:
        self.path = rundir.runs_root() / dag_id / "alert-state.json"

    def failures(self) -> list[str]:
        return (rundir.read_json(self.path) or {}).get("failures", [])

    def save(self, failures: list[str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rundir.write_json(self.path, {"failures": failures})


class SoakAlertNotifier(BaseNotifier):
    """DAG callback. ``on_failure`` (default): alert on a broken run. ``on_success``: a recovery message when
    the previous runs of the scenario were broken, nothing otherwise; a run Airflow calls successful without a
    passed verdict (marked failed by hand: its teardowns ran, validate did not) is alerted as broken."""

    template_fields = ()

    def __init__(self, on: str = "failure") -> None:
        super().__init__()
        self.on = on

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        # Nothing to render; skipping the base call also sidesteps apache/airflow#64649, where a DAG-level
        # notifier fails under `airflow dags test` ("SerializedDAG has no attribute get_template_env").
        return None

    def notify(self, context: Any) -> None:
        dag_id, run_id = context["dag"].dag_id, context["run_id"]
        run_dir = rundir.run_dir(dag_id, run_id, rundir.attempt_of(context["dag_run"]))
        url = airflow_url(dag_id, run_id)
        unwritten: list[str] = []  # evidence a full disk or an unwritable runs directory kept from being written
        from kafka_soak.evidence import report  # the pages' modules (charts, templates) only when a run ends

        report_path = report.write_pages(run_dir, url, unwritten)
        book = StreakBook(dag_id)
        failures = book.failures()
        if self.on == "success" and (rundir.read_json(run_dir / rundir.VERDICT) or {}).get("status") == "passed":
            if not failures:
                return
            alert, streak = recovery(dag_id, run_id, run_dir, failures), []
        else:  # a failed run, or one Airflow calls successful without a passed verdict (its "ti" is a task that passed)
            failed = getattr(context.get("ti"), "task_id", None) if self.on == "failure" else None
            alert, streak = compose(dag_id, run_id, run_dir, failed), [*failures, run_id]
        try:
            book.save(streak)
        except OSError as exc:
            unwritten.append(f"the alert streak {book.path} ({exc.strerror or exc})")
        alert.update(airflow_url=url, report=str(report_path) if report_path else None,
                     report_url=airflow_url(dag_id, run_id, report=True) if report_path else None)
        if unwritten:
            alert["details"] = [f"evidence not written: {what}" for what in unwritten] + alert.get("details", [])
        publish(alert, context)


def publish(alert: dict[str, Any], context: Any) -> None:
    """Log the alert and send it to every configured channel first, each on its own, then keep it in
    ``alerts.jsonl``: a full disk or an unwritable runs directory silences no channel."""
    log.log(logging.INFO if alert["status"] == "recovered" else logging.ERROR, "ALERT: %s", alert["message"])
    for line in alert.get("details", []):
        log.error("ALERT: %s", line)
    for channel, send in (("smtp", send_mail), ("slack", send_slack)):
        try:
            if send(alert, context):
                log.info("alert sent by %s", channel)
        except Exception as exc:  # one broken channel must not silence the others
            log.error("could not send the alert by %s: %s", channel, exc)
    root = rundir.runs_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        rundir.append_jsonl(root / "alerts.jsonl", alert)
    except OSError as exc:
        log.error("could not keep the alert in %s: %s", root / "alerts.jsonl", exc)


def _connection(conn_id: str) -> Any:
    """The channel's connection, its password (SMTP password, webhook URL or token) registered with Airflow's
    masker first: a client error may quote it, and the error is logged."""
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException
    from airflow.sdk.log import mask_secret

    try:
        conn = Connection.get(conn_id)
    except AirflowNotFoundException:
        return None
    if conn.password:
        mask_secret(conn.password)
    return conn


def send_mail(alert: dict[str, Any], context: Any) -> bool:
    conn = _connection(SMTP_CONN_ID)
    if conn is None:
        return False
    from html import escape

    from airflow.providers.smtp.notifications.smtp import SmtpNotifier

    extra = conn.extra_dejson
    to = extra.get("to") or os.environ.get("SOAK_ALERT_TO", "root@localhost")
    # Every field given, so the notifier renders no template (rendering needs the DAG's template env, which a
    # DAG-level callback does not have under `airflow dags test`: apache/airflow#64649).
    SmtpNotifier(to=to, from_email=extra.get("from_email") or "kafka-soak@localhost", smtp_conn_id=SMTP_CONN_ID,
                 subject=f"[kafka-soak] {alert['message'][:180]}",
                 html_content=f"<pre>{escape(text(alert))}</pre>").notify(context)
    return True


def send_slack(alert: dict[str, Any], context: Any) -> bool:
    if _connection(SLACK_CONN_ID) is None:
        return False
    from airflow.providers.slack.notifications.slack_webhook import SlackWebhookNotifier

    SlackWebhookNotifier(slack_webhook_conn_id=SLACK_CONN_ID, text=text(alert)).notify(context)
    return True
