"""Shared fixtures: a private runs directory, a real Apache Kafka broker, process hygiene checks."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from support import ROOT
from support.airflow_home import private_airflow
from support.browser import headless_chromium
from support.checks import SECRET
from support.waits import until

TESTS = Path(__file__).parent
sys.path.insert(0, str(ROOT / "plugins"))
# The Spark job's own modules, as spark-submit puts them on its path (validate.shipped_modules); what they share with
# the plugin they import from kafka_soak.shared, as the plugin does.
sys.path.insert(0, str(ROOT / "spark_jobs"))


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist every worker runs ``airflow dags test`` on its own copy of Airflow's SQLite database
    (made by ``make setup``): two runs writing one file would lock each other out."""
    worker, home = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("AIRFLOW_HOME")
    if worker and home and Path(home, "airflow.db").exists():
        private = Path(tempfile.mkdtemp(prefix=f"kafka-soak-airflow-{worker}-"))
        os.environ.update(private_airflow(home, private))
        config.stash[PRIVATE_HOME] = private


def pytest_unconfigure(config: pytest.Config) -> None:
    private = config.stash.get(PRIVATE_HOME, None)
    if private is not None:
        shutil.rmtree(private, ignore_errors=True)


PRIVATE_HOME = pytest.StashKey[Path]()

# pytest-xdist hands out tests in collection order: the layers' folders, slowest first (end-to-end runs take minutes
# each, a component test seconds, a unit test less), and within tests/e2e the modules that run whole soaks, most
# expensive first. So no worker draws a five-minute run while the other has nothing left to do.
LAYERS = ("e2e", "component", "unit")
LONG_FIRST = ("test_known_bugs.py", "test_scheduler_runs.py", "test_e2e.py", "test_own_app.py", "test_e2e_docker.py",
              "test_resource_growth.py", "test_report.py", "test_alerts_soak.py", "test_deadline_scheduler.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}

    def order(item: pytest.Item) -> tuple[int, int]:
        layer = item.path.relative_to(TESTS).parts[0]
        return LAYERS.index(layer), rank.get(item.path.name, len(rank))

    items.sort(key=order)  # stable: a module keeps its own order


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory) -> Path:
    """Every run of the test session writes its evidence here, not into the project's runs/."""
    path = tmp_path_factory.mktemp("runs")
    os.environ["SOAK_RUNS_DIR"] = str(path)
    return path


