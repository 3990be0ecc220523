"""Kafka backends: which one a run gets, the docker backend's broker container, the external backend's Airflow
connection, and the rule that a connection's secrets reach no command line, XCom, log or run file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.checks import SECRET

from kafka_soak import run_plan
from kafka_soak.backends import registry
from kafka_soak.backends.docker_kafka import DockerKafkaBackend, broker_environment
from kafka_soak.backends.external import ExternalBackend
from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.clients import subjects
from kafka_soak.infra.cluster import Cluster
from kafka_soak.infra.connection import connection_config

# The reference worker's subject as provision records it (subjects.Subject), with its one judged output.
THE_APP = {"name": "", "app_id": "app", "version": "", "topics": {"output": "soak.out", "assertions": "soak.a"},
           "outputs": [{"name": "", "label": "the app", "contract": "id-assignment", "output": "soak.out",
                        "assertions": "soak.a"}]}


def test_docker_backend_broker_container(tmp_path):
    run_dir = tmp_path / "soak_dag" / "run_1"
    env = broker_environment(41234)
    assert env["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://127.0.0.1:41234,INTERNAL://localhost:19092"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller" and env["KAFKA_LOG_RETENTION_MS"] == "-1"
    spec = DockerKafkaBackend(run_dir, "apache/kafka:4.1.0").container_spec(41234)
    assert spec["image"] == "apache/kafka:4.1.0" and spec["name"] == "soak-soak_dag.run_1-kafka"
    assert spec["labels"]["io.kafka-soak.dag"] == "soak_dag" and spec["labels"]["io.kafka-soak.run"] == "run_1"


def test_each_backend_is_one_class_the_param_names_and_what_it_can_do_is_read_from_it():
    """``params`` (a leaf) spells param backend's choices; the registry has a class for each, with its capabilities,
    which is all the rest of the suite asks of a backend."""
    from kafka_soak import params

    assert tuple(registry.BACKENDS) == params.BACKENDS
    assert {name: (b.shared, b.starts_brokers, b.broker_faults, b.network_faults)
            for name, b in registry.BACKENDS.items()} == {
        "local": (False, True, True, True), "docker": (False, True, False, False), "external": (True, False, False, False)}
    assert registry.able("broker_faults") == "backend 'local'" and registry.able("starts_brokers") == \
        "backends 'local' or 'docker'"
    assert registry.shared("external") and not registry.shared("local") and not registry.shared("elsewhere")


def test_create_picks_the_backend_the_params_ask_for(tmp_path):
    plan = run_plan.check({"backend": "external", "kafka_conn_id": "x", "keep_topics": True,
                              "quotas": [{"client_id": "c", "producer_byte_rate": 35000}]})
    backend = registry.create(plan, tmp_path)
    assert isinstance(backend, ExternalBackend) and backend.conn_id == "x" and backend.keep_topics
    assert backend.quotas[0].producer_byte_rate == 35000
    assert backend.groups(provisioned(plan)) == ["app-xxxxxxxxxx"], "the run's own group on a shared cluster (a " \
                                                                     "plan checked without a run's scope): the run's to delete"
    team = {"name": "t", "group_id": "team-group", "command": ["app", "{properties_file}", "{topic:in}", "{topic:out}"],
            "inputs": [{"topic": "in", "value": {"encoding": "json", "template": {"id": "{id}"}}}],
            "outputs": [{"topic": "out", "contract": "one-to-one", "of": "in"}]}
    shared = run_plan.check({"app_profile": team, "backend": "external", "kafka_conn_id": "x"}, scope="0123456789")
    assert registry.create(shared, tmp_path).groups(provisioned(shared)) == ["team-group-0123456789"], \
        "a team's app runs as the run's own group on a shared cluster: the run's to delete, never the team's"
    assert isinstance(registry.create({**plan, "backend": "docker"}, tmp_path), DockerKafkaBackend)
    local = registry.create(run_plan.check({"brokers": 3, "kafka_version": "4.1.1"}), tmp_path)
    assert isinstance(local, LocalKafkaBackend) and (local.brokers, local.version, local.features) == (3, "4.1.1", {})
    assert local.short_lived, "a 30 s program: its brokers compile with C1 alone"
    long_soak = run_plan.check({"program": "1" + " 0" * 30, "interval_s": 10})  # 310 s
    assert not registry.create(long_soak, tmp_path).short_lived, "past SHORT_RUN_S: the JVM's default JIT"


def test_the_finalized_features_are_read_as_kafka_features_describe_prints_them():
    from kafka_soak.backends.local_kafka import finalized_features

    described = ("Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.3-IV0\t"
                 "FinalizedVersionLevel: 4.3-IV0\tEpoch: 15\n"
                 "Feature: transaction.version              SupportedMinVersion: 0                "
                 "SupportedMaxVersion: 2                FinalizedVersionLevel: 1                Epoch: 15\n"
                 "Feature: streams.version  SupportedMinVersion: 0  SupportedMaxVersion: 1  FinalizedVersionLevel: 1\n")
    assert finalized_features(described) == {"metadata.version": "4.3-IV0", "transaction.version": 1, "streams.version": 1}


JAAS_PASSWORD = "jaas-Pa55word-0451"
PEM_BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "VJTUt9Us8cKjMzEfYyjiWA4R4"]


def test_jaas_and_pem_secrets_are_masked_whole_and_in_parts(monkeypatch):
    """Airflow's masker drops a value registered under a name that is none of its sensitive words, as
    ``sasl.jaas.config`` and ``ssl.key.pem`` are; a client quotes a JAAS password alone, and a PEM key is logged
    line by line. Each form is masked in the task log (Airflow's real masker), and in what the UI serves."""
    from airflow.sdk._shared.secrets_masker import redact

    from kafka_soak.infra.connection import secret_values

    jaas = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="soak" password="{JAAS_PASSWORD}";'
    pem = "\n".join(["-----BEGIN PRIVATE KEY-----", *PEM_BODY, "-----END PRIVATE KEY-----"])
    extra = {"bootstrap.servers": "127.0.0.1:9", "sasl.jaas.config": jaas, "ssl.key.pem": pem}
    monkeypatch.setenv("AIRFLOW_CONN_SOAK_JAAS", json.dumps({"conn_type": "kafka", "extra": extra}))
    connection_config("soak_jaas")
    lines = [jaas, f"authentication failed for password {JAAS_PASSWORD}", pem, *PEM_BODY]
    assert [str(redact(line)) for line in lines] == [
        "***", "authentication failed for password ***", "***", "***", "***"]
    assert str(redact('username="soak"')) == 'username="soak"', "a JAAS option that is no secret stays readable"
    assert set(secret_values(extra)) == {jaas, JAAS_PASSWORD, pem, *PEM_BODY, json.dumps(jaas)[1:-1],
                                         json.dumps(pem)[1:-1]}, "and as a JSON string holds them"


def test_a_file_of_any_size_is_masked_in_bounded_memory_a_secret_straddling_two_chunks_included():
    import io

    from kafka_soak.infra.connection import masked

    text = b"a" * 5 + b"SECRET" + b"b" * 7 + b"SECRET"
    for chunk in (1, 3, 7, 64):
        assert b"".join(masked(io.BytesIO(text), ["SECRET"], chunk=chunk)) == b"aaaaa***bbbbbbb***", chunk
    assert b"".join(masked(io.BytesIO(b"PEM-LINE in KEY=PEM-LINE-2"), ["PEM-LINE-2", "PEM-LINE"], chunk=4)) == \
        b"*** in KEY=***"


def test_cluster_ids_are_what_kafka_storage_accepts():
    """Base64 of 16 random bytes, never starting with '-' (StorageTool would read it as an option)."""
    import base64

    from kafka_soak.backends.local_kafka import new_cluster_id

    ids = [new_cluster_id() for _ in range(2000)]
    assert len(set(ids)) == 2000 and not [i for i in ids if i.startswith("-")]
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)


