"""Scenario files -> soak DAGs. Every scenario in ``dags/scenarios/*.yaml`` becomes one DAG wired here; each task
body is a call into the module whose job it is (``admission``, ``backends``, ``steps``, ``load``, ``drain``,
``teardowns``, the operators).

    check_params -> provision (setup) -> plan_program -> start_generator -> toggle[step] (mapped, deferrable)
    -> await_generator -> drain -> stop_instances (teardown) -> validate (spark-submit) -> release (teardown)
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, get_current_context, setup, task, teardown
from airflow.sdk.exceptions import AirflowFailException

from kafka_soak import backends, broker_matrix, teardowns
from kafka_soak.admission import Admission, load_scenario, open_run
from kafka_soak.alerting import SoakAlertNotifier, record_task_failure
from kafka_soak.deadline import overdue_alert, under_dags_test
from kafka_soak.drain import drain_run
from kafka_soak.load import LoadFailed, await_loads, start_loads
from kafka_soak.operators.toggle import ToggleStepOperator
from kafka_soak.operators.validate import ValidateOperator
from kafka_soak.shared import rundir
from kafka_soak.steps import plan_steps

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


def _run_dir() -> Path:
    """The attempt the task works in: the one ``check_params`` opened (a task cleared on its own works in it)."""
    return rundir.for_context(get_current_context())


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

        @task(multiple_outputs=False)  # one XCom, not one per key as a dict annotation implies
        def check_params() -> dict[str, Any]:
            """Refuse a bad run before anything is provisioned; store the resolved program for replay."""
            return open_run(get_current_context(), admission, dag_id)

        @setup
        @task(multiple_outputs=False)
        def provision(plan: dict[str, Any]) -> dict[str, Any]:
            """Start the run's Kafka (or reach the external one), create its topics, set its quotas."""
            try:
                return backends.provision_run(_run_dir(), plan, dag_id)
            except (backends.AttemptReleased, broker_matrix.MemberFailed) as exc:
                raise AirflowFailException(str(exc)) from None

        @task
        def plan_program(plan: dict[str, Any], cluster: dict[str, Any]) -> list[dict[str, Any]]:
            """Fix T0 a little ahead, so the generator and the first step start together."""
            return plan_steps(_run_dir(), plan, lead_s)

        @task
        def start_generator(plan: dict[str, Any], cluster: dict[str, Any], steps: list[dict[str, Any]]) -> None:
            """Start the load in its own process so it flows through the whole program (from T0 on)."""
            start_loads(_run_dir(), plan, cluster, steps[0]["planned_at"], get_current_context()["ti"].try_number)

        @task(multiple_outputs=False)
        def await_generator(plan: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
            """Wait for the generator; if it died, restart it (it resumes without duplicating an id)."""
            try:
                return await_loads(_run_dir(), plan, cluster)
            except (LoadFailed, broker_matrix.MemberFailed) as exc:
                raise AirflowFailException(str(exc)) from None

        @task(multiple_outputs=False)
        def drain(plan: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
            """Bring back what the program left broken, then wait until the app has committed all input. A timeout
            does not stop the run: it says why (lag, stalled partitions, owners, open transactions) in the log and
            ``drain.json``, and the checker judges what the app committed."""
            return drain_run(_run_dir(), plan, cluster)

        @teardown
        @task(multiple_outputs=False)
        def stop_instances(plan: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
            """Stop every instance gracefully (and the generator); runs even when something failed."""
            return teardowns.stop_apps(_run_dir(), plan, cluster)

        @teardown
        def release(plan: dict[str, Any]) -> None:
            """Stop the Kafka this run started (or give back what it used of an external one)."""
            teardowns.release_all(_run_dir(), plan)

        plan = check_params()
        cluster = provision(plan)
        program = plan_program(plan, cluster)
        generator = start_generator(plan, cluster, program)
        toggles = ToggleStepOperator.partial(
            task_id="toggle", cluster=cluster, plan=plan, map_index_template="{{ step_label }}",
        ).expand(step=program)
        loaded = await_generator(plan, cluster)
        drained = drain(plan, cluster)
        stopped = stop_instances(plan, cluster)
        validate = ValidateOperator(
            task_id="validate", cluster=cluster, plan=plan, conn_id="spark_default", name=f"kafka-soak-validate-{dag_id}",
            out_dir="{{ soak_run_dir(dag_run) }}", expected_records="{{ params.records }}")
        released = release(plan)

        plan >> cluster >> program >> generator >> toggles >> loaded >> drained >> stopped >> validate >> released
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
        scenario = load_scenario(path)
        if not only or scenario["dag_id"] in only:
            dags[scenario["dag_id"]] = build_dag(scenario)
    return dags
