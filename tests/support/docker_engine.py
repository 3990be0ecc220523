"""A real Docker engine for the tests, and the reference app's image built on it without a registry.

No image can be pulled on the machines these tests run on, but Debian's docker.io runs as root. So:
start ``dockerd`` when none answers (and stop it afterwards), build Debian base images with
``debootstrap`` + ``docker import``, download the worker's wheels on the host and build
docker/worker.Dockerfile on one with ``--no-index``, and docker/kafka.Dockerfile (Kafka from the project's
jars) on one with Java 17. Images are kept between runs as a cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafka_soak.params import KAFKA_VERSION, STREAMS_VERSION
from support import ROOT

SOCKET = "unix:///var/run/docker.sock"
BASE_IMAGE = "kafka-soak-test-base:bookworm"
JRE_IMAGE = "kafka-soak-test-jre:bookworm"
WORKER_IMAGE = "kafka-soak-worker:test"
ORDERS_PY_IMAGE = "orders-py:test"
KAFKA_IMAGE = "kafka-soak-kafka:test"
TEST_IMAGE_LABEL = "org.kafka-soak.test-build"  # on every image the tests build (not on the debootstrap bases)
MIRROR = os.environ.get("SOAK_DEBIAN_MIRROR", "http://deb.debian.org/debian")


class Unavailable(Exception):
    """The engine genuinely cannot run here; the message says why."""


def client():
    import docker

    return docker.DockerClient(base_url=SOCKET, version="auto", timeout=300)


def answers() -> bool:
    try:
        return client().ping()
    except Exception:
        return False


def start_dockerd(log_path: Path, timeout: float = 60.0) -> subprocess.Popen | None:
    """Start dockerd unless an engine answers already; returns the process this call started, if any."""
    if answers():
        return None
    if shutil.which("dockerd") is None:
        raise Unavailable("dockerd is not installed (make test installs Debian's docker.io)")
    if os.geteuid() != 0:
        raise Unavailable("dockerd needs root and none is running")
    log = log_path.open("wb")
    proc = subprocess.Popen(["dockerd"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while not answers():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_dockerd(proc)
            raise Unavailable(f"dockerd did not start: {log_path.read_text()[-1500:]}")
        time.sleep(0.5)
    return proc


def stop_dockerd(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def has_image(name: str) -> bool:
    import docker

    try:
        client().images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False


def debootstrap_image(name: str, packages: list[str]) -> None:
    """A minimal Debian bookworm with ``packages`` as a local image (kept between runs as a cache)."""
    if has_image(name):
        return
    if shutil.which("debootstrap") is None:
        raise Unavailable("debootstrap is not installed (make test installs it)")
    with tempfile.TemporaryDirectory(prefix="soak-rootfs-") as tmp:
        rootfs, tarball = Path(tmp) / "rootfs", Path(tmp) / "rootfs.tar"
        subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", "bookworm",
                        str(rootfs), MIRROR], check=True, capture_output=True)
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        repository, tag = name.split(":")
        client().api.import_image_from_file(str(tarball), repository=repository, tag=tag)


def build_base_image() -> None:
    """Python 3.11 with venv, for the reference app's image."""
    debootstrap_image(BASE_IMAGE, ["python3", "python3-venv"])


def build_kafka_image() -> None:
    """docker/kafka.Dockerfile (Apache Kafka from the project's jars) on a local Debian with Java 17."""
    from kafka_soak.backends import kafka_jars

    debootstrap_image(JRE_IMAGE, ["openjdk-17-jre-headless"])
    kafka_jars.resolve(KAFKA_VERSION)
    build(ROOT, KAFKA_IMAGE, {"BASE_IMAGE": JRE_IMAGE, "KAFKA_VERSION": KAFKA_VERSION}, "docker/kafka.Dockerfile")


def build_streams_image() -> str:
    """docker/streams.Dockerfile (the Kafka Streams app of the default version) on the local JRE base, tagged as
    runtime=docker looks it up (``kafka-soak-streams:<version>``)."""
    from kafka_soak.clients.reference import streams

    debootstrap_image(JRE_IMAGE, ["openjdk-17-jre-headless"])
    app_dir, _ = streams.build(STREAMS_VERSION)
    tag = streams.image(STREAMS_VERSION)
    build(ROOT, tag, {"BASE_IMAGE": JRE_IMAGE, "APP_DIR": app_dir.relative_to(ROOT).as_posix()},
          "docker/streams.Dockerfile")
    return tag


def build(context: Path, tag: str, buildargs: dict[str, str], dockerfile: str = "Dockerfile") -> None:
    """Build an image of the tests as ``tag``, then remove the images of the tests' builds that no tag names any more:
    the sources change between two clean clones, each build then leaves the image it replaced, and the engine's disk
    fills with them."""
    client().images.build(path=str(context), dockerfile=dockerfile, tag=tag, rm=True, buildargs=buildargs,
                          labels={TEST_IMAGE_LABEL: "1"})
    client().images.prune(filters={"dangling": True, "label": TEST_IMAGE_LABEL})


def build_worker_image() -> None:
    """docker/worker.Dockerfile on the local base, from a wheelhouse (pip in the build cannot reach PyPI)."""
    wheelhouse = ROOT / "docker" / "wheelhouse"
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                    "--only-binary=:all:", "-d", str(wheelhouse), "-r",
                    str(ROOT / "plugins" / "kafka_soak" / "clients" / "reference" / "requirements.txt")],
                   check=True)
    build(ROOT, WORKER_IMAGE, {"BASE_IMAGE": BASE_IMAGE, "PIP_ARGS": "--no-index"}, "docker/worker.Dockerfile")


def build_orders_py_image() -> str:
    """The outside Python app (tests/apps/orders-py) as its team would ship it, on the worker image (Python and
    confluent-kafka; no registry serves python:3.11-slim here)."""
    build(ROOT / "tests" / "apps" / "orders-py", ORDERS_PY_IMAGE, {"BASE_IMAGE": WORKER_IMAGE})
    return ORDERS_PY_IMAGE


def run_containers(run_dir: Path) -> list[str]:
    """Containers labelled with this run (any state)."""
    from kafka_soak.infra.docker_engine import run_filter

    return [c.name for c in client().containers.list(all=True, filters=run_filter(run_dir))]
