"""A ``kafka`` Airflow connection, as every client of a run uses it: its client settings (``client_settings``), given
to this process's clients for a task step (``settings_in_env``) and to child processes in an environment variable
(``kafka_io.SETTINGS_ENV``), its secrets registered with Airflow's masker, and masked in what a run keeps (``scrub``).

The connection is the one apache-airflow-providers-apache-kafka defines: its extra is the confluent-kafka client
config (``bootstrap.servers`` plus SASL/SSL settings). The settings never leave the connection through this project's
XCom, logs or run files: every task looks them up here. One home for the backend ``external``, the tasks that start
clients (load, instances, drain, validate), the preflight and the report pages.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from kafka_soak.infra import kafka_io

if TYPE_CHECKING:
    from kafka_soak.infra.cluster import Cluster

SECRET_WORDS = ("password", "secret", "key", "token", "jaas", "credential")
# Our clients set these themselves; a connection made for a consumer may carry them.
NOT_SECURITY = ("bootstrap.servers", "group.id", "client.id", "transactional.id")
# An option of a JAAS config (sasl.jaas.config): name="value".
JAAS_OPTION = re.compile(r'([A-Za-z_][\w.]*)\s*=\s*"([^"]*)"')


class KafkaConnectionError(ValueError):
    """A kafka connection that cannot serve a soak run."""


def is_secret(key: str) -> bool:
    return any(word in key.lower() for word in SECRET_WORDS)


def secret_values(config: dict[str, Any]) -> list[str]:
    """Every form in which the connection's secrets can show up in a log: each secret setting's value, each line of
    a multi-line one (a PEM key printed line by line; not its BEGIN/END lines), the secret options of a JAAS
    config on their own (``password="..."``: a client that fails to log in quotes them), and each of these as a JSON
    string holds it (an app that prints its settings as JSON escapes quotes, backslashes and non-ASCII)."""
    return forms([str(value) for key, value in config.items() if is_secret(key) and value])


def forms(secrets: list[str]) -> list[str]:
    """Each secret and every form it can show up in: each line of a multi-line one, the secret options of a JAAS config
    on their own, and each of these as a JSON string holds it; the longest first (a line of a PEM key inside the
    whole key is masked with it)."""
    found: list[str] = []
    for text in secrets:
        found.append(text)
        lines = [line.strip() for line in text.splitlines()]
        found += [line for line in lines if len(lines) > 1 and line and not line.startswith("-----")]
        found += [option for name, option in JAAS_OPTION.findall(text) if is_secret(name) and option]
    escaped = [json.dumps(v, ensure_ascii=ascii)[1:-1] for v in found for ascii in (True, False)]
    return sorted(dict.fromkeys([*found, *escaped]), key=len, reverse=True)


# Values an option or variable named like a secret takes that are no secret: booleans, and a run's placeholders.
NOT_A_SECRET = re.compile(r"(?i)true|false|\{[a-z_:]+\}")
MIN_SECRET_CHARS = 4  # shorter values (a count, a flag) would mask every place they appear


def app_secrets(plan: dict[str, Any]) -> list[str]:
    """Secrets whoever deployed the app wrote into its command (a profile's, ``app_command``) or its containers'
    environment (``app_env``): the value of an option whose name says it is one (``--db-password=...``,
    ``--api-token ...``, ``-Dssl.key.password=...``) and of such a variable, in every form ``forms`` lists. They are
    masked wherever the connection's are: Airflow's task logs, the run's files at release, what the UI serves."""
    command = [*plan.get("app_profile", {}).get("command", []), *plan.get("app_command", [])]
    found = [value for key, value in plan.get("app_env", {}).items() if is_secret(key)]
    for n, part in enumerate(command):
        name, eq, value = part.partition("=")
        if not is_secret(name):
            continue
        if eq:
            found.append(value)
        elif name.startswith("-") and n + 1 < len(command):
            found.append(command[n + 1])
    return forms([v for v in found if len(v) >= MIN_SECRET_CHARS and not NOT_A_SECRET.fullmatch(v)])


def mask(secrets: list[str]) -> None:
    """Register ``secrets`` with Airflow's log masker for the rest of this task's process."""
    from airflow.sdk.log import mask_secret

    for secret in secrets:
        mask_secret(secret)


MASK = b"***"


def needles(secrets: list[str]) -> tuple[list[bytes], int]:
    """The secrets as bytes, longest first, and how many bytes a secret can straddle past a chunk's end."""
    found = sorted({s.encode() for s in secrets if s}, key=len, reverse=True)
    return found, max(map(len, found), default=1) - 1


def holds(path: Path, secrets: list[str], chunk: int = 1 << 20) -> bool:
    """Whether a file holds any of ``secrets`` (one straddling two chunks included)."""
    found, hold = needles(secrets)
    tail = b""
    with path.open("rb") as fh:
        while data := fh.read(chunk):
            data = tail + data
            if any(needle in data for needle in found):
                return True
            tail = data[len(data) - hold:] if hold else b""
    return False


def masked(stream: BinaryIO, secrets: list[str], chunk: int = 1 << 20) -> Iterator[bytes]:
    """``stream``'s bytes with every secret replaced by ``***`` (at each place the longest that matches), a chunk at a
    time, so a file of any size is masked in bounded memory. Only a match that starts where every secret would still
    fit in what was read is decided; the rest waits for the next chunk, so a secret straddling two chunks, or a longer
    secret that begins with a shorter one, is masked whole."""
    found, hold = needles(secrets)
    if not found:
        yield from iter(lambda: stream.read(chunk), b"")
        return
    pattern = re.compile(b"|".join(map(re.escape, found)))
    tail = b""
    while True:
        data = stream.read(chunk)
        buffer, final = tail + data, not data
        safe = len(buffer) if final else len(buffer) - hold
        out, pos = [], 0
        for match in pattern.finditer(buffer):
            if match.start() >= safe:
                break
            out += [buffer[pos:match.start()], MASK]
            pos = match.end()
        keep = max(pos, safe)
        out.append(buffer[pos:keep])
        yield b"".join(out)
        tail = buffer[keep:]
        if final:
            return


def scrub(run_dir: Path, secrets: list[str]) -> list[Path]:
    """Mask ``secrets`` in every file of a run directory, in place (the app under test writes its own logs and may
    print the settings it was given): what a run keeps holds no secret once it is released, whatever becomes of its
    connection (rotated, deleted) after. Returns the files that held one."""
    touched = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file() and not p.is_symlink()):
        if not holds(path, secrets):
            continue
        staging = path.with_name(f".{path.name}.scrub")
        with path.open("rb") as src, staging.open("wb") as dst:
            for part in masked(src, secrets):
                dst.write(part)
        staging.replace(path)
        touched.append(path)
    return touched


