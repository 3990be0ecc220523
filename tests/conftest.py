"""Shared fixtures: a private runs directory, a real embedded broker, process hygiene checks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT / "spark_jobs"))


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory) -> Path:
    """Every run of the test session writes its evidence here, not into the project's runs/."""
    path = tmp_path_factory.mktemp("runs")
    os.environ["SOAK_RUNS_DIR"] = str(path)
    return path


@pytest.fixture
def broker(tmp_path):
    """A real embedded broker process (librdkafka's mock cluster behind the Kafka protocol on loopback)."""
    from kafka_soak.backends.embedded import EmbeddedBackend

    backend = EmbeddedBackend(tmp_path)
    cluster = backend.provision({"input": 4, "output": 4, "changelog": 4, "assertions": 1}, "test")
    yield cluster
    backend.release()


def live_processes(run_dir: Path) -> list[str]:
    """Processes registered by a run that are still alive."""
    from kafka_soak.runtime.local import LocalProcesses

    processes = LocalProcesses(run_dir)
    return [name for name in processes.names() if processes.process(name) is not None]


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
    import docker_engine

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
