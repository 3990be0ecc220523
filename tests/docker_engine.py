"""A real Docker engine for the tests, and the reference app's image built on it without a registry.

No image can be pulled on the machines these tests run on, but Debian's docker.io runs as root. So:
start ``dockerd`` when none answers (and stop it afterwards), build a Debian base image with
``debootstrap`` + ``docker import``, download the worker's wheels on the host and build
docker/worker.Dockerfile on that base with ``--no-index``. Images are kept between runs as a cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOCKET = "unix:///var/run/docker.sock"
BASE_IMAGE = "kafka-soak-test-base:bookworm"
WORKER_IMAGE = "kafka-soak-worker:test"
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


def build_base_image() -> None:
    """A minimal Debian bookworm (Python 3.11 with venv) as a local image."""
    if has_image(BASE_IMAGE):
        return
    if shutil.which("debootstrap") is None:
        raise Unavailable("debootstrap is not installed (make test installs it)")
    with tempfile.TemporaryDirectory(prefix="soak-rootfs-") as tmp:
        rootfs, tarball = Path(tmp) / "rootfs", Path(tmp) / "rootfs.tar"
        subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv", "bookworm",
                        str(rootfs), MIRROR], check=True, capture_output=True)
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        repository, tag = BASE_IMAGE.split(":")
        client().api.import_image_from_file(str(tarball), repository=repository, tag=tag)


def build_worker_image() -> None:
    """docker/worker.Dockerfile on the local base, from a wheelhouse (pip in the build cannot reach PyPI)."""
    wheelhouse = ROOT / "docker" / "wheelhouse"
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                    "--only-binary=:all:", "-d", str(wheelhouse), "-r", str(ROOT / "docker" / "worker-requirements.txt")],
                   check=True)
    client().images.build(path=str(ROOT), dockerfile="docker/worker.Dockerfile", tag=WORKER_IMAGE, rm=True,
                          buildargs={"BASE_IMAGE": BASE_IMAGE, "PIP_ARGS": "--no-index"})


def run_containers(run_dir: Path) -> list[str]:
    """Containers labelled with this run (any state)."""
    from kafka_soak.runtime.docker import run_filter

    return [c.name for c in client().containers.list(all=True, filters=run_filter(run_dir))]
