"""The Docker runtime against a real Docker engine: containers started, paused, stopped, killed and removed,
their output copied into the run directory, and nothing of the run left behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.waits import until

from kafka_soak import run_plan, teardowns
from kafka_soak.backends.docker_kafka import DockerKafkaBackend
from kafka_soak.clients import subjects
from kafka_soak.clients.instances import Instances
from kafka_soak.infra.cluster import Cluster
from kafka_soak.infra.docker_engine import (
    BROKER_ROLE,
    INSTANCE_ROLE,
    DockerRuntimeError,
    container_name,
    docker_api,
    run_labels,
)
from kafka_soak.infra.resource_sampler import Sampler
from kafka_soak.infra.runtime.docker import DockerContainers
from kafka_soak.shared import resources, rundir

# One Docker engine for the session: its tests run on one pytest-xdist worker.
pytestmark = pytest.mark.xdist_group(name="docker")

# A stand-in app: prints a line a second and says goodbye on SIGTERM (Python in the Debian base image).
APP = ["python3", "-u", "-c", "import signal, sys, time\n"
       "signal.signal(signal.SIGTERM, lambda *a: (print('bye'), sys.exit(0)))\n"
       "n = 0\n"
       "while True:\n    print('tick', n); n += 1; time.sleep(0.2)\n"]


def wait_for_output(containers: DockerContainers, name: str, text: str) -> None:
    def printed() -> bool:
        containers.copy_log(name)
        return text in Path(containers.record(name).log).read_text()

    until(printed, f"{text!r} printed by {name}", every_s=0.1)


@pytest.fixture
def run_dir(tmp_path):
    path = tmp_path / "soak_test_dag" / "manual__2026-11-22T00_00_00"
    path.mkdir(parents=True)
    return path


def test_lifecycle_of_an_instance_container(docker_engine, run_dir):
    containers = DockerContainers(run_dir, docker_engine.BASE_IMAGE, {"FROM_PARAMS": "yes"})
    log_path = run_dir / "logs" / "app-1.0.log"
    rec = containers.start("instance-1", APP, log_path, step="0", extra_env={"SOAK_INSTANCE": "1"})
    try:
        info = containers.api.inspect_container(rec.container)
        assert info["Config"]["Labels"] == run_labels(run_dir, "instance-1", INSTANCE_ROLE, step="0")
        assert {"FROM_PARAMS=yes", "SOAK_INSTANCE=1"} <= set(info["Config"]["Env"])
        assert info["HostConfig"]["NetworkMode"] == "host"
        assert containers.is_alive("instance-1") and not containers.is_paused("instance-1")
        wait_for_output(containers, "instance-1", "tick")
        # the engine is this machine's: the run's resource sampler reads the container's processes as a local one's
        Sampler(run_dir).sample_once(time.time())
        sampled = rundir.read_jsonl(run_dir / resources.DIR / resources.SAMPLES)
        assert [(s["process"], s["pid"]) for s in sampled] == [("instance-1", info["State"]["Pid"])]
        assert sampled[0]["rss_mb"] > 1 and sampled[0]["threads"] >= 2 and sampled[0]["fds"] >= 3, sampled

        assert containers.pause("instance-1") and containers.is_paused("instance-1")
        containers.copy_log("instance-1")
        ticks = log_path.read_text().count("tick")
        time.sleep(1)
        containers.copy_log("instance-1")
        assert log_path.read_text().count("tick") == ticks, "a paused container must not run"
        assert containers.resume("instance-1") and not containers.is_paused("instance-1")

        assert containers.stop("instance-1", timeout=10) == 0
        assert not containers.is_alive("instance-1")
        assert log_path.read_text().rstrip().endswith("bye")

        rec2 = containers.start("instance-1", APP, run_dir / "logs" / "app-1.2.log", step="2")
        assert rec2.container != rec.container
        assert docker_engine.run_containers(run_dir) == [info["Name"].lstrip("/")], "the old container is replaced"
        wait_for_output(containers, "instance-1", "tick")
        assert containers.kill("instance-1") == 137
    finally:
        containers.clean_up()
    assert docker_engine.run_containers(run_dir) == []
    assert log_path.exists(), "logs stay in the run directory"


def test_teardown_removes_every_container_of_the_run_and_only_those(docker_engine, run_dir, tmp_path):
    other_dir = tmp_path / "soak_test_dag" / "other_run"
    other_dir.mkdir(parents=True)
    mine, other = DockerContainers(run_dir, docker_engine.BASE_IMAGE), DockerContainers(other_dir, docker_engine.BASE_IMAGE)
    other.start("instance-1", APP, other_dir / "logs" / "o.log")
    try:
        mine.start("instance-1", APP, run_dir / "logs" / "a.log")
        mine.start("instance-2", APP, run_dir / "logs" / "b.log")
        wait_for_output(mine, "instance-2", "tick")
        mine.pause("instance-2")
        # a container of the run that no registry knows (its task died between create and record)
        mine.api.create_container(docker_engine.BASE_IMAGE, command=["true"],
                                  labels=run_labels(run_dir, "orphan", INSTANCE_ROLE))
        # the run's broker (backend=docker) is the backend's to remove at release, not the runtime's
        broker = container_name(mine.run_key, "kafka")
        mine.api.create_container(docker_engine.BASE_IMAGE, command=["true"], name=broker,
                                  labels=run_labels(run_dir, "kafka", BROKER_ROLE))
        assert len(docker_engine.run_containers(run_dir)) == 4
        assert len(mine.clean_up()) == 1  # the orphan
        assert docker_engine.run_containers(run_dir) == [broker]
        mine.api.remove_container(broker)
        assert len(docker_engine.run_containers(other_dir)) == 1
        assert "tick" in (run_dir / "logs" / "b.log").read_text()
    finally:
        other.clean_up()


def test_an_interrupted_runs_teardowns_remove_its_instance_and_broker_containers(docker_engine, run_dir):
    """`make soak` interrupted (no teardown task ran): the teardowns it runs itself, from what the run wrote, stop
    the instance container gracefully and remove it and the broker container, their logs kept."""
    plan = run_plan.check({"runtime": "docker", "backend": "docker", "kafka_image": docker_engine.BASE_IMAGE,
                              "app_image": docker_engine.BASE_IMAGE, "app_command": APP, "instances": 1,
                              "program": "1"})
    containers = DockerContainers(run_dir, docker_engine.BASE_IMAGE)
    api = containers.api
    broker = api.create_container(docker_engine.BASE_IMAGE, command=["sh", "-c", "echo broker says hi; sleep 600"],
                                  name=container_name(containers.run_key, "kafka"),
                                  labels=run_labels(run_dir, "kafka", BROKER_ROLE))["Id"]
    api.start(broker)
    names = {role: f"soak.test.{role}" for role in subjects.topics(plan)}
    cluster = Cluster("docker", "127.0.0.1:9", names, container=broker,
                      subjects=[s.as_dict() for s in subjects.build(plan, names)]).as_dict()
    rundir.write_json(run_dir / "params.json", {"plan": plan})
    rundir.write_json(run_dir / "cluster.json", cluster)
    instances = Instances.for_run(run_dir, cluster, plan)
    instances.start(1, 0)
    wait_for_output(instances.runtime, "instance-1", "tick")
    assert len(docker_engine.run_containers(run_dir)) == 2
    stopped = teardowns.from_files(run_dir, "interrupted by the test")
    assert stopped == {"instance-1": 0} and docker_engine.run_containers(run_dir) == []
    assert "bye" in (run_dir / "logs" / "app-1.0.log").read_text(), "stopped gracefully, its output kept"
    assert "broker says hi" in (run_dir / "logs" / "kafka-broker.log").read_text()


def test_a_teardown_on_a_disk_that_refuses_the_log_still_removes_the_container(docker_engine, run_dir):
    """The log copy comes first; a full or read-only disk fails it (here: the log's path is a directory), and the
    container must go all the same (it once stayed behind)."""
    containers = DockerContainers(run_dir, docker_engine.BASE_IMAGE)
    log_path = run_dir / "logs" / "app-1.0.log"
    containers.start("instance-1", APP, log_path)
    wait_for_output(containers, "instance-1", "tick")
    log_path.unlink()
    log_path.mkdir()  # write_bytes raises IsADirectoryError, as it raises ENOSPC on a full disk
    containers.clean_up()
    assert docker_engine.run_containers(run_dir) == []


def test_clear_errors_for_an_unreachable_engine_and_a_missing_image(docker_engine, run_dir):
    with pytest.raises(DockerRuntimeError, match=r"cannot reach the Docker engine at unix:///nowhere.sock "
                                                 r"\(param docker_url\)"):
        docker_api("unix:///nowhere.sock", None)
    containers = DockerContainers(run_dir, "kafka-soak-absent:none")
    with pytest.raises(DockerRuntimeError, match=r"image 'kafka-soak-absent:none' \(param app_image\) is not on the "
                                                 r"Docker engine and cannot be pulled"):
        containers.start("instance-1", APP, run_dir / "x.log")
    assert docker_engine.run_containers(run_dir) == []


def test_docker_kafka_backend_refuses_an_image_it_cannot_get_and_leaves_nothing(docker_engine, run_dir):
    """The docker backend itself cannot run here (no registry for apache/kafka): its failure must be clear."""
    backend = DockerKafkaBackend(run_dir, image="apache/kafka-not-here:0")
    with pytest.raises(DockerRuntimeError, match=r"param kafka_image"):
        backend.provision({"input": 1}, "soak.x")
    assert docker_engine.run_containers(run_dir) == []