def connection_config(conn_id: str) -> dict[str, Any]:
    """The connection's client config, with its secret values registered with Airflow's log masker. They are
    registered without their setting's name: the masker would drop a value whose name is none of Airflow's
    sensitive words (``sasl.jaas.config``, ``ssl.key.pem``)."""
    from airflow.sdk import BaseHook

    try:
        conn = BaseHook.get_connection(conn_id)
    except Exception:
        raise KafkaConnectionError(f"param kafka_conn_id: there is no Airflow connection {conn_id!r}; create one of type "
                               "'kafka' whose extra holds the client config, e.g. "
                               '{"bootstrap.servers": "broker:9092", "security.protocol": "SASL_SSL", ...}') from None
    if conn.conn_type != "kafka":
        raise KafkaConnectionError(f"param kafka_conn_id: connection {conn_id!r} is of type {conn.conn_type!r}, "
                               "not 'kafka' (apache-airflow-providers-apache-kafka)")
    config = dict(conn.extra_dejson)
    mask(secret_values(config))
    if not config.get("bootstrap.servers"):
        raise KafkaConnectionError(f"param kafka_conn_id: connection {conn_id!r} has no 'bootstrap.servers' in its extra")
    return config


def client_settings(cluster: Cluster | dict[str, Any]) -> dict[str, Any]:
    """The security settings every client of this run needs (empty but on the external backend)."""
    conn_id = cluster.get("conn_id") if isinstance(cluster, dict) else cluster.conn_id
    if not conn_id:
        return {}
    return {k: v for k, v in connection_config(conn_id).items() if k not in NOT_SECURITY}


@contextmanager
def settings_in_env(settings: dict[str, Any]) -> Iterator[None]:
    """Make this process's own clients (``kafka_io``) use ``settings`` for the duration of a task step."""
    previous = os.environ.get(kafka_io.SETTINGS_ENV)
    os.environ.update(kafka_io.settings_env(settings))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(kafka_io.SETTINGS_ENV, None)
        else:
            os.environ[kafka_io.SETTINGS_ENV] = previous
