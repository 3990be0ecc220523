"""Param broker_config: settings of the run's own brokers from an allow-list, refused by name otherwise, carried into
each node's server.properties (local) or the image's KAFKA_* variables (docker)."""

from __future__ import annotations

import pytest
from support import ROOT

from kafka_soak import run_plan
from kafka_soak.backends import broker_settings, registry
from kafka_soak.backends.docker_kafka import DockerKafkaBackend
from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.plan import ParamsError

CLEANUP = "transaction.abort.timed.out.transaction.cleanup.interval.ms"


@pytest.mark.parametrize("config, refusal", [
    ({"listeners": "PLAINTEXT://0.0.0.0:9092"}, "broker_config: 'listeners' is the run's to set"),
    ({"log.dirs": "/etc"}, "broker_config: 'log.dirs' is the run's to set"),
    ({"authorizer.class.name": "x.Evil"}, "broker_config: 'authorizer.class.name' is not a broker setting a run may "
                                          "change"),
    ({"metric.reporters": "x.Evil"}, "'metric.reporters' is not a broker setting a run may change"),
    ({"config.providers": "env"}, "'config.providers' is not a broker setting a run may change"),
    ({"num.io.threads": 100000}, "'num.io.threads' is not a broker setting a run may change"),
    ({"log.retention.ms": 1}, "'log.retention.ms' is not a broker setting a run may change"),
    ({CLEANUP: "${env:HOME}"}, f"broker_config: '{CLEANUP}': '${{env:HOME}}' is not a value"),
    ({"compression.type": "zstd\nlisteners=PLAINTEXT://0.0.0.0:1"}, "'compression.type': 'zstd\\nlisteners="),
])
def test_a_setting_that_could_open_a_listener_reach_a_path_or_load_code_is_refused_by_name(config, refusal):
    with pytest.raises(ParamsError, match="broker_config") as err:
        run_plan.check({"broker_config": config})
    assert refusal in str(err.value)


def test_a_shared_cluster_s_brokers_take_no_setting_of_the_run():
    with pytest.raises(ParamsError, match=r"broker_config: sets the run's own brokers; a shared cluster's brokers are "
                                          r"their owner's"):
        run_plan.check({"backend": "external", "kafka_conn_id": "x", "broker_config": {CLEANUP: 1000}})


def test_the_settings_reach_every_node_after_the_layout_s_and_the_container_s_environment(tmp_path):
    plan = run_plan.check({"brokers": 3, "broker_config": {CLEANUP: 1000, "compression.type": "zstd",
                                                          "unclean.leader.election.enable": False}})
    backend = registry.create(plan, tmp_path)
    assert isinstance(backend, LocalKafkaBackend)
    layout = backend.layout()
    props = backend.properties(layout, layout.nodes[2], tmp_path / "data")
    assert (props[CLEANUP], props["compression.type"], props["unclean.leader.election.enable"]) == (
        "1000", "zstd", "false")
    assert props["node.id"] == "3" and props["log.dirs"] == str(tmp_path / "data"), "the layout's own stay"
    docker = registry.create({**plan, "backend": "docker", "brokers": 1}, tmp_path)
    assert isinstance(docker, DockerKafkaBackend)
    env = docker.container_spec(41234)["environment"]
    assert env["KAFKA_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS"] == "1000"
    assert env["KAFKA_COMPRESSION_TYPE"] == "zstd" and env["KAFKA_NODE_ID"] == "1"
    assert broker_settings.as_environment({"group.streams.num.standby.replicas": 1}) == {
        "KAFKA_GROUP_STREAMS_NUM_STANDBY_REPLICAS": "1"}


def test_the_brokers_transaction_bound_a_run_sets_is_the_one_admission_holds_streams_to():
    config = {"producer.transaction.timeout.ms": 1_200_000}
    with pytest.raises(ParamsError, match=r"transaction.timeout.ms 1200000 is above the run's brokers' "
                                          r"transaction.max.timeout.ms \(900000\)"):
        run_plan.check({"app": "streams", "streams_config": config})
    plan = run_plan.check({"app": "streams", "streams_config": config,
                           "broker_config": {"transaction.max.timeout.ms": 1_800_000}})
    assert plan["broker_config"] == {"transaction.max.timeout.ms": 1_800_000}


def test_the_allowed_broker_settings_are_the_ones_the_docs_list():
    assert broker_settings.documented() in (ROOT / "docs" / "scenarios.md").read_text()
    assert not broker_settings.ALLOWED & broker_settings.RUNS_OWN
