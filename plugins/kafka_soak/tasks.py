"""The soak DAG's tasks, each a call into the module whose job it is; ``factory.py`` wires them into a DAG per scenario.

Every task finds the attempt it works in through ``rundir.for_context``: the one ``check_params`` opened, which a
task cleared on its own works in too. A failure that says all there is to say fails the task without a stack trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator, get_current_context, setup, task
from airflow.sdk.exceptions import AirflowFailException

from kafka_soak import teardowns
from kafka_soak.admission import Admission, open_run
from kafka_soak.backends import broker_matrix
from kafka_soak.drain import drain_run
from kafka_soak.faults.schedule import plan_steps
from kafka_soak.load.process import LoadFailed, await_loads, start_loads
from kafka_soak.plan import Plan
from kafka_soak.provision import AttemptReleased, provision_run
from kafka_soak.shared import rundir


def _run_dir() -> Path:
    return rundir.for_context(get_current_context())


class CheckParamsOperator(BaseOperator):
    """Task ``check_params``: refuse a bad run before anything is provisioned; store the resolved plan for replay.

    :param admission: who may set what for the scenario's runs (built when the DAG file is parsed, so each run is
        admitted under the deployment's settings of the process that runs it)
    """

    template_fields: Sequence[str] = ()
    ui_color = "#c9e4ca"

    def __init__(self, *, admission: Admission, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.admission = admission

    def execute(self, context: Any) -> Plan:
        return open_run(context, self.admission, self.dag_id)


@setup
@task(multiple_outputs=False)  # one XCom, not one per key as a dict annotation implies
def provision(plan: Plan) -> dict[str, Any]:
    """Start the run's Kafka (or reach the external one), create its topics, set its quotas."""
    try:
        return provision_run(_run_dir(), plan, get_current_context()["dag"].dag_id)
    except (AttemptReleased, broker_matrix.MemberFailed) as exc:
        raise AirflowFailException(str(exc)) from None


@task
def schedule_program(plan: Plan, cluster: dict[str, Any], lead_s: float) -> list[dict[str, Any]]:
    """Fix T0 ``lead_s`` ahead, so the generator and the first step start together, and each step's planned time."""
    return plan_steps(_run_dir(), plan, lead_s)


@task
def start_generator(plan: Plan, cluster: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    """Start the load in its own process so it flows through the whole program (from T0 on)."""
    start_loads(_run_dir(), plan, cluster, steps[0]["planned_at"], get_current_context()["ti"].try_number)


@task(multiple_outputs=False)
def await_generator(plan: Plan, cluster: dict[str, Any]) -> dict[str, Any]:
    """Wait for the generator; if it died, restart it (it resumes without duplicating an id)."""
    try:
        return await_loads(_run_dir(), plan, cluster)
    except (LoadFailed, broker_matrix.MemberFailed) as exc:
        raise AirflowFailException(str(exc)) from None


@task(multiple_outputs=False)
def drain(plan: Plan, cluster: dict[str, Any]) -> dict[str, Any]:
    """Bring back what the program left broken, then wait until the app has committed all input. A timeout does not
    stop the run: it says why (lag, stalled partitions, owners, open transactions) in the log and ``drain.json``, and
    the checker judges what the app committed."""
    return drain_run(_run_dir(), plan, cluster)


# The two teardowns are marked so where they are wired (``.as_teardown(setups=...)``): Airflow's ``@teardown`` sets the
# trigger rule on the decorator itself at its first call, so a module-level one builds a single DAG per process.
@task(multiple_outputs=False)
def stop_instances(plan: Plan, cluster: dict[str, Any]) -> dict[str, Any]:
    """Stop every instance gracefully (and the generator); runs even when something failed."""
    return teardowns.stop_apps(_run_dir(), plan, cluster)


@task
def release(plan: Plan) -> None:
    """Stop the Kafka this run started (or give back what it used of an external one)."""
    teardowns.release_all(_run_dir(), plan)
