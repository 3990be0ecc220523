"""Scenario files -> soak DAGs. Every scenario in ``dags/scenarios/*.yaml`` becomes one DAG, wired here from the
tasks of ``tasks.py`` and the two operators (``faults.step_operator``, ``checker.validate``):

    check_params -> provision (setup) -> schedule_program -> start_generator -> program_step[step] (mapped, deferrable)
    -> await_generator -> drain -> stop_instances (teardown) -> validate (spark-submit) -> release (teardown)
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from pathlib import Path
from typing import Any

from airflow.sdk import DAG

from kafka_soak import tasks
from kafka_soak.admission import Admission, ScenarioError, load_scenario, unreadable_scenario
from kafka_soak.alerting import SoakAlertNotifier, record_task_failure
from kafka_soak.checker.validate import ValidateOperator
from kafka_soak.deadline import overdue_alert
from kafka_soak.faults.step_operator import ProgramStepOperator, under_dags_test
from kafka_soak.shared import rundir

NIGHTLY = "0 2 * * *"

log = logging.getLogger(__name__)
# How far ahead of its planning T0 is set (a scenario file's ``program_lead_s`` overrides it), so that the generator's
# task and step 0's start before it: a scheduler takes seconds to queue each, `airflow dags test` runs them in the
# same process within half a second (bench/overhead.py measured 0.3 s).
PROGRAM_LEAD_S = 5.0
DAGS_TEST_LEAD_S = 2.0
# The scenarios (dag ids, comma-separated) ``build_all`` builds, when set: `airflow dags test` parses the whole DAG
# folder and writes every DAG it holds to the database, each time; a run started from this machine needs only its own.
ONLY_ENV = "SOAK_ONLY_SCENARIOS"


def build_dag(scenario: dict[str, Any]) -> DAG:
    dag_id = scenario["dag_id"]
    lead_s = float(scenario.get("program_lead_s", DAGS_TEST_LEAD_S if under_dags_test() else PROGRAM_LEAD_S))
    admission = Admission.for_scenario(scenario)
    if admission.refusal:  # in the DAG processor's log at every parse; each run is refused with it too
        log.error("%s", admission.refusal)

    with DAG(
        dag_id=dag_id,
        description=scenario.get("description"),
        doc_md=scenario.get("doc_md"),
        schedule=scenario.get("schedule", NIGHTLY),
        start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        catchup=False,
        max_active_runs=1,
        tags=["kafka-soak", *scenario.get("tags", [])],
        params=admission.params,
        deadline=None if admission.refusal else overdue_alert(scenario, admission.defaults, lead_s),
        # No retries: a task tries again only when a Clear caught it running and it failed on its way out (its
        # attempt torn down under it); that new try belongs to the new attempt and starts at once, not after
        # Airflow's default retry_delay of 300 s
        default_args={"retries": 0, "retry_delay": dt.timedelta(0), "on_failure_callback": record_task_failure},
        on_failure_callback=[SoakAlertNotifier()],
        on_success_callback=[SoakAlertNotifier(on="success")],
        user_defined_macros={"soak_run_dir": lambda dag_run: str(rundir.run_dir(dag_id, dag_run.run_id,
                                                                                 rundir.attempt_of(dag_run)))},
    ) as dag:
        plan = tasks.CheckParamsOperator(task_id="check_params", admission=admission).output
        cluster = tasks.provision(plan)
        program = tasks.schedule_program(plan, cluster, lead_s)
        generator = tasks.start_generator(plan, cluster, program)
        steps = ProgramStepOperator.partial(
            task_id="program_step", cluster=cluster, plan=plan, map_index_template="{{ step_label }}",
        ).expand(step=program)
        loaded = tasks.await_generator(plan, cluster)
        drained = tasks.drain(plan, cluster)
        stopped = tasks.stop_instances(plan, cluster)
        validate = ValidateOperator(
            task_id="validate", cluster=cluster, plan=plan, conn_id="spark_default", name=f"kafka-soak-validate-{dag_id}",
            out_dir="{{ soak_run_dir(dag_run) }}")
        released = tasks.release(plan)

        plan >> cluster >> program >> generator >> steps >> loaded >> drained >> stopped >> validate >> released
        drained >> validate
        stopped.as_teardown(setups=cluster)
        released.as_teardown(setups=cluster)
    return dag


def build_all(scenarios_dir: Path | str) -> dict[str, DAG]:
    """One DAG per scenario file (``*.yaml``) of a folder, by dag id: a team's own folder gets its soaks with one line,
    ``globals().update(build_all("/opt/soaks"))`` in a DAG file of its Airflow."""
    only = set(filter(None, os.environ.get(ONLY_ENV, "").split(",")))
    dags = {}
    for path in sorted(Path(scenarios_dir).glob("*.yaml")):
        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:  # costs this file alone: its DAG refuses every run, saying why
            scenario = unreadable_scenario(path, exc)
        if (not only or scenario["dag_id"] in only) and scenario["dag_id"] not in dags:
            dags[scenario["dag_id"]] = build_dag(scenario)
    return dags