@pytest.fixture
def own_runs(tmp_path, monkeypatch) -> Path:
    """A runs directory of the test's own for `make soak`'s command run in the test's process (``checks.cli_refusal``)."""
    monkeypatch.setenv("SOAK_RUNS_DIR", str(tmp_path))
    # set (empty), not deleted: the CLI writes the owner's params into SOAK_PARAM_DEFAULTS of its own process, and
    # monkeypatch restores only what it set, so the next test of this worker starts from the same environment
    monkeypatch.setenv("SOAK_PARAM_DEFAULTS", "")
    monkeypatch.setenv("SOAK_TRIGGER_ALLOW", "")
    return tmp_path


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A runs directory of the test's own for the run directories a test makes in its process (``support.task_context``)."""
    monkeypatch.setenv("SOAK_RUNS_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="session")
def alerted_runs(tmp_path_factory) -> SimpleNamespace:
    """The default scenario twice in a runs directory of its own, alerted to a real SMTP server and webhook: with
    the drop switch on KIP-848's consumer rebalance protocol (a broken run), then healthy through every fault at once
    on three brokers (it recovers). The
    end-to-end, alert and report tests read these two runs rather than each running its own; they share the
    pytest-xdist group ``soak_runs.ALERTED_RUNS``."""
    from support.alert_channels import connections, smtp_server, webhook_server
    from support.soak_runs import FAULTS, SHORT, soak

    runs = tmp_path_factory.mktemp("alerted-runs")
    with smtp_server() as (inbox, smtp_port), webhook_server() as (posts, http_port):
        env = {**connections(smtp_port, http_port), "AIRFLOW__API__BASE_URL": "http://127.0.0.1:8080"}
        # records as JSON's 6000.0, which JSON Schema takes for an integer: every task runs on admission's 6000
        broken = soak(runs, env=env, bug="drop", group_protocol="consumer", records=float(SHORT["records"]))
        broken_alerts = (list(inbox.messages), list(posts))
        passed = soak(runs, env=env, **FAULTS)
        return SimpleNamespace(runs_dir=runs, broken=broken, broken_alerts=broken_alerts, passed=passed,
                               mails=list(inbox.messages), posts=list(posts))


# Known-bug scenarios whose one run costs more than make test's 30 minutes can hold; `make bugs` measures them (their
# rates are in docs/bugs.md). KAFKA-16692: two clusters of three brokers through a rolling upgrade, 9 000 records,
# about five minutes on two cores that the other known-bug runs already keep busy.
ONLY_IN_MAKE_BUGS = {"bug_kafka_16692"}


@pytest.fixture(scope="session")
def known_bug_runs(tmp_path_factory) -> dict[str, SimpleNamespace]:
    """Every known-bug scenario (``dags/scenarios/bug_kafka_<n>.yaml``) but ``ONLY_IN_MAKE_BUGS``' once at its
    defaults, the runs at once: each times its faults against its app's events (``wN``: test_known_bugs says how), so
    their programs may share the machine and the three cost about one run's time. A scenario whose fault is a stall or
    a broker's upgrade starts once the others have applied their whole programs, so its load (a cluster of each broker
    release) never eats their margins: a stall waits on its thread, not on the clock. It ends about when the others'
    drains and checks do. Each run has its own Airflow database and runs directory; the Kafka Streams versions are
    built first, so no Maven build competes with a program. The tests that read them share the pytest-xdist group
    ``known-bugs``."""
    from support.soak_runs import soak

    from kafka_soak.admission import load_scenario
    from kafka_soak.backends import kafka_jars
    from kafka_soak.clients.reference import streams
    from kafka_soak.faults import program as programs
    from kafka_soak.shared import rundir

    scenarios = {path.stem: load_scenario(path)["params"]
                 for path in sorted((ROOT / "dags" / "scenarios").glob("bug_kafka_*.yaml"))
                 if path.stem not in ONLY_IN_MAKE_BUGS}
    for version in sorted({v for params in scenarios.values() if params["app"] == "streams"
                           for v in params.get("streams_versions") or [params["streams_version"]]}):
        streams.build(version)
    for version in sorted({v for params in scenarios.values() for v in params.get("kafka_versions", [])}):
        kafka_jars.resolve(version)

    # Made here, not in the threads: the first mktemp of a session makes its base directory, and three at once make three.
    places = {dag_id: (tmp_path_factory.mktemp(dag_id), tmp_path_factory.mktemp(f"{dag_id}-airflow")) for dag_id in scenarios}

    def run(dag_id: str) -> SimpleNamespace:
        runs, home = places[dag_id]
        code, run_dir, verdict = soak(runs, dag_id, env=private_airflow(os.environ["AIRFLOW_HOME"], home))
        return SimpleNamespace(runs_dir=runs, code=code, run_dir=run_dir, verdict=verdict)

    def programs_applied(futures: dict[str, Future[SimpleNamespace]]) -> None:
        """Until each run has recorded every step of its program (or ended)."""
        for dag_id, future in futures.items():
            steps = len(str(scenarios[dag_id]["program"]).split())
            while not future.done() and not any(len(path.read_text().splitlines()) >= steps for path in
                                                places[dag_id][0].glob(f"{dag_id}/*/{rundir.STEPS}")):
                time.sleep(1)

    later = {dag_id for dag_id, params in scenarios.items()
             if {"stall", "broker-upgrade"} & {kind.name for kind, _ in programs.kinds_in(str(params["program"]).split())}}
    with ThreadPoolExecutor(len(scenarios)) as pool:
        futures = {dag_id: pool.submit(run, dag_id) for dag_id in scenarios if dag_id not in later}
        programs_applied(futures)
        futures.update({dag_id: pool.submit(run, dag_id) for dag_id in sorted(later)})
        return {dag_id: futures[dag_id].result() for dag_id in scenarios}


@pytest.fixture(scope="session")
def spark():
    """A local Spark session for the checker's logic (test_checker, test_timeline): started once per worker."""
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("checker-test")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.host", "127.0.0.1").getOrCreate())
    yield session
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    session.stop()
    # The JVM of an in-process session outlives stop(); end it so the test leaves nothing running.
    gateway.shutdown()
    gateway.proc.terminate()
    gateway.proc.wait(30)
    SparkContext._gateway = SparkContext._jvm = None


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """One real Apache Kafka node (the ``local`` backend, default version) for the whole session."""
    from kafka_soak.backends.local_kafka import LocalKafkaBackend

    backend = LocalKafkaBackend(tmp_path_factory.mktemp("kafka"))
    cluster = backend.provision({}, "unused")
    yield backend, cluster
    backend.release(cluster)


@pytest.fixture
def broker(kafka, request):
    """The session's broker with a run's topics of this test's own (``input``/``output``/``changelog`` with 4
    partitions, ``assertions`` with 1)."""
    from kafka_soak.clients.subjects import Subject
    from kafka_soak.infra import kafka_io
    from kafka_soak.infra.cluster import Cluster

    _backend, cluster = kafka
    prefix = f"test.{request.node.name}.{next(_topic_sets)}".replace("[", ".").replace("]", "")
    prefix = "".join(c if c.isalnum() or c in "._-" else "_" for c in prefix)[:200]
    topics = {role: f"{prefix}.{role}" for role in ("input", "output", "changelog", "assertions")}
    kafka_io.create_topics(cluster.bootstrap_servers, {name: 1 if role == "assertions" else 4
                                                       for role, name in topics.items()})
    app = Subject("", "app", "", {role: name for role, name in topics.items() if role != "input"})  # group "app"
    return Cluster("local", cluster.bootstrap_servers, topics, brokers=1, kafka_version=cluster.kafka_version,
                   subjects=[app.as_dict()])


_topic_sets = itertools.count()


@pytest.fixture
def kafka_connection(monkeypatch, broker):
    """A real Airflow connection of type kafka (from the environment, as Airflow reads it) to the session's broker,
    with SASL settings that a PLAINTEXT listener ignores."""
    extra = {"bootstrap.servers": broker.bootstrap_servers, "sasl.username": "soak", "sasl.password": SECRET,
             "group.id": "from-the-connection"}
    monkeypatch.setenv("AIRFLOW_CONN_SOAK_SECURED", json.dumps({"conn_type": "kafka", "extra": extra}))
    monkeypatch.setenv("AIRFLOW_CONN_NOT_KAFKA", json.dumps({"conn_type": "http", "host": "example"}))
    return "soak_secured"


@pytest.fixture(scope="module")
def secured_cluster(tmp_path_factory):
    """A real SASL_PLAINTEXT + SCRAM-SHA-512 Kafka node standing in for a team's secured cluster."""
    from support.secured_kafka import ScramKafka

    cluster = ScramKafka(tmp_path_factory.mktemp("secured"), SECRET)
    cluster.provision({}, "unused")
    yield cluster
    cluster.release(None)


@pytest.fixture
def scram_connection(secured_cluster, monkeypatch) -> str:
    """An Airflow connection of type kafka to the secured cluster (``soak_scram``), as a deployment defines it."""
    extra = {"bootstrap.servers": secured_cluster.bootstrap_servers, **secured_cluster.client_settings()}
    monkeypatch.setenv("AIRFLOW_CONN_SOAK_SCRAM", json.dumps({"conn_type": "kafka", "extra": extra}))
    return "soak_scram"


@pytest.fixture
def smtp_server():
    """A real SMTP server on loopback (aiosmtpd): the messages it received, and its port."""
    from support.alert_channels import smtp_server as channel

    with channel() as server:
        yield server


@pytest.fixture
def webhook_server():
    """A real HTTP server on loopback standing in for a Slack incoming webhook: what was posted, and its port."""
    from support.alert_channels import webhook_server as channel

    with channel() as server:
        yield server


@pytest.fixture
def channels(monkeypatch, smtp_server, webhook_server):
    """Airflow's alert connections (from the environment) pointed at both servers; what each received."""
    from support.alert_channels import connections

    inbox, smtp_port = smtp_server
    posts, http_port = webhook_server
    for name, value in connections(smtp_port, http_port).items():
        monkeypatch.setenv(name, value)
    return inbox.messages, posts


@pytest.fixture(scope="session", autouse=True)
def no_stray_children():
    """The test session leaves no child process behind (checked after every other fixture is torn down)."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    new = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    _gone, stray = psutil.wait_procs(new, timeout=20)  # Spark's Python workers exit shortly after stop()
    stray = [p for p in stray if p.status() != psutil.STATUS_ZOMBIE]
    assert not stray, f"left running: {[(p.pid, p.cmdline()[:4]) for p in stray]}"


@pytest.fixture(scope="session")
def docker_engine(tmp_path_factory):
    """A real Docker engine with the reference app's image (``docker_engine.WORKER_IMAGE``) built on it.

    Skips only when the engine cannot run here (no dockerd, not root); a failing image build fails."""
    from support import docker_engine

    try:
        started = docker_engine.start_dockerd(tmp_path_factory.mktemp("dockerd") / "dockerd.log")
    except docker_engine.Unavailable as exc:
        pytest.skip(f"no Docker engine: {exc}")
    try:
        try:
            docker_engine.build_base_image()
        except docker_engine.Unavailable as exc:
            pytest.skip(f"cannot build a base image: {exc}")
        docker_engine.build_worker_image()
        yield docker_engine
    finally:
        if started is not None:
            docker_engine.stop_dockerd(started)


@pytest.fixture(scope="session")
def kafka_image(docker_engine) -> str:
    """Apache Kafka from the project's jars as an image (docker/kafka.Dockerfile), for backend=docker: no registry
    serves apache/kafka here."""
    docker_engine.build_kafka_image()
    return docker_engine.KAFKA_IMAGE


@pytest.fixture(scope="session")
def streams_image(docker_engine) -> str:
    """The Kafka Streams app as an image (docker/streams.Dockerfile), for runtime=docker with app=streams."""
    return docker_engine.build_streams_image()


@pytest.fixture(scope="module")
def evidence(tmp_path_factory) -> Path:
    """A runs root with one finished run, a file beside the root and a symlink from the run out to that file."""
    from support.served_reports import DAG_ID, OUTSIDE, RUN_ID, write_run

    base = tmp_path_factory.mktemp("ui")
    (base / "outside.txt").write_text(OUTSIDE)
    root = base / "runs"
    run_dir = write_run(root, DAG_ID, RUN_ID)
    (run_dir / "logs" / "escape.log").symlink_to(base / "outside.txt")
    return root


@pytest.fixture(scope="module")
def served(evidence, tmp_path_factory):
    """The plugin's app mounted at its prefix on a parent app (as the API server does), run by uvicorn on a free
    loopback port in a thread; Airflow's configured auth manager (SimpleAuthManager) issues the test's token."""
    import threading

    import uvicorn
    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from fastapi import FastAPI

    from kafka_soak.backends.docker_kafka import free_port
    from kafka_soak.evidence import ui

    passwords = tmp_path_factory.mktemp("auth") / "passwords.json"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SOAK_RUNS_DIR", str(evidence))
        env.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE", str(passwords))
        token = init_auth_manager().generate_jwt(SimpleAuthManagerUser(username="soak", role="viewer"))
        parent = FastAPI()
        parent.mount(ui.URL_PREFIX, ui.app)
        server = uvicorn.Server(uvicorn.Config(parent, host="127.0.0.1", port=free_port(), log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        until(lambda: server.started or not thread.is_alive(), "start of uvicorn")
        assert server.started, "uvicorn did not start"
        try:
            yield server.config.port, token
        finally:
            server.should_exit = True
            thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium, offline: no background network, no driver download (the driver path is given)."""
    driver = headless_chromium()
    yield driver
    driver.quit()
