"""The Docker runtime: app instances as containers, through the docker provider's ``DockerHook``.

Each start of instance *n* creates a fresh container ``soak-<dag>-<run>-instance-<n>`` labelled with DAG,
run, instance and program step, so every container of a run can be found (and only those) at teardown.
Toggling stops it gracefully (``docker stop``: SIGTERM, SIGKILL after the timeout), ``k`` kills it, ``p``/``r``
pause and unpause it (the freezer cgroup, like SIGSTOP for every process in it). Containers use the host
network so that a broker on loopback is reachable. A container's output is copied to its per-step log in
the run directory after every program step and when it ends; the container itself is removed only when its
instance is started again or at teardown, after its log was copied. On an engine of this machine a container's
processes are this machine's: its record then has their first process's start time, and the run's resource sampler
reads them as it reads a local process (a remote engine's are not this machine's to read).
"""

from __future__ import annotations

import logging
import time
from functools import cached_property
from pathlib import Path
from typing import Any

import psutil

from kafka_soak.infra.docker_engine import (
    INSTANCE_ROLE,
    container_name,
    docker_api,
    ensure_image,
    finished_at,
    keep_log,
    remove_run_containers,
    run_labels,
    tar_of,
)
from kafka_soak.infra.runtime.registry import ProcessRecord, Registry
from kafka_soak.infra.runtime.spawn import Restart
from kafka_soak.params import DOCKER_URL

log = logging.getLogger(__name__)


def host_start(pid: int, container_id: str) -> float:
    """The start time of a container's first process (``State.Pid``) when it is a process of this machine: its
    cgroup names the container. 0.0 for a remote engine's, whose PIDs mean other processes here."""
    try:
        if container_id not in Path(f"/proc/{pid}/cgroup").read_text():
            return 0.0
        return psutil.Process(pid).create_time()
    except (OSError, psutil.Error):
        return 0.0


