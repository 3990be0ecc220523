import re
import types
import typing

import pytest
from support import ROOT
from support.checks import cli_refusal

from kafka_soak import params, run_plan
from kafka_soak.plan import ParamsError, Plan


def test_defaults_resolve_to_a_plan_spread_over_the_program():
    plan = run_plan.check({})
    assert plan["program"] == ["1", "2", "1"] and plan["program_source"] == "given"
    assert plan["rate"] == pytest.approx(20_000 / 30)
    assert plan["phases"] == [{"records": 20_000, "at_s": 0, "rate": pytest.approx(20_000 / 30), "first_id": 1}]
    assert (plan["backend"], plan["brokers"], plan["kafka_version"]) == ("local", 1, "4.3.1")


def test_the_plan_every_task_is_given_has_a_typed_key_for_each_param_and_nothing_else():
    """``Plan`` types the plan at each task boundary: its keys are the declared params (and the program's
    source, length and needs), and each resolved value has the type it declares."""
    fields = typing.get_type_hints(Plan)
    assert set(fields) == set(params.PARAMS) | {"program_source", "program_s", "stalls", "program_needs"}
    plan = run_plan.check({"kafka_versions": ["4.1.1", "4.3.1"], "transaction_version": 1, "quotas": [
        {"client_id": "{app_id}-1-producer", "producer_byte_rate": 35000}]}, app_id="typed")
    for name, value in plan.items():
        hint = fields[name]
        origin = typing.get_origin(hint)
        assert isinstance(value, hint if origin in (None, types.UnionType) else origin), (name, value, hint)


def test_empty_program_becomes_a_stored_random_program():
    plan = run_plan.check({"program": "", "seed": 3})
    assert plan["program_source"] == "random(seed=3)"
    assert plan["program"] == run_plan.check({"program": [], "seed": 3})["program"]


def test_a_null_seed_is_drawn_for_the_run_and_a_random_program_with_faults_spans_the_load():
    shape = {"faults": ["kill", "pause"], "every": 4}
    conf = {"program": "", "seed": None, "random_program": shape, "records": 60_000, "rate": 100, "interval_s": 10}
    plan = run_plan.check(conf, scope="00c0ffee")
    assert plan["seed"] == 0xC0FFEE and plan["program_source"] == f"random(seed={0xC0FFEE})"
    assert len(plan["program"]) == 60 and plan["program_s"] == 600  # 600 s of load at 100 records/s
    assert plan["program"] != run_plan.check(conf, scope="00c0ffef")["program"]  # another run, another night
    assert run_plan.check({**conf, "seed": 0xC0FFEE}, scope="0badcafe")["program"] == plan["program"]  # a replay
    assert len(run_plan.check({**conf, "random_program": {**shape, "steps": 9}})["program"]) == 9


@pytest.mark.parametrize("conf, message", [
    ({"program": "", "random_program": {"faults": ["broker"]}},
     "random_program: faults: 'broker' takes one broker of two or more down; this run has 1 (param brokers)"),
    ({"program": "", "random_program": {"faults": ["instance-cut", "broker-cut"]}},
     "random_program: faults: 'broker-cut' cuts one broker of two or more from the others; this run has 1 (param "
     "brokers)"),
    ({"program": "1 2", "random_program": {"faults": ["kill"]}},
     "random_program: shapes the random program of an empty program; this run gives its program ('1 2')"),
])
def test_a_random_program_the_run_cannot_draw_is_refused_by_name(conf, message):
    with pytest.raises(ParamsError, match=re.escape(message)):
        run_plan.check(conf)


def test_a_kind_a_random_program_cannot_draw_is_refused_with_the_kinds_it_can():
    """A network cut is two kinds (an instance's, a broker's) so that a night can leave one out: the one name they
    had before is refused, naming them."""
    from kafka_soak.cli import UsageError, check_conf

    with pytest.raises(UsageError, match=re.escape("param random_program: 'network' is not one of ['toggle', 'kill', "
                                                   "'stall', 'pause', 'broker', 'instance-cut', 'broker-cut']")):
        check_conf("soak_nightly", {"random_program": {"faults": ["network"], "every": 5}})


