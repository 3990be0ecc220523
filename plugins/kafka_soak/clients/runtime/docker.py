"""The Docker runtime: app instances as containers, through the docker provider's ``DockerHook``.

Each start of instance *n* creates a fresh container ``soak-<dag>-<run>-instance-<n>`` labelled with DAG,
run, instance and program step, so every container of a run can be found (and only those) at teardown.
Toggling stops it gracefully (``docker stop``: SIGTERM, SIGKILL after the timeout), ``k`` kills it, ``p``/``r``
pause and unpause it (the freezer cgroup, like SIGSTOP for every process in it). Containers use the host
network so that a broker on loopback is reachable. A container's output is copied to its per-step log in
the run directory after every program step and when it ends; the container itself is removed only when its
instance is started again or at teardown, after its log was copied.
"""

from __future__ import annotations

import io
import logging
import re
import tarfile
import time
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from kafka_soak.clients.runtime import ProcessRecord, Registry
from kafka_soak.clients.runtime.spawn import Restart
from kafka_soak.params import DOCKER_URL

log = logging.getLogger(__name__)

LABEL = "io.kafka-soak"


class DockerRuntimeError(RuntimeError):
    pass


def tar_of(files: dict[str, str]) -> bytes:
    """``{absolute path: text}`` as a tar archive to unpack at ``/`` (their folders included), readable by any user of
    the container (the image's user is not known here; nothing outside the container sees them)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        folders = sorted({parent for path in files for parent in PurePosixPath(path).parents if str(parent) != "/"})
        for folder in folders:
            entry = tarfile.TarInfo(str(folder).lstrip("/"))
            entry.type, entry.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(entry)
        for path, text in files.items():
            data = text.encode()
            entry = tarfile.TarInfo(path.lstrip("/"))
            entry.size, entry.mode = len(data), 0o644
            tar.addfile(entry, io.BytesIO(data))
    return buffer.getvalue()


def container_name(run_key: str, name: str) -> str:
    """Docker names allow ``[a-zA-Z0-9][a-zA-Z0-9_.-]``; run ids carry ``:`` and ``+``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"soak-{run_key}-{name}")[:200]


INSTANCE_ROLE = "instance"
BROKER_ROLE = "broker"


def run_labels(run_dir: Path, name: str, role: str, **extra: str) -> dict[str, str]:
    """Labels that find a run's containers (and only those): DAG id and run id, as in the run directory, and the
    role (instance or broker): the runtime and the backend each remove only their own."""
    return {LABEL: "1", f"{LABEL}.dag": run_dir.parent.name, f"{LABEL}.run": run_dir.name, f"{LABEL}.name": name,
            f"{LABEL}.role": role, **{f"{LABEL}.{k}": v for k, v in extra.items()}}


def run_filter(run_dir: Path, role: str | None = None) -> dict[str, list[str]]:
    labels = [f"{LABEL}.dag={run_dir.parent.name}", f"{LABEL}.run={run_dir.name}"]
    return {"label": labels + ([f"{LABEL}.role={role}"] if role else [])}


TLS_FILES = ("tls_ca_cert", "tls_client_cert", "tls_client_key")


def docker_api(docker_url: str, docker_conn_id: str | None) -> Any:
    """The low-level ``docker.APIClient`` of the docker provider's hook for the engine at ``docker_url``. The
    ``docker`` connection ``docker_conn_id`` logs in to its registry (host, login, password) and, for an engine
    that is not on this machine, gives the TLS files in its extra (``tls_ca_cert``, ``tls_client_cert``,
    ``tls_client_key``): a remote engine is never spoken to in the clear."""
    from airflow.providers.docker.hooks.docker import DockerHook

    tls = engine_tls(docker_url, docker_conn_id)
    try:
        return DockerHook(docker_conn_id=docker_conn_id, base_url=docker_url, version="auto", tls=tls).api_client
    except Exception as exc:
        raise DockerRuntimeError(f"cannot reach the Docker engine at {docker_url} (param docker_url): {exc}") from None


