"""An Airflow task's context as the run's code reads it (``rundir.for_context``), for the tests that make a DAG run's
attempts in their own process."""

from types import SimpleNamespace

DAG = "soak_eos_id_assignment"
RUN = "manual__2026-11-23T12:00:00+00:00"


def context(run_id: str = RUN, clear_number: int = 0) -> dict:
    return {"dag": SimpleNamespace(dag_id=DAG), "run_id": run_id,
            "dag_run": SimpleNamespace(run_id=run_id, clear_number=clear_number)}