def test_a_drawn_token_the_run_cannot_apply_is_refused_in_the_name_of_random_program_once():
    """Nobody wrote the token: the refusal names the param that drew it, once for its kind."""
    with pytest.raises(ParamsError) as err:
        run_plan.check({"program": "", "random_program": {"faults": ["stall"], "steps": 8}, "runtime": "docker"})
    assert str(err.value) == ("random_program: the program drawn as random(seed=0) asks for what this run cannot do: "
                              "a stall needs runtime 'local' (its arm and trace files are in the run directory, which "
                              "a container does not see; runtime is 'docker'); leave that kind out of "
                              "random_program.faults")


def test_every_problem_is_named():
    with pytest.raises(ParamsError) as err:
        run_plan.check({"program": "1 9", "colour": "red"})
    message = str(err.value)
    assert "unknown params ['colour']" in message
    assert "instance 9 is out of range" in message


def test_phases_get_consecutive_id_ranges_and_must_add_up():
    plan = run_plan.check({"records": 63_000, "program": "1 2 2", "phases": [
        {"records": 3000, "at_s": 0}, {"records": 60_000, "after_step": 1, "rate": 5000}]})
    assert [(p["first_id"], p["records"], p["rate"]) for p in plan["phases"]] == [(1, 3000, 0.0), (3001, 60_000, 5000.0)]
    with pytest.raises(ParamsError) as err:
        run_plan.check({"records": 100, "program": "1 2", "phases": [{"records": 50, "at_s": 0},
                                                                  {"records": 40, "after_step": 2}]})
    assert "phases: their records add up to 90 but param records is 100" in str(err.value)
    assert "phase 2 waits for step 2 but the program has 2 steps (0..1)" in str(err.value)


