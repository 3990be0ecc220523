"""Run directories of attempts on real brokers: an attempt cleared on a shared cluster released from its evidence alone,
and a task cleared on its own starting its attempt's local brokers again on their data."""

from __future__ import annotations

import pytest
from support.task_context import DAG, RUN, context

from kafka_soak import run_plan
from kafka_soak.shared import rundir


def test_an_attempt_cleared_on_a_shared_cluster_is_released_from_its_evidence_alone(root, kafka_connection, broker):
    """A Clear during the drain on ``external``: the first attempt left no local process, only its topics on the shared
    cluster (and would leave its quotas, a docker run its container). The next attempt's check_params releases it from
    its journal (provisioned, never released); provision asked again of a released attempt is refused, saying what to
    clear instead."""
    from kafka_soak import provision, reaper

    plan = run_plan.check({"backend": "external", "kafka_conn_id": kafka_connection, "instances": 1,
                              "program": "1"}, app_id=f"{DAG}-app")
    first = rundir.for_context(context(RUN), create=True)
    rundir.write_json(first / rundir.PARAMS, {"dag_id": DAG, "run_id": RUN, "plan": plan})
    cluster = provision.provision_run(first, plan, DAG)
    topics = set(cluster["topics"].values())
    assert topics <= listed(broker.bootstrap_servers) and provision.unreleased(first)
    second = rundir.for_context(context(RUN, clear_number=1), create=True)
    assert first.name in reaper.reap_earlier(second, RUN, lambda run_id: False)
    assert not topics & listed(broker.bootstrap_servers), "its topics are given back"
    assert provision.released(first) and not provision.unreleased(first)
    assert reaper.reap_earlier(second, RUN, lambda run_id: False) == {}, "released once"
    with pytest.raises(provision.AttemptReleased, match="clear the whole DAG run to run it again as a new attempt"):
        provision.provision_run(first, plan, DAG)


def test_a_task_cleared_on_its_own_runs_again_on_its_attempts_brokers_and_data(root):
    """Clearing validate clears its setup and teardowns with it: provision starts the attempt's local brokers again on
    their data (the input the run wrote is still there), so the checker judges the attempt's evidence again."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kafka_soak import provision, teardowns
    from kafka_soak.infra import kafka_io

    plan = run_plan.check({"instances": 1, "program": "1", "partitions": 1}, app_id=f"{DAG}-app")
    attempt = rundir.for_context(context(RUN), create=True)
    cluster = provision.provision_run(attempt, plan, DAG)
    producer = Producer(kafka_io.client_config(cluster["bootstrap_servers"]))
    producer.produce(cluster["topics"]["input"], b"the run's input")
    assert producer.flush(30) == 0
    teardowns.release(attempt, plan)
    again = provision.provision_run(attempt, plan, DAG)
    try:
        assert again["topics"] == cluster["topics"]
        consumer = Consumer(kafka_io.client_config(again["bootstrap_servers"], {"group.id": "probe"}))
        try:
            assert consumer.get_watermark_offsets(TopicPartition(again["topics"]["input"], 0), timeout=30) == (0, 1)
        finally:
            consumer.close()
    finally:
        teardowns.release(attempt, plan)


def listed(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics)
