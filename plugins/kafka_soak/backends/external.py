"""The ``external`` Kafka backend: an existing cluster, from an Airflow connection of type ``kafka``.

The connection is the one apache-airflow-providers-apache-kafka defines: its extra is the confluent-kafka
client config (``bootstrap.servers`` plus SASL/SSL settings). Those settings never leave the connection
through this project's XCom, logs or run files: every task looks them up (``client_settings``), registers
the secret ones with Airflow's masker, and hands them to child processes in an environment variable
(``kafka_io.SETTINGS_ENV``). Topics carry the run in their names, so parallel runs never collide, and are
deleted at release unless param ``keep_topics`` is set, with the consumer groups of the suite's own apps (their
committed offsets): a shared cluster keeps nothing of a run. A team's app keeps its group, which is its own.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from kafka_soak import java_client, kafka_io
from kafka_soak import quotas as soak_quotas
from kafka_soak.backends import kafka_jars
from kafka_soak.backends.cluster import Cluster, topic_names

log = logging.getLogger(__name__)

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
    found: list[str] = []
    for key, value in config.items():
        if not (is_secret(key) and value):
            continue
        text = str(value)
        found.append(text)
        lines = [line.strip() for line in text.splitlines()]
        found += [line for line in lines if len(lines) > 1 and line and not line.startswith("-----")]
        found += [option for name, option in JAAS_OPTION.findall(text) if is_secret(name) and option]
    escaped = [json.dumps(v, ensure_ascii=ascii)[1:-1] for v in found for ascii in (True, False)]
    return sorted(dict.fromkeys([*found, *escaped]), key=len, reverse=True)  # the longest first: a line of a PEM key
    # inside the whole key is masked with it


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
    from airflow.sdk.log import mask_secret

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
    for secret in secret_values(config):
        mask_secret(secret)
    if not config.get("bootstrap.servers"):
        raise KafkaConnectionError(f"param kafka_conn_id: connection {conn_id!r} has no 'bootstrap.servers' in its extra")
    return config


def client_settings(cluster: Cluster | dict[str, Any]) -> dict[str, Any]:
    """The security settings every client of this run needs (empty but on the external backend)."""
    conn_id = cluster.conn_id if isinstance(cluster, Cluster) else cluster.get("conn_id")
    if not conn_id:
        return {}
    return {k: v for k, v in connection_config(conn_id).items() if k not in NOT_SECURITY}


@contextmanager
def settings_in_env(settings: dict[str, Any]) -> Iterator[None]:
    """Make this process's own clients (``kafka_io``) use ``settings`` for the duration of a task step."""
    import os

    previous = os.environ.get(kafka_io.SETTINGS_ENV)
    os.environ.update(kafka_io.settings_env(settings))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(kafka_io.SETTINGS_ENV, None)
        else:
            os.environ[kafka_io.SETTINGS_ENV] = previous


class ExternalBackend:
    name = "external"

    def __init__(self, run_dir: Path, conn_id: str, quotas: list[soak_quotas.Quota] | None = None,
                 keep_topics: bool = False, kafka_version: str = kafka_jars.DEFAULT_VERSION,
                 groups: list[str] | None = None) -> None:
        """``groups``: the consumer groups the run's apps use under names the suite gave them, deleted at release."""
        self.run_dir, self.conn_id, self.quotas, self.keep_topics = run_dir, conn_id, quotas or [], keep_topics
        self.kafka_version, self.groups = kafka_version, groups or []

    def kafka_configs(self, settings: dict[str, Any]) -> soak_quotas.Runner:
        """kafka-configs from the project's Kafka jars; the connection's client properties reach it on its
        standard input (``--command-config /dev/stdin``): in no file and on no command line."""
        try:
            props = java_client.tool_config(settings)
        except java_client.UntranslatableSettings as exc:
            raise soak_quotas.QuotaError(f"cannot pass the connection's settings {exc.names} to kafka-configs "
                                         f"(Kafka's Java tool; {exc.reason}): set the quotas on the cluster "
                                         "yourself, or remove param quotas") from None

        def run(args: list[str]) -> str:
            return kafka_jars.run_tool(self.kafka_version, kafka_jars.CONFIG_COMMAND, args, stdin=props)
        return run

    def quota_usage(self) -> list[dict]:
        """What the quotas did is measured on the ``local`` backend only (it reads its own brokers' JMX)."""
        return []

    def provision(self, topics: dict[str, int], prefix: str, timeout: float = 60.0,
                  fixed: dict[str, str] | None = None) -> Cluster:
        """Create the run's topics on the cluster (scoped to the run by ``topic_names``) and apply the quotas; on failure,
        delete what was created."""
        settings = client_settings({"conn_id": self.conn_id})
        bootstrap = connection_config(self.conn_id)["bootstrap.servers"]
        names = topic_names(topics, prefix, fixed, owned=False)
        with settings_in_env(settings):
            kafka_io.create_topics(bootstrap, {names[role]: n for role, n in topics.items()}, timeout=timeout)
            log.info("created topics on %s: %s", bootstrap, names)
            try:
                applied = (soak_quotas.apply(self.quotas, self.kafka_configs(settings), bootstrap,
                                             kafka_jars.STDIN_CONFIG)
                           if self.quotas else [])
            except Exception:
                kafka_io.delete_topics(bootstrap, list(names.values()))
                raise
        return Cluster(self.name, bootstrap, names, conn_id=self.conn_id, quotas=applied)

    def release(self, cluster: Cluster | None) -> None:
        if cluster is None:
            return
        settings = client_settings(cluster)
        with settings_in_env(settings):
            if cluster.quotas:
                soak_quotas.restore(cluster.quotas, self.kafka_configs(settings), cluster.bootstrap_servers,
                                    kafka_jars.STDIN_CONFIG)
            # Kafka Streams' own changelogs too (of a profile's app, which may be one): a later run with the same
            # application id would restore them.
            streams_apps = [s["app_id"] for s in cluster.subjects if s.get("version") or s.get("outputs")]
            names = sorted(cluster.topics.values()) + kafka_io.internal_topics(cluster.bootstrap_servers, streams_apps)
            if self.keep_topics:
                log.info("keeping the run's topics and consumer groups (param keep_topics): %s, %s", names, self.groups)
                return
            errors = kafka_io.delete_topics(cluster.bootstrap_servers, names)
            # after its topics: an instance stopped a moment ago has left its group (a killed one holds it until its
            # session times out, and Kafka removes the group once it is empty and its offsets are gone)
            groups = kafka_io.delete_groups(cluster.bootstrap_servers, self.groups)
        for name, error in errors.items():
            log.error("could not delete topic %s: %s; delete it by hand", name, error)
        for group, error in groups.items():
            log.error("could not delete consumer group %s: %s; delete it by hand (kafka-consumer-groups --delete)",
                      group, error)