@pytest.mark.parametrize("conf, fragment", [
    ({"program": "1 x"}, "program: token 'x' at position 2 is not an operation"),
    ({"program": "1 4"}, "instance 4 is out of range: this run has 3 instances"),
    ({"program": "1 r1"}, "token 'r1' at position 2: cannot resume instance 1: it is running"),
    ({"phases": [{"records": 5, "after_step": 0, "at_s": 1}]}, "param phases:"),
    ({"standbys": 2}, "standbys: the reference worker keeps 0 or 1 standby replicas (got 2); app=streams takes any"),
    ({"standbys": 9}, "param standbys: 9 is greater than the maximum of 8"),
    ({"app": "streams", "streams_version": "2.8.1"}, "param streams_version: '2.8.1' does not match"),
    ({"app": "streams", "streams_version": "3.4.9"}, "streams_version: cannot build the Kafka Streams app against "
                                                     "Kafka Streams 3.4.9: Maven Central serves no "
                                                     "org.apache.kafka:kafka-streams:3.4.9"),
    ({"app": "streams", "streams_versions": ["4.3.1", "3.4.9"]}, "streams_version: cannot build the Kafka Streams "
                                                                 "app against Kafka Streams 3.4.9"),
    ({"streams_versions": ["3.4.0"]}, "streams_versions: a version matrix runs the Kafka Streams reference app"),
    ({"app": "streams", "bug": "drop"}, "bug: 'drop' is a switch of the reference worker (app=worker)"),
    ({"interval_s": -5}, "param interval_s: -5 is less than the minimum of 1"),
    ({"records": 0}, "param records: 0 is less than the minimum of 1"),
    ({"bug": "melt"}, "param bug: 'melt' is not one of"),
    ({"crash_probability": 1}, "param crash_probability: 1 is greater than or equal to the maximum of 1"),
    ({"quotas": [{"client_id": "soak_eos_id_assignment-app-StreamThread-1-producer", "producer_byte_rate": 35000}]},
     "quotas: client_id 'soak_eos_id_assignment-app-StreamThread-1-producer' is no client of the app under test "
     "(worker, 3 instances); its clients are soak_eos_id_assignment-app-1, soak_eos_id_assignment-app-1-producer"),
    ({"app": "worker", "state_write_bytes": 1024}, "state_write_bytes: is a setting of the Kafka Streams app"),
    ({"rocksdb_write_buffer_bytes": 65536}, "rocksdb_write_buffer_bytes: is a setting of the Kafka Streams app"),
    ({"topology": "repartition"}, "topology: 'repartition' is a topology of the Kafka Streams reference app"),
    ({"app": "streams", "topology": "workflow", "workflow_designs": ["shared-table"]},
     "param workflow_designs: 'shared-table' is not one of ['ktable-self-join', 'single-writer']"),
    ({"topology": "workflow"}, "topology: 'workflow' is a topology of the Kafka Streams reference app (set app to "
                               "'streams'"),
    ({"app": "streams", "crash_probability": 0.1}, "crash_probability: 0.1 makes the reference worker crash itself"),
    ({"runtime": "docker", "restart": "on-failure"}, "restart: 'on-failure' is the local runtime's restart policy; "
                                                     "runtime 'docker' has none yet"),
    ({"runtime": "kubernetes"}, "param runtime: 'kubernetes' is not one of ['local', 'docker']"),
    ({"backend": "docker", "program": "1 b1- b1+"}, "program: ['b1-', 'b1+'] kill and restart brokers, which only "
                                                    "backend 'local' can do (backend is 'docker')"),
    ({"program": "1 b2- b2+"}, "token 'b2-' at position 2: broker 2 is out of range: this run has 1 broker(s)"),
    ({"brokers": 3, "program": "1 b4-"}, "broker 4 is out of range: this run has 3 broker(s) (param 'brokers')"),
    ({"brokers": 2}, "param brokers: 2 is not one of [1, 3]"),
    ({"kafka_version": "3.4.1"}, "param kafka_version: '3.4.1' does not match"),
    ({"kafka_version": "4.0.99"}, "kafka_version: cannot fetch Apache Kafka 4.0.99's jars: Maven Central serves no "
                                  "org.apache.kafka:kafka_2.13:4.0.99"),
    ({"kafka_versions": ["4.3.1", "4.0.99"]}, "kafka_versions: cannot fetch Apache Kafka 4.0.99's jars: Maven "
                                               "Central serves no org.apache.kafka:kafka_2.13:4.0.99"),
    ({"kafka_versions": ["4.3.1", "3.4.1"]}, "param kafka_versions: '3.4.1' does not match"),
    ({"kafka_version": "3.9.1", "transaction_version": 0}, "transaction_version: the transaction.version feature is "
                                                           "set by the storage tool of Apache Kafka 4.0 and later; "
                                                           "kafka_version 3.9.1 formats none"),
    ({"kafka_version": "3.9.1", "group_protocol": "consumer"}, "group_protocol: 'consumer' needs brokers of Apache "
                                                               "Kafka 4.0 or later, whose group.version feature is 1: "
                                                               "kafka_version 3.9.1 has not"),
    ({"brokers": 3, "program": "1 b1^4.3.99"}, "program: token 'b1^4.3.99' at position 2: cannot fetch Apache Kafka "
                                               "4.3.99's jars: Maven Central serves no org.apache.kafka:kafka_2.13:4.3.99"),
    ({"app": "streams", "program": "1 1^4.3.99"}, "program: token '1^4.3.99' at position 2: cannot build the Kafka "
                                                  "Streams app against Kafka Streams 4.3.99: Maven Central serves no "
                                                  "org.apache.kafka:kafka-streams:4.3.99"),
    ({"kafka_versions": ["4.3.1", "4.3.1"]}, "param kafka_versions: ['4.3.1', '4.3.1'] has non-unique elements"),
    ({"kafka_versions": ["4.1.1", "4.2.0", "4.3.0", "4.3.1"]}, "param kafka_versions: ['4.1.1', '4.2.0', '4.3.0', "
                                                                "'4.3.1'] is too long"),
    ({"backend": "docker", "kafka_versions": ["4.1.1", "4.3.1"]},
     "kafka_versions: a broker version matrix starts a cluster of each release, which only backend 'local' can do "
     "(backend is 'docker'); leave kafka_versions empty"),
    ({"quotas": [{"client_id": "c", "producer_byte_rate": "fast"}]}, "param quotas:"),
    ({"quotas": [{"client_id": "", "producer_byte_rate": 35000}]}, "param quotas:"),
    ({"quotas": [{"client_id": "c", "producer_byte_rate": 0}]}, "param quotas:"),
    ({"app_image": "my/app:1"}, "app_image: is for runtime 'docker' (runtime is 'local')"),
    ({"app_command": ["java", "-jar", "app.jar", "{bootstrap}"]}, "has an unknown placeholder {bootstrap}"),
    ({"quotas": [{"client_id": "c"}]}, "param quotas:"),
    ({"backend": "external", "kafka_conn_id": "nope"}, "param kafka_conn_id: there is no Airflow connection 'nope'"),
])
def test_cli_refuses_bad_params_before_airflow_runs(conf, fragment, capsys, own_runs):
    """`make soak CONF=...` answers with one line naming the param; nothing is provisioned."""
    assert fragment in cli_refusal(conf, capsys, own_runs)