def engine_tls(docker_url: str, docker_conn_id: str | None) -> Any:
    """The TLS settings for ``docker_url`` (None: a local socket or a loopback port), or a refusal."""
    from urllib.parse import urlsplit

    url = urlsplit(docker_url)
    if url.scheme in ("unix", "npipe") or url.hostname in ("127.0.0.1", "localhost", "::1"):
        return None
    need = (f"docker_url: the Docker engine {docker_url} is not on this machine, so it is reached with TLS only; "
            f"set docker_conn_id to an Airflow docker connection whose extra gives {', '.join(TLS_FILES)} (paths)")
    if not docker_conn_id:
        raise DockerRuntimeError(need)
    from airflow.providers.docker.hooks.docker import DockerHook
    from airflow.sdk import BaseHook

    try:
        extra = BaseHook.get_connection(docker_conn_id).extra_dejson
    except Exception as exc:
        raise DockerRuntimeError(f"docker_conn_id: cannot read Airflow connection {docker_conn_id!r}: {exc}") from None
    missing = [name for name in TLS_FILES if not extra.get(name)]
    if missing:
        raise DockerRuntimeError(f"{need} (connection {docker_conn_id!r} lacks {', '.join(missing)})")
    return DockerHook.construct_tls_config(ca_cert=extra["tls_ca_cert"], client_cert=extra["tls_client_cert"],
                                           client_key=extra["tls_client_key"], verify=True)


def ensure_image(api: Any, image: str, param: str, hint: str = "") -> None:
    """Fail with the image's name (the param that chose it, and ``hint``: how to build it) when the engine has it
    not and cannot pull it."""
    from docker.errors import APIError, ImageNotFound

    try:
        api.inspect_image(image)
        return
    except ImageNotFound:
        pass
    log.info("pulling %s", image)
    try:
        api.pull(image)
    except APIError as exc:
        raise DockerRuntimeError(f"image {image!r} (param {param}) is not on the Docker engine and cannot be pulled: "
                                 f"{exc.explanation or exc}" + (f"; {hint}" if hint else "")) from None


def exec_in(api: Any, container: str, command: list[str]) -> str:
    """Run ``command`` inside a running container; return its output, raise on a non-zero exit."""
    exec_id = api.exec_create(container, command)["Id"]
    output = api.exec_start(exec_id).decode(errors="replace")
    code = api.exec_inspect(exec_id)["ExitCode"]
    if code != 0:
        raise DockerRuntimeError(f"{' '.join(command[:3])} exited with {code}: {output.strip()[-2000:]}")
    return output


def keep_log(path: Path, output: bytes, whose: str) -> None:
    """Write a container's output to its log in the run directory; a disk that refuses it (full, read-only) is
    logged, not raised, so a teardown still removes the container whose log it could not keep."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(output)
    except OSError as exc:
        log.error("could not keep the log of %s in %s (%s); the container goes all the same", whose, path, exc)


def remove_run_containers(api: Any, run_dir: Path, role: str) -> list[str]:
    """Every container labelled with this run and ``role``, whatever its state; returns their names."""
    removed = []
    for container in api.containers(all=True, filters=run_filter(run_dir, role)):
        api.remove_container(container["Id"], force=True)
        removed.append(container["Names"][0].lstrip("/"))
    return removed


def finished_at(stamp: str) -> float:
    """Docker's ``FinishedAt`` (RFC 3339 with nanoseconds) as epoch seconds."""
    import datetime as dt

    head, _, rest = stamp.rstrip("Z").partition(".")
    try:
        return dt.datetime.fromisoformat(head).replace(tzinfo=dt.UTC).timestamp() + float(f"0.{rest[:6] or 0}")
    except ValueError:
        return time.time()


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
        policy here yet (param ``restart`` is refused for this runtime before a run starts), and no file of the host
        to remove."""
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
        rec = ProcessRecord(name, state.get("Pid") or 0, 0.0, str(log_path), time.time(), container=container["Id"])
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