# spark-submit as the one stand-in: no YARN or Spark standalone master can run here. It records what a process on
# the worker could read of it (its command line, the properties file it was given) and exits as a submit does.
RECORDING_SPARK_SUBMIT = """#!/usr/bin/env bash
props=""
while [ $# -gt 0 ]; do
  echo "arg: $1" >> "$SUBMITTED"; [ "$1" = --properties-file ] && props=$2; [ "$1" = --py-files ] && py_files=$2; shift
done
echo "env: ${SOAK_KAFKA_CONFIG:+set}" >> "$SUBMITTED"
for f in $(echo "$py_files" | tr , ' '); do
  case "$f" in *.zip) python3 -m zipfile -l "$f" | sed '1d; s/^/zipped: /' >> "$SUBMITTED";; esac
done
[ -n "$props" ] && { echo "mode: $(stat -c %a "$props")" >> "$SUBMITTED"; sed 's/^/prop: /' "$props" >> "$SUBMITTED"; }
exit 0
"""


@pytest.mark.parametrize("master, driver_env", [("yarn", "spark.yarn.appMasterEnv.SOAK_KAFKA_CONFIG"),
                                                ("spark://127.0.0.1:7077", None)])
def test_a_spark_cluster_master_gets_the_kafka_settings_on_no_command_line(master, driver_env, monkeypatch, tmp_path):
    """The validate task on a master other than local (the real operator and the provider's hook): a driver that YARN
    or Kubernetes may run in the cluster gets the connection's settings from a properties file only the task's user
    can read, which also keeps the installation's spark-defaults.conf and is removed after the submit; a driver that
    runs here (a standalone master) inherits them from the submitting process's environment; spark-submit's command
    line has none of them, and carries Spark's Kafka source and the job's modules."""
    from kafka_soak.checker.validate import JOB_MODULES, ValidateOperator

    extra = {"bootstrap.servers": "127.0.0.1:9", "sasl.username": "soak", "sasl.password": SECRET}
    monkeypatch.setenv("AIRFLOW_CONN_SOAK_SECURED_SPARK", json.dumps({"conn_type": "kafka", "extra": extra}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps({"conn_type": "spark", "host": master,
                                                                 "extra": {"deploy-mode": "client"}}))
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "spark-submit").write_text(RECORDING_SPARK_SUBMIT)
    (tmp_path / "bin" / "spark-submit").chmod(0o755)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "spark-defaults.conf").write_text("spark.eventLog.enabled true\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    monkeypatch.setenv("SUBMITTED", str(tmp_path / "submitted.txt"))
    cluster = {"backend": "external", "conn_id": "soak_secured_spark", "bootstrap_servers": "127.0.0.1:9",
               "topics": {"input": "soak.in"}, "subjects": [THE_APP]}
    operator = ValidateOperator(task_id="validate", conn_id="spark_cluster", cluster=cluster, out_dir=str(tmp_path),
                                expected_records=6000)
    operator.execute({})
    submitted = (tmp_path / "submitted.txt").read_text().splitlines()
    args = [line.removeprefix("arg: ") for line in submitted if line.startswith("arg: ")]
    props = [line.removeprefix("prop: ") for line in submitted if line.startswith("prop: ")]
    assert args[args.index("--master") + 1] == master and SECRET not in " ".join(args)
    assert {Path(jar).name.rsplit("-", 1)[0] for jar in args[args.index("--jars") + 1].split(",")} == {
        "spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13", "kafka-clients", "commons-pool2"}
    *job_modules, shared = args[args.index("--py-files") + 1].split(",")
    assert job_modules == list(map(str, JOB_MODULES)) and not os.path.exists(shared), "made for the submit"
    zipped = {line.split()[1] for line in submitted if line.startswith("zipped: ")}
    assert zipped == {"kafka_soak/__init__.py", *(f"kafka_soak/shared/{m}.py" for m in
                                                  ("__init__", "contracts", "java_client", "offsets", "resources",
                                                   "rundir", "stalls", "verdicts"))}
    assert args[args.index("--input-topic") + 1] == "soak.in" and args[args.index("--expected-records") + 1] == "6000"
    assert "env: set" in submitted
    if driver_env is None:
        assert "--properties-file" not in args and not props, "a driver that runs here needs no properties file"
        return
    assert "mode: 600" in submitted
    assert props[0] == "spark.eventLog.enabled true", "the installation's defaults are kept"
    given = dict(p.split("=", 1) for p in props[1:])
    assert set(given) == {driver_env, "spark.redaction.regex"}, "the executors get the settings inside the job"
    assert json.loads(given[driver_env])["sasl.password"] == SECRET
    assert "SOAK_KAFKA_CONFIG" in given["spark.redaction.regex"]
    file = args[args.index("--properties-file") + 1]
    assert not os.path.exists(file), "the properties file is removed after the submit"


@pytest.mark.parametrize("records, given, archived, expected", [
    (6000, None, False, "-XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit={staging} -Xlog:cds=off"),
    (6000, None, True, "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile={archive}"),
    (10_000_000, None, True, "-XX:SharedArchiveFile={archive}"),
    (6000, "-Xss4m", True, "-Xss4m")])
def test_the_checker_s_driver_compiles_a_small_run_with_c1_alone_and_shares_its_classes(
        records, given, archived, expected, monkeypatch, tmp_path):
    """The validate task's driver JVM of a run that ends within a minute or two gets C1 alone (its C2 compiles cost
    more CPU than they save); a big run keeps tiered compilation. On a local master every run maps the driver's
    class-data archive, which the first run dumps; options given to the operator win."""
    from kafka_soak.checker import spark_kafka
    from kafka_soak.checker.validate import CONF, ValidateOperator, driver_archive, shuffle_partitions

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "spark-submit").write_text(RECORDING_SPARK_SUBMIT)
    (tmp_path / "bin" / "spark-submit").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("SUBMITTED", str(tmp_path / "submitted.txt"))
    monkeypatch.setattr("kafka_soak.checker.class_data.archives_dir", lambda: tmp_path / "class-data")
    archive = driver_archive("local[2]", spark_kafka.resolve())
    if archived:
        archive.path.parent.mkdir(parents=True)
        archive.path.write_bytes(b"an archive")
    conf = {**CONF, **({"spark.driver.extraJavaOptions": given} if given else {})}
    cluster = {"backend": "local", "bootstrap_servers": "127.0.0.1:9", "topics": {"input": "soak.in"},
               "subjects": [THE_APP]}
    ValidateOperator(task_id="validate", cluster=cluster, out_dir=str(tmp_path), expected_records=str(records),
                     conf=conf).execute({})
    args = [line.removeprefix("arg: ") for line in (tmp_path / "submitted.txt").read_text().splitlines()]
    options = [a.split("=", 1)[1] for a in args if a.startswith("spark.driver.extraJavaOptions=")]
    no_providers = "-Dorg.apache.kafka.automatic.config.providers=none"
    assert options == [f"{expected.format(staging=archive.staging, archive=archive.path)} {no_providers}"]
    assert f"spark.executor.extraJavaOptions={no_providers}" in args, "config providers off in every Spark JVM"
    assert f"spark.sql.shuffle.partitions={shuffle_partitions(int(records))}" in args
    assert ("spark.sql.adaptive.enabled=false" in args) == (int(records) <= 1_000_000)  # little to merge
    assert driver_archive("yarn", spark_kafka.resolve()) is None, "a cluster's driver runs elsewhere: no archive"