def test_deployment_params_travel_in_the_plan():
    plan = run_plan.check({"runtime": "docker", "app_image": "my/app:1", "app_env": {"JAVA_OPTS": "-Xmx1g"},
                         "app_command": ["--bootstrap", "{bootstrap_servers}"], "backend": "external",
                         "kafka_conn_id": "prod_kafka", "quotas": [{"client_id": "c", "producer_byte_rate": 35000}]})
    assert (plan["runtime"], plan["app_image"], plan["backend"], plan["kafka_conn_id"]) == ("docker", "my/app:1", "external",
                                                                                  "prod_kafka")
    assert plan["quotas"] == [{"client_id": "c", "producer_byte_rate": 35000}] and not plan["keep_topics"]
    with pytest.raises(ParamsError, match="brokers: 3 brokers are for backend 'local'"):
        run_plan.check({"backend": "external", "brokers": 3})
    with pytest.raises(ParamsError, match="transaction_version: 1 is set when backend 'local' formats its "
                                                 "brokers' storage; backend 'docker' has its own features"):
        run_plan.check({"backend": "docker", "transaction_version": 1})


def test_docker_runtime_runs_an_image_per_kafka_streams_version():
    """runtime=docker starts the Kafka Streams app from its image per version (make streams-image), unless app_image
    names the user's own; preflight names each, with the param that chose it and how to build it."""
    from kafka_soak import preflight

    plan = run_plan.check({"app": "streams", "runtime": "docker", "streams_versions": ["3.4.0", "4.3.1"]})
    assert preflight.app_images(plan) == [
        ("kafka-soak-streams:3.4.0", "streams_version", "build it with: make streams-image STREAMS_VERSION=3.4.0"),
        ("kafka-soak-streams:4.3.1", "streams_version", "build it with: make streams-image STREAMS_VERSION=4.3.1")]
    own = run_plan.check({"app": "streams", "runtime": "docker", "app_image": "team/app:7"})
    assert preflight.app_images(own) == [("team/app:7", "app_image", "")]


def test_a_quota_on_app_id_is_one_quota_per_application_id_of_the_run():
    """soak_quota_eos names its producer as {app_id}-1-StreamThread-1-producer: each version of a matrix gets its own
    quota, a run of one version one; a client the app does not have is refused."""
    quota = {"client_id": "{app_id}-1-StreamThread-1-producer", "producer_byte_rate": 35000}
    matrix = run_plan.check({"app": "streams", "streams_versions": ["3.8.1", "4.3.1"], "instances": 1, "program": "1",
                           "quotas": [quota]}, app_id="q-app")
    assert [q["client_id"] for q in matrix["quotas"]] == ["q-app-3.8.1-1-StreamThread-1-producer",
                                                       "q-app-4.3.1-1-StreamThread-1-producer"]
    single = run_plan.check({"app": "streams", "instances": 1, "program": "1", "quotas": [quota]}, app_id="q-app")
    assert single["quotas"] == [{**quota, "client_id": "q-app-1-StreamThread-1-producer"}]
    with pytest.raises(ParamsError, match="client_id 'q-app-2-StreamThread-1-producer' is no client"):
        run_plan.check({"app": "streams", "instances": 1, "program": "1",
                      "quotas": [{**quota, "client_id": "{app_id}-2-StreamThread-1-producer"}]}, app_id="q-app")



