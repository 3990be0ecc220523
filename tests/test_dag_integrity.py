"""Every DAG imports, and each scenario DAG has the shape the suite relies on."""

from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag

DAGS = Path(__file__).resolve().parents[1] / "dags"


@pytest.fixture(scope="module")
def dagbag():
    return DagBag(str(DAGS))


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert "soak_eos_id_assignment" in dagbag.dags


def test_scenario_dags_are_nightly_single_run_and_tagged(dagbag):
    for dag in dagbag.dags.values():
        assert "kafka-soak" in dag.tags
        assert dag.catchup is False and dag.max_active_runs == 1
        assert dag.on_failure_callback, "broken runs must alert"
        assert {"program", "interval_s", "records", "keys", "partitions", "instances", "rate", "payload_bytes",
                "bug", "seed"} <= set(dag.params)


def test_setup_and_teardown_wrap_the_run(dagbag):
    dag = dagbag.dags["soak_eos_id_assignment"]
    assert dag.get_task("provision").is_setup
    assert dag.get_task("release").is_teardown and dag.get_task("stop_instances").is_teardown
    assert dag.get_task("toggle").is_mapped
    assert "provision" in dag.get_task("check_params").downstream_task_ids
    assert {"drain", "stop_instances"} <= dag.get_task("validate").upstream_task_ids
