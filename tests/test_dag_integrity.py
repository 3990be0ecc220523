"""Every DAG imports, and each scenario DAG has the shape the suite relies on."""

from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag

DAGS = Path(__file__).resolve().parents[1] / "dags"


@pytest.fixture(scope="module")
def dagbag():
    return DagBag(str(DAGS))


SCENARIOS = {"soak_eos_id_assignment", "soak_stale_state_standby", "soak_id_assignment_rebalance"}


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert SCENARIOS <= set(dagbag.dags)


def test_every_scenario_default_is_a_valid_run(dagbag):
    """What the nightly schedule runs passes the trigger form's schema and the cross-param checks."""
    from kafka_soak import params
    from kafka_soak.backends.embedded import EmbeddedBackend

    for dag_id in SCENARIOS:
        values = dagbag.dags[dag_id].params.validate()
        plan = params.check(values, EmbeddedBackend.partition_capacity_bytes, EmbeddedBackend.limitations)
        assert plan.program_source == "given" and plan.unreliable == {}, dag_id


def test_scenario_defaults_follow_the_originals(dagbag):
    stale = dagbag.dags["soak_stale_state_standby"].params
    assert (stale["partitions"], stale["keys"], stale["interval_s"], stale["standbys"]) == (30, 1000, 15, 1)
    assert stale["program"].split()[:3] == ["1", "2", "3"]
    ids = dagbag.dags["soak_id_assignment_rebalance"].params
    assert (ids["partitions"], ids["records"], ids["keys"]) == (2, 63_000, 63_000)
    assert [(p["records"], p.get("at_s"), p.get("after_step")) for p in ids["phases"]] == \
        [(3000, 0, None), (60_000, None, 1)]


def test_scenario_dags_are_nightly_single_run_and_tagged(dagbag):
    for dag in dagbag.dags.values():
        assert "kafka-soak" in dag.tags
        assert dag.catchup is False and dag.max_active_runs == 1
        assert dag.on_failure_callback, "broken runs must alert"
        assert {"program", "interval_s", "records", "keys", "partitions", "instances", "rate", "payload_bytes",
                "bug", "seed", "standbys", "cache_entries", "phases", "brokers"} <= set(dag.params)


@pytest.mark.parametrize("dag_id", sorted(SCENARIOS))
def test_setup_and_teardown_wrap_the_run(dagbag, dag_id):
    dag = dagbag.dags[dag_id]
    assert dag.get_task("provision").is_setup
    assert dag.get_task("release").is_teardown and dag.get_task("stop_instances").is_teardown
    assert dag.get_task("toggle").is_mapped
    assert "provision" in dag.get_task("check_params").downstream_task_ids
    assert {"drain", "stop_instances"} <= dag.get_task("validate").upstream_task_ids