def test_controls_run_beside_each_version_with_settings_of_their_own(tmp_path):
    """soak_quota_eos's controls: the same app with a longer transaction timeout, and one without the quota, beside
    each version; each its own application id, topics, instances and verdict label; the quota's {app_id} skips the
    control that runs without it; the control's setting reaches its JVM last."""
    import validate_soak

    from kafka_soak.clients import subjects
    from kafka_soak.clients.instances import Instances
    from kafka_soak.infra.cluster import Cluster

    quota = {"client_id": "{app_id}-1-StreamThread-1-producer", "producer_byte_rate": 35000}
    variants = [{"name": "txn-60s", "streams_config": {"producer.transaction.timeout.ms": 60000}},
                {"name": "no-quota", "quotas": False}]
    plan = run_plan.check({"app": "streams", "streams_versions": ["3.8.1", "4.3.1"], "variants": variants,
                         "instances": 1, "program": "1", "quotas": [quota]}, app_id="q")
    names = ["3.8.1", "3.8.1-txn-60s", "3.8.1-no-quota", "4.3.1", "4.3.1-txn-60s", "4.3.1-no-quota"]
    assert subjects.matrix(plan) == names
    assert [q["client_id"] for q in plan["quotas"]] == [f"q-{n}-1-StreamThread-1-producer" for n in names
                                                        if not n.endswith("no-quota")]
    topics = {role: f"t.{role}" for role in subjects.topics(plan)}
    built = subjects.build(plan, topics)
    assert [(s.name, s.app_id, s.version, s.topic("output")) for s in built][:3] == [
        ("3.8.1", "q-3.8.1", "3.8.1", "t.output.3.8.1"),
        ("3.8.1-txn-60s", "q-3.8.1-txn-60s", "3.8.1", "t.output.3.8.1-txn-60s"),
        ("3.8.1-no-quota", "q-3.8.1-no-quota", "3.8.1", "t.output.3.8.1-no-quota")]
    cluster = Cluster("local", "127.0.0.1:1", topics, subjects=[s.as_dict() for s in built])
    instances = Instances(tmp_path, cluster, {**plan, "runtime": "docker"}, built)
    command = instances.command(built[1], 1, 0)
    assert command[command.index("--config") + 1] == "producer.transaction.timeout.ms=60000"
    assert "--config" not in instances.command(built[0], 1, 0)
    assert validate_soak.label(subjects.judged(cluster.as_dict())[1]) == "Kafka Streams 3.8.1 (txn-60s)"


def test_the_run_s_streams_settings_and_rebalance_protocol_reach_every_member_before_a_control_s_own():
    """streams_config and group_protocol apply to every version and control of the Kafka Streams app; a control's own
    settings come after them (the app applies --config last, so its value wins)."""
    from kafka_soak.clients import subjects

    plan = run_plan.check({"app": "streams", "streams_versions": ["4.2.2", "4.3.1"], "group_protocol": "streams",
                         "streams_config": {"producer.transaction.timeout.ms": 30000,
                                            "__state.updater.enabled__": False},
                         "variants": [{"name": "txn-60s", "streams_config": {"producer.transaction.timeout.ms": 60000}}],
                         "instances": 1, "program": "1"}, app_id="q")
    topics = {role: f"t.{role}" for role in subjects.topics(plan)}
    configs = {s.name: s.args[s.args.index("--config") + 1] for s in subjects.build(plan, topics)}
    run = "producer.transaction.timeout.ms=30000;__state.updater.enabled__=false;group.protocol=streams"
    control = "producer.transaction.timeout.ms=60000;__state.updater.enabled__=false;group.protocol=streams"
    assert configs == {"4.2.2": run, "4.2.2-txn-60s": control, "4.3.1": run, "4.3.1-txn-60s": control}


