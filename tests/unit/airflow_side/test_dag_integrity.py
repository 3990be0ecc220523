"""Every DAG imports, and each scenario DAG has the shape the suite relies on."""

import re

import pytest
from airflow.dag_processing.dagbag import DagBag
from support import ROOT

from kafka_soak import run_plan

DAGS = ROOT / "dags"


@pytest.fixture(scope="module")
def dagbag():
    return DagBag(str(DAGS))


SCENARIOS = {"soak_eos_id_assignment", "soak_stale_state_standby", "soak_id_assignment_rebalance",
             "soak_newest_protocols", "soak_rolling_upgrade", "bug_kafka_20685", "bug_kafka_18943", "bug_kafka_17635"}


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert SCENARIOS <= set(dagbag.dags)


def test_a_run_started_from_this_machine_builds_only_its_own_scenarios(monkeypatch):
    """`make soak` and the end-to-end runs name their scenario (``SOAK_ONLY_SCENARIOS``): `airflow dags test` then
    parses and stores that DAG alone, not every scenario of the folder."""
    from kafka_soak.factory import ONLY_ENV, build_all

    monkeypatch.setenv(ONLY_ENV, "bug_kafka_17635,soak_quota_eos")
    assert set(build_all(DAGS / "scenarios")) == {"bug_kafka_17635", "soak_quota_eos"}


def test_every_scenario_default_is_a_valid_run(dagbag):
    """What the nightly schedule runs passes the trigger form's schema and the cross-param checks."""

    for dag_id in SCENARIOS:
        values = dagbag.dags[dag_id].params.validate()
        plan = run_plan.check(values)
        assert plan["program_source"] == "given" and plan["backend"] == "local", dag_id


def test_scenario_defaults_follow_the_originals(dagbag):
    """The seed scenarios run the Kafka Streams app as the originals configured it; the worker stays the default
    of soak_eos_id_assignment, where its bug switches prove the checker."""
    stale = dagbag.dags["soak_stale_state_standby"].params
    assert (stale["partitions"], stale["keys"], stale["interval_s"], stale["standbys"]) == (30, 1000, 15, 1)
    assert stale["program"].split()[:3] == ["1", "2", "3"]
    assert (stale["app"], stale["streams_version"]) == ("streams", "4.3.1")
    ids = dagbag.dags["soak_id_assignment_rebalance"].params
    # StandbyTaskEOSMultiRebalanceIntegrationTest's settings, but one thread per instance (docs/scenarios.md)
    assert (ids["app"], ids["partitions"], ids["threads"], ids["standbys"], ids["max_warmup_replicas"],
            ids["commit_interval_ms"]) == ("streams", 12, 1, 1, 1, 100)
    assert (ids["records"], ids["keys"]) == (63_000, 63_000)
    assert dagbag.dags["soak_eos_id_assignment"].params["app"] == "worker"
    assert [(p["records"], p.get("at_s"), p.get("after_step")) for p in ids["phases"]] == \
        [(3000, 0, None), (60_000, None, 1)]
    newest = dagbag.dags["soak_newest_protocols"].params
    assert (newest["group_protocol"], newest["transaction_version"], newest["brokers"]) == ("streams", 2, 3)
    assert newest["streams_version"] == newest["kafka_version"] == "4.4.0"
    assert {"k1", "p2", "r2", "b2-", "b2+"} <= set(newest["program"].split())


def test_scenario_dags_are_nightly_single_run_and_tagged(dagbag):
    for dag in dagbag.dags.values():
        assert "kafka-soak" in dag.tags
        assert dag.catchup is False and dag.max_active_runs == 1
        assert dag.on_failure_callback, "broken runs must alert"
        assert dag.deadline, "runs far past their program must alert (kafka_soak.deadline)"
        assert {"program", "interval_s", "records", "keys", "partitions", "instances", "rate", "payload_bytes",
                "bug", "seed", "standbys", "cache_entries", "phases", "brokers"} <= set(dag.params)


@pytest.mark.parametrize("dag_id", sorted(SCENARIOS))
def test_setup_and_teardown_wrap_the_run(dagbag, dag_id):
    dag = dagbag.dags[dag_id]
    assert dag.get_task("provision").is_setup
    assert dag.get_task("release").is_teardown and dag.get_task("stop_instances").is_teardown
    assert dag.get_task("program_step").is_mapped
    assert "provision" in dag.get_task("check_params").downstream_task_ids
    assert {"drain", "stop_instances"} <= dag.get_task("validate").upstream_task_ids
    assert not [t.task_id for t in dag.tasks if getattr(t, "multiple_outputs", False)], \
        "a task returns one XCom: a dict return annotation alone would store one per key as well"