class DockerContainers:
    """Named containers of one run, registered under ``<run_dir>/processes/`` like local processes."""

    def __init__(self, run_dir: Path, image: str, environment: dict[str, str] | None = None,
                 docker_url: str = DOCKER_URL, docker_conn_id: str | None = None, image_param: str = "app_image") -> None:
        self.run_dir = run_dir
        self.run_key = f"{run_dir.parent.name}.{run_dir.name}"
        self.image, self.environment, self.image_param = image, environment or {}, image_param
        self.docker_url, self.docker_conn_id = docker_url, docker_conn_id
        self.registry = Registry(run_dir)

    @cached_property
    def api(self) -> Any:
        return docker_api(self.docker_url, self.docker_conn_id)

    def record(self, name: str) -> ProcessRecord | None:
        return self.registry.record(name)

    def _state(self, name: str) -> dict[str, Any] | None:
        rec = self.record(name)
        if rec is None or not rec.container:
            return None
        from docker.errors import NotFound

        try:
            return self.api.inspect_container(rec.container)["State"]
        except NotFound:
            return None

    def is_alive(self, name: str) -> bool:
        state = self._state(name)
        return bool(state and state["Running"])

    def is_paused(self, name: str) -> bool:
        state = self._state(name)
        return bool(state and state["Paused"])

    def start(self, name: str, command: list[str], log_path: Path, step: str = "", extra_env: dict[str, str] | None = None,
              image: str | None = None, restart: Restart | None = None, remove_after: Path | None = None,
              files: dict[str, str] | None = None) -> ProcessRecord:
        """Replace the instance's previous container (its log was copied) by a new one of ``image`` (default: the
        runtime's; ``image_param`` chose both), running ``command``, with ``files`` (path inside the container:
        content, e.g. the app's properties file) put into it before it starts: they live in the container only and go
        with it. No restart
        policy here yet (param ``restart`` is refused for this runtime before a run starts), and no directory of
        the host to remove."""
        if restart is not None or remove_after is not None:
            raise ValueError("runtime 'docker' has no restart policy (param restart is for runtime 'local') and takes "
                             "its private files inside the container (files)")
        self.remove(name)
        image = image or self.image
        ensure_image(self.api, image, self.image_param)
        cname = container_name(self.run_key, name)
        container = self.api.create_container(
            image, command=command, name=cname, labels=run_labels(self.run_dir, name, INSTANCE_ROLE, step=step),
            environment={**self.environment, **(extra_env or {})}, detach=True,
            host_config=self.api.create_host_config(network_mode="host", init=True))
        if files:
            self.api.put_archive(container["Id"], "/", tar_of(files))
        self.api.start(container["Id"])
        state = self.api.inspect_container(container["Id"])["State"]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        rec = ProcessRecord(name, state.get("Pid") or 0, host_start(state.get("Pid") or 0, container["Id"]),
                            str(log_path), time.time(), container=container["Id"])
        self.registry.write(rec)
        log.info("started %s: container %s (%s, image %s), log %s", name, cname, container["Id"][:12], image,
                 log_path)
        return rec

    def copy_log(self, name: str) -> None:
        """Write the container's output so far to its log file in the run directory (overwrites: a full copy)."""
        rec = self.record(name)
        if rec is None or not rec.container:
            return
        from docker.errors import NotFound

        try:
            output = self.api.logs(rec.container, stdout=True, stderr=True, timestamps=False)
        except NotFound:
            return
        keep_log(Path(rec.log), output, name)

    def _exit_code(self, name: str) -> int | None:
        state = self._state(name)
        return None if state is None else state.get("ExitCode")

    def stop(self, name: str, timeout: float = 30.0) -> int | None:
        """Graceful stop (unpausing first): SIGTERM, SIGKILL after ``timeout``; returns the exit code."""
        if not self.is_alive(name):
            return None
        rec = self.record(name)
        if self.is_paused(name):
            self.api.unpause(rec.container)
        started = time.monotonic()
        self.api.stop(rec.container, timeout=int(timeout))
        code = self._exit_code(name)
        self.copy_log(name)
        how = "was killed after ignoring SIGTERM" if code == 137 else "stopped gracefully"
        log.info("%s (container %s) %s in %.1f s, exit code %s", name, rec.container[:12], how,
                 time.monotonic() - started, code)
        return code

    def kill(self, name: str) -> int | None:
        """SIGKILL to the container: no shutdown hook runs; returns the exit code."""
        if not self.is_alive(name):
            return None
        rec = self.record(name)
        self.api.kill(rec.container)
        self.api.wait(rec.container, timeout=30)
        code = self._exit_code(name)
        self.copy_log(name)
        log.info("killed %s (container %s), exit code %s", name, rec.container[:12], code)
        return code

    def pause(self, name: str) -> bool:
        """Freeze every process of the container (cgroup freezer); False when it is not alive."""
        return self._freeze(name, paused=True)

    def resume(self, name: str) -> bool:
        """Thaw the container; False when it is not alive."""
        return self._freeze(name, paused=False)

    def _freeze(self, name: str, paused: bool) -> bool:
        if not self.is_alive(name):
            return False
        (self.api.pause if paused else self.api.unpause)(self.record(name).container)
        log.info("%s %s", "paused" if paused else "resumed", name)
        return True

    def remove(self, name: str) -> None:
        """Remove the container registered as ``name`` after copying its log and recording how it ended."""
        rec = self.record(name)
        if rec is None or not rec.container:
            return
        from docker.errors import NotFound

        self.copy_log(name)
        state = self._state(name)
        if state is not None and not state["Running"]:
            self.registry.add_exit({"pid": rec.pid, "code": state.get("ExitCode"), "signal": None,
                                    "at": finished_at(state.get("FinishedAt", "")), "container": rec.container,
                                    "oom_killed": bool(state.get("OOMKilled"))})
        try:
            self.api.remove_container(rec.container, force=True)
        except NotFound:
            pass

    def names(self) -> list[str]:
        return self.registry.names(containers=True)

    def collect_logs(self) -> None:
        """Copy every container's output so far into its log file (a container keeps its output inside)."""
        for name in self.names():
            self.copy_log(name)

    def clean_up(self) -> list[str]:
        """Teardown: copy the logs of this run's containers and remove them all, and only them."""
        for name in self.names():
            self.remove(name)
        strays = remove_run_containers(self.api, self.run_dir, INSTANCE_ROLE)  # not registered (a task died mid-start): no log
        if strays:
            log.warning("removed containers of this run that were not registered: %s", strays)
        return strays