@pytest.mark.parametrize("conf, fragment", [
    ({"app": "streams", "group_protocol": "streams", "streams_versions": ["4.1.2", "4.3.1"]},
     "group_protocol: 'streams' needs Kafka Streams 4.2 or later (KIP-1071 is generally available from 4.2; 4.1 had "
     "it as early access only): not 4.1.2"),
    ({"app": "streams", "group_protocol": "streams", "kafka_version": "4.1.1"},
     "group_protocol: 'streams' needs brokers of Apache Kafka 4.2 or later, whose streams.version feature is 1: "
     "kafka_version 4.1.1 has not"),
    ({"app": "streams", "group_protocol": "streams", "streams_version": "4.3.1", "kafka_versions": ["4.1.1", "4.3.1"]},
     "group_protocol: 'streams' needs brokers of Apache Kafka 4.2 or later, whose streams.version feature is 1: "
     "kafka_versions 4.1.1 has not"),
    ({"group_protocol": "streams"}, "group_protocol: a setting of the Kafka Streams reference app"),
    ({"app": "streams", "group_protocol": "consumer"}, "group_protocol: 'consumer' (KIP-848) is the reference worker's"),
    ({"group_protocol": "consumer", "session_timeout_ms": 6000},
     "group_protocol: under 'consumer' the brokers, not the app, set session_timeout_ms"),
    ({"app": "streams", "group_protocol": "streams", "standbys": 1, "session_timeout_ms": 6000},
     "group_protocol: under 'streams' the brokers, not the app, set standbys and session_timeout_ms (the group's "
     "streams.num.standby.replicas and streams.session.timeout.ms): leave standbys and session_timeout_ms at the "
     "default, or use group_protocol 'classic'"),
    ({"streams_config": {"commit.interval.ms": 50}}, "streams_config: a setting of the Kafka Streams reference app"),
    ({"app": "streams", "streams_config": {"group.protocol": "streams"}},
     "streams_config: 'group.protocol' is the run's to set (allowed: the other settings of docs/scenarios.md's list; "
     "the rebalance protocol is param group_protocol)"),
    ({"app": "streams", "streams_config": {"bootstrap.servers": "203.0.113.5:9092"}},
     "streams_config: 'bootstrap.servers' is the run's to set"),
])
def test_streams_settings_and_a_rebalance_protocol_that_cannot_run_are_refused(conf, fragment):
    with pytest.raises(ParamsError) as err:
        run_plan.check(conf)
    assert fragment in str(err.value)


def test_the_worker_runs_beside_its_controls_each_with_its_own_bug_switch():
    from kafka_soak.clients import subjects

    plan = run_plan.check({"app": "worker", "bug": "leak", "program": "1 0",
                           "variants": [{"name": "no-leak", "bug": "none"}, {"name": "plain", "quotas": False}]})
    members = plan["app_profile"]["members"]
    assert [(m["name"], m["args"], m["quoted"], m["label"]) for m in members] == [
        ("worker", [], True, "worker"), ("worker-no-leak", ["--bug", "none"], True, "worker (no-leak)"),
        ("worker-plain", ["--bug", "none"], False, "worker (plain)")]
    assert subjects.matrix(plan) == ["worker", "worker-no-leak", "worker-plain"]
    command = plan["app_profile"]["command"]
    assert command[command.index("--bug") + 1] == "leak"  # the run's, which a control's own comes after