def test_one_checker_dumps_the_class_data_archive_and_those_starting_meanwhile_run_without_it(monkeypatch, tmp_path):
    """A machine's first checkers start together (the known-bug runs): one dumps the archive, the others neither dump
    nor map it; a claim whose process died is taken over; keeping the archive gives the claim back."""
    import subprocess

    from kafka_soak.checker.class_data import SharedArchive

    monkeypatch.setattr("kafka_soak.checker.class_data.archives_dir", lambda: tmp_path)
    archive = SharedArchive.of("spark-driver", [tmp_path / "jars"])
    assert archive.java_option() == f"-XX:ArchiveClassesAtExit={archive.staging} -Xlog:cds=off"
    assert archive.claim.read_text() == str(os.getpid())
    archive.claim.write_text(str(os.getppid()))  # another checker's, still running
    assert archive.java_option() == ""
    dead = subprocess.Popen(["true"])
    dead.wait()
    archive.claim.write_text(str(dead.pid))  # a checker killed before it kept what it dumped
    assert archive.java_option().startswith("-XX:ArchiveClassesAtExit=")
    archive.staging.write_bytes(b"an archive")
    archive.keep()
    assert archive.path.read_bytes() == b"an archive" and not archive.claim.exists()
    assert archive.java_option() == f"-XX:SharedArchiveFile={archive.path}"


def test_the_checker_s_shuffle_partitions_grow_with_the_run_past_a_floor():
    """Sized so a task's share of the sort fits a default driver (RECORDS_PER_SHUFFLE_PARTITION each), never fewer than
    the floor that keeps both cores busy on a small run."""
    from kafka_soak.checker.validate import shuffle_partitions

    assert [shuffle_partitions(n) for n in (0, 6_000, 1_000_000, 2_000_000, 2_000_001, 10_000_000)] == \
        [2, 2, 4, 8, 9, 40]


def provisioned(plan: dict) -> Cluster:
    """The cluster record provision writes for ``plan`` on a shared cluster, with the apps it runs."""
    names = {role: f"soak.d.r.{role}" for role in subjects.topics(plan)}
    return Cluster("external", "localhost:9092", names, subjects=[s.as_dict() for s in subjects.build(plan, names)])
