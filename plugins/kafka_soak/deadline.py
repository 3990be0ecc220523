"""Deadline alert of a soak DAG: a run still going long after its program should have ended is reported as
overdue, through the same channels as a broken run (``alerting.publish``).

Airflow's deadline alerts (experimental since 3.1): each DAG run gets a deadline when it is created, counted from
the moment it was queued. The scheduler looks for missed deadlines in every loop and queues the callback of a missed
one; an ``AsyncCallback`` runs in the triggerer, which every soak deployment has (the program steps defer to it).
Not a ``SyncCallback``: on Airflow 3.3 the executor runs those with a token the Execution API refuses for
connections (apache/airflow#66141), so only channels set in environment variables would be reached. So the alert needs a
running scheduler and triggerer; ``airflow dags test`` never checks deadlines, so its DAGs get none.

The deadline counts from the moment the run was queued, as Airflow's ``DeadlineReference.DAGRUN_QUEUED_AT`` does, but
through a reference of our own (``SoakRunQueuedAt``, registered by the plugin ``soak_reports``): on Airflow 3.3 a
Clear recomputes every ``DAGRUN_QUEUED_AT`` deadline and fails doing so (HTTP 500, apache/airflow#70368), so a failed
soak run could not be cleared before its deadline passed. A Clear leaves our reference's deadline as it was.

The deadline is static per DAG: Airflow stores it with the serialized DAG, so it cannot follow a trigger's conf.
It is ``OVERDUE_FACTOR`` times what the scenario's default params should take (lead + program + drain timeout +
``VALIDATION_ALLOWANCE_S``), or the scenario file's ``deadline_minutes``. A trigger that asks for a much longer
program than the defaults can therefore be reported overdue while still healthy.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import math
import time
from typing import Any

from airflow.sdk.definitions.deadline import AsyncCallback, BaseDeadlineReference, DeadlineAlert

from kafka_soak import alerting, run_plan
from kafka_soak.faults.step_operator import under_dags_test
from kafka_soak.shared import rundir

log = logging.getLogger(__name__)

# Provision, stopping the instances, spark-submit validation (33 s measured, see docs/architecture.md), release.
VALIDATION_ALLOWANCE_S = 300
OVERDUE_FACTOR = 2


class SoakRunQueuedAt(BaseDeadlineReference):
    """When the DAG run was queued (what ``DeadlineReference.DAGRUN_QUEUED_AT`` evaluates to, under a name a Clear
    does not trip over). Evaluated by the scheduler, which imports it from the plugin's ``deadline_references``."""

    required_kwargs = {"dag_id", "run_id"}

    def _evaluate_with(self, *, session: Any, **kwargs: Any) -> dt.datetime | None:
        from airflow.models import DagRun
        from sqlalchemy import select

        return session.scalar(select(DagRun.queued_at).where(DagRun.dag_id == kwargs["dag_id"],
                                                             DagRun.run_id == kwargs["run_id"]))


def expected_s(defaults: dict[str, Any], lead_s: float) -> float:
    """How long a run with these params should take, the drain's timeout counted in full."""
    plan = run_plan.check(defaults)
    return lead_s + plan["program_s"] + plan["drain_timeout_s"] + VALIDATION_ALLOWANCE_S


def overdue_alert(scenario: dict[str, Any], defaults: dict[str, Any], lead_s: float) -> DeadlineAlert | None:
    """The DAG's deadline: ``deadline_minutes`` from the scenario file, else a multiple of the expected time.
    None under ``airflow dags test``: it never checks deadlines, and on Airflow 3.3.2 it exits 1 after a
    successful run of a DAG that has one (apache/airflow#73428), which would fail ``make soak``."""
    if under_dags_test():
        return None
    expected_min = expected_s(defaults, lead_s) / 60
    minutes = float(scenario.get("deadline_minutes") or math.ceil(OVERDUE_FACTOR * expected_min))
    return DeadlineAlert(reference=SoakRunQueuedAt(), interval=dt.timedelta(minutes=minutes),
                         callback=AsyncCallback(overdue, kwargs={"expected_minutes": round(expected_min, 1)}),
                         name="soak overdue")


async def overdue(context: dict[str, Any], expected_minutes: float) -> None:
    """Deadline callback, awaited by the triggerer with a context holding the DAG run as the REST API shows it.
    Publishing blocks (files, SMTP, HTTP), so it runs in a thread, off the triggerer's event loop."""
    run = context["dag_run"]
    dag_id, run_id = run["dag_id"], run["dag_run_id"]
    if run["state"] not in ("queued", "running"):
        # Airflow prunes the deadlines of successful runs only: a run that failed in time still misses its deadline
        # later. Its failure was alerted when it happened; "overdue" would be wrong.
        log.info("soak %s run %s ended (%s) before its deadline: no overdue alert", dag_id, run_id, run["state"])
        return
    # With max_active_runs=1 a run may wait behind a long one: it is then overdue while still queued.
    doing = "running" if run["start_date"] else "queued"
    since = dt.datetime.fromisoformat(run["start_date"] or run["queued_at"])
    minutes = (dt.datetime.now(dt.UTC) - since).total_seconds() / 60
    run_dir = rundir.run_dir(dag_id, run_id)
    alert = {"dag_id": dag_id, "run_id": run_id, "run_dir": str(run_dir), "at": time.time(), "status": "overdue",
             "message": f"soak {dag_id} is overdue: {doing} for {minutes:.0f} min, expected about "
                        f"{expected_minutes:.0f} min (run {run_id}); evidence: {run_dir}",
             "airflow_url": alerting.airflow_url(dag_id, run_id)}
    await asyncio.to_thread(alerting.publish, alert, context)