@pytest.mark.parametrize("conf, fragment", [
    ({"app_command": ["./app"], "variants": [{"name": "x"}]}, "variants: run beside a reference app (leave "),
    ({"app": "worker", "variants": [{"name": "x", "streams_config": {"linger.ms": 5}}]},
     "variants: x: streams_config is the Kafka Streams app's (app=streams); the worker's variants differ by their bug"),
    ({"app": "worker", "worker_versions": ["2.13.2", "2.14.0"], "variants": [{"name": "x"}]},
     "variants: a run of the worker compares either confluent-kafka releases (worker_versions) or variants"),
    ({"app": "streams", "variants": [{"name": "x", "bug": "drop"}]},
     "variants: x: bug: 'drop' is a switch of the reference worker (app=worker)"),
    ({"app": "streams", "variants": [{"name": "x"}, {"name": "x"}]}, "variants: ['x', 'x'] names a variant twice"),
    ({"app": "streams", "variants": [{"name": "x", "streams_config": {"application.id": "other"}}]},
     "variants: x: streams_config 'application.id' is the run's to set"),
    ({"app": "streams", "variants": [{"name": "x", "streams_config": {"upgrade.from": "1;c=2"}}]},
     "variants: x: streams_config 'upgrade.from': '1;c=2' holds ';', '=' or a line break"),
])
def test_controls_that_cannot_run_are_refused(conf, fragment):
    with pytest.raises(ParamsError) as err:
        run_plan.check(conf)
    assert fragment in str(err.value)