def test_a_deployment_sets_defaults_for_every_scenario(monkeypatch):
    """SOAK_PARAM_DEFAULTS (the compose stack sets it) changes where every scenario runs, not what it does."""
    monkeypatch.setenv("SOAK_PARAM_DEFAULTS", '{"backend": "external", "runtime": "docker"}')
    bag = DagBag(str(DAGS))
    assert bag.import_errors == {}
    for dag_id in SCENARIOS:
        values = bag.dags[dag_id].params.validate()
        assert (values["backend"], values["runtime"]) == ("external", "docker"), dag_id
    assert bag.dags["soak_stale_state_standby"].params["program"] == "1 2 3 2"



@pytest.mark.parametrize("variable, value, refusal", [
    ("SOAK_PARAM_DEFAULTS", '{"runtim": "docker"}', "SOAK_PARAM_DEFAULTS: unknown params ['runtim']"),
    ("SOAK_PARAM_DEFAULTS", "{backend: external", "SOAK_PARAM_DEFAULTS is not JSON"),
    ("SOAK_PARAM_DEFAULTS", '{"runtime": "kubernetes"}', "SOAK_PARAM_DEFAULTS: param runtime: 'kubernetes' is not one of"),
    ("SOAK_PARAM_DEFAULTS", '{"app_image": "my/app:1"}', "app_image: is for runtime 'docker' (runtime is 'local')"),
    ("SOAK_TRIGGER_ALLOW", '{"program": ["1 2"]}', "SOAK_TRIGGER_ALLOW: ['program'] must be params only the deployment"),
])
def test_a_broken_deployment_setting_refuses_each_run_and_breaks_no_import(monkeypatch, variable, value, refusal):
    """A malformed deployment variable does not take every scenario DAG out of Airflow (an import error, a
    traceback): the DAGs import, and each run, from the CLI or a trigger, is refused saying why."""
    from kafka_soak.cli import UsageError, check_conf

    monkeypatch.setenv(variable, value)
    bag = DagBag(str(DAGS))
    assert bag.import_errors == {} and set(SCENARIOS) <= set(bag.dags)
    with pytest.raises(UsageError, match=re.escape(refusal)):
        check_conf("soak_eos_id_assignment", {})


def test_the_compose_stack_matches_the_project():
    """docker/compose.yaml cannot be brought up here (no registry); it must at least name what the code uses."""
    import yaml

    from kafka_soak.clients.reference.profiles import IMAGE as REFERENCE_IMAGE
    from kafka_soak.params import KAFKA_IMAGE

    root = DAGS.parent
    compose = yaml.safe_load((root / "docker" / "compose.yaml").read_text())["services"]
    assert compose["kafka"]["image"] == KAFKA_IMAGE
    assert compose["worker-image"]["image"] == REFERENCE_IMAGE
    for service in ("worker-image", "airflow"):
        assert (root / "docker" / compose[service]["build"]["dockerfile"].split("/")[-1]).exists()
    project = (root / "requirements.txt").read_text().splitlines()
    for requirement in (root / "plugins" / "kafka_soak" / "clients" / "reference" / "requirements.txt").read_text().split():
        assert requirement in project, f"the worker image pins what the project pins: {requirement}"


def test_the_worker_image_carries_every_module_the_worker_imports(tmp_path):
    """docker/worker.Dockerfile copies the worker's modules one by one (and .dockerignore lets only those into the
    build): lay out /app from exactly those COPY lines and start the worker from it, without the plugins folder."""
    import shutil
    import subprocess
    import sys

    root = DAGS.parent
    let_in = {line[1:].rstrip("/") for line in (root / ".dockerignore").read_text().splitlines() if line[:1] == "!"}
    app = tmp_path / "app"
    for line in (root / "docker" / "worker.Dockerfile").read_text().splitlines():
        *sources, target = line.split()[1:] if line.startswith("COPY plugins/") else [None]
        for source in sources:
            assert source.rstrip("/") in let_in, f".dockerignore keeps {source} out of the image's build context"
            dest = app / target.removeprefix("/app/")
            if source.endswith("/"):
                shutil.copytree(root / source, dest, dirs_exist_ok=True)
            else:
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy(root / source, dest)
    started = subprocess.run([sys.executable, "-m", "kafka_soak.clients.reference.worker", "--help"], cwd=tmp_path,
                             env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(app)}, capture_output=True, text=True,
                             timeout=60)
    assert started.returncode == 0, started.stderr
    assert "usage:" in started.stdout
