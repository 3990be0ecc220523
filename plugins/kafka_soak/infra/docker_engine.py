"""The Docker engine as the suite reaches it (through the docker provider's ``DockerHook`` when a connection is given):
the API client, the run's labels and container names, images, commands in a container, and a run's containers removed.
The Docker runtime (``docker.py``) and the ``docker`` Kafka backend both use it."""

from __future__ import annotations

import io
import logging
import re
import tarfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

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