@pytest.mark.parametrize("conf, fragment", [
    ({"workflow_designs": ["ktable-self-join", "single-writer"]},
     "workflow_designs: compares designs of the workflow engine (set topology to 'workflow')"),
    ({"topology": "workflow", "streams_versions": ["3.8.1", "4.3.1"],
      "workflow_designs": ["ktable-self-join", "single-writer"]},
     "workflow_designs: a run compares either designs or Kafka Streams versions (streams_versions), not both"),
    ({"topology": "workflow", "state_write_bytes": 1024}, "state_write_bytes: is a store of the id-assignment topology"),
    ({"topology": "aggregate", "state_write_bytes": 1024},
     "state_write_bytes: is a store of the id-assignment topology; the aggregate topology has none"),
])
def test_workflow_params_that_contradict_each_other_are_refused(conf, fragment):
    with pytest.raises(ParamsError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        run_plan.check({"app": "streams", **conf})


def test_two_workflow_designs_are_two_subjects_on_one_version_with_the_workflow_topics():
    """A design matrix: each design its own application id, output, assertions and workflow topics, one build."""
    from kafka_soak.clients import subjects

    plan = run_plan.check({"app": "streams", "topology": "workflow", "workflow_designs": ["ktable-self-join",
                                                                                       "single-writer"]},
                        app_id="wf-app")
    topics = subjects.topics(plan)
    assert {"executions.single-writer", "tasks.ktable-self-join", "results.single-writer"} <= set(topics)
    names = {role: f"run.{role}" for role in topics}
    built = subjects.build(plan, names)
    assert [(s.name, s.app_id, s.version, s.args[:2], s.topic("executions")) for s in built] == [
        ("ktable-self-join", "wf-app-ktable-self-join", "4.3.1", ["--design", "ktable-self-join"],
         "run.executions.ktable-self-join"),
        ("single-writer", "wf-app-single-writer", "4.3.1", ["--design", "single-writer"],
         "run.executions.single-writer")]
    judged = subjects.judged({"subjects": [s.as_dict() for s in built]})
    assert [(j["name"], j["label"], j["contract"], j["executions"]) for j in judged] == [
        ("ktable-self-join", "design ktable-self-join", "workflow", "run.executions.ktable-self-join"),
        ("single-writer", "design single-writer", "workflow", "run.executions.single-writer")]
    assert subjects.profile(plan).versions == ["4.3.1"]
    one = run_plan.check({"app": "streams"})
    [only] = subjects.build(one, {role: role for role in subjects.topics(one)})
    assert (only.name, only.args, only.topic("executions")) == ("", [], "")
    assert [(j["name"], j["label"], j["contract"]) for j in subjects.judged({"subjects": [only.as_dict()]})] == [
        ("", "Kafka Streams 4.3.1", "id-assignment")]


@pytest.mark.parametrize("topology", ["aggregate", "repartition"])
def test_an_aggregation_s_count_and_sum_tables_are_judged_by_the_aggregate_contract(topology):
    """Each Kafka Streams version's counts and sums, against the input's records per key and their amounts: input in
    JSON with the suite's headers (the contract's), no self-check topic; each table a verdict of its own."""
    from kafka_soak.clients import subjects

    plan = run_plan.check({"app": "streams", "topology": topology, "streams_versions": ["4.2.2", "4.3.1"]},
                        app_id="agg")
    profile = subjects.profile(plan)
    assert [i.value["encoding"] for i in profile.inputs] == ["json"]
    assert set(subjects.topics(plan)) == {"input", "counts.4.2.2", "sums.4.2.2", "counts.4.3.1", "sums.4.3.1"}
    built = subjects.build(plan, {role: f"run.{role}" for role in subjects.topics(plan)})
    judged = subjects.judged({"subjects": [s.as_dict() for s in built]})
    assert [(j["name"], j["label"], j["app_id"], j["output"], j["contract"], j["function"], j["field"])
            for j in judged] == [
        ("counts@4.2.2", "Kafka Streams 4.2.2: counts", "agg-4.2.2", "run.counts.4.2.2", "aggregate", "count", ""),
        ("sums@4.2.2", "Kafka Streams 4.2.2: sums", "agg-4.2.2", "run.sums.4.2.2", "aggregate", "sum", "amount"),
        ("counts@4.3.1", "Kafka Streams 4.3.1: counts", "agg-4.3.1", "run.counts.4.3.1", "aggregate", "count", ""),
        ("sums@4.3.1", "Kafka Streams 4.3.1: sums", "agg-4.3.1", "run.sums.4.3.1", "aggregate", "sum", "amount")]
    alone = run_plan.check({"app": "streams", "topology": topology}, app_id="agg")
    [one] = subjects.build(alone, {role: role for role in subjects.topics(alone)})
    assert [(j["name"], j["label"]) for j in subjects.judged({"subjects": [one.as_dict()]})] == [
        ("counts", "Kafka Streams 4.3.1: counts"), ("sums", "Kafka Streams 4.3.1: sums")]


def test_the_allowed_kafka_client_settings_are_the_ones_the_docs_list():
    from kafka_soak.clients import allowed_settings

    assert allowed_settings.documented() in (ROOT / "docs" / "scenarios.md").read_text()


def test_on_a_shared_cluster_every_group_and_application_id_is_the_run_s_own():
    """On backend external the app runs as ``<group>-<run scope>`` (its consumer group, application id and so its
    transactional ids and Kafka Streams' internal topics), a team's app too; where the run owns the cluster, as named."""
    scope = run_plan.run_scope("soak_x", "manual__2026-11-27-ab12cd34")
    assert len(scope) == run_plan.SCOPE_CHARS and scope != run_plan.run_scope("soak_x", "manual__2026-11-27-ab12cd34.attempt-2")
    quota = [{"client_id": "{app_id}-1-producer", "producer_byte_rate": 1000}]
    shared = run_plan.check({"backend": "external", "quotas": quota}, app_id="soak_x-app", scope=scope)
    assert shared["app_profile"]["group_id"] == f"soak_x-app-{scope}"
    assert shared["quotas"][0]["client_id"] == f"soak_x-app-{scope}-1-producer", "{app_id} names the run's own clients"
    assert run_plan.check({}, app_id="soak_x-app", scope=scope)["app_profile"]["group_id"] == "soak_x-app"
    profile = {"name": "a", "group_id": "orders", "command": ["app", "{properties_file}", "{topic:in}", "{topic:out}"],
               "inputs": [{"topic": "in", "value": {"encoding": "json", "template": {"id": "{id}"}}}],
               "outputs": [{"topic": "out", "contract": "one-to-one", "of": "in"}]}
    plan = run_plan.check({"backend": "external", "app_profile": profile}, app_id="soak_x-app", scope=scope)
    assert plan["app_profile"]["group_id"] == f"orders-{scope}"
    fixed = {**profile, "command": ["app", "{topic:in}", "{topic:out}"]}
    with pytest.raises(ParamsError, match=r"app_profile.command: takes neither \{properties_file\} nor "
                                                    r"\{app_id\}; on backend external the app runs as a group of the "
                                                    r"run's own"):
        run_plan.check({"backend": "external", "app_profile": fixed}, scope=scope)
    assert run_plan.check({"app_profile": fixed})["app_profile"]["group_id"] == "orders", "its own cluster: as named"
