"""Kafka backends: where a run's topics live. ``embedded`` (default), ``docker`` and ``external``.

Each backend has ``provision(topics, prefix) -> Cluster`` (a setup) and ``release(cluster)`` (a teardown),
plus what ``params.check`` needs before anything starts: ``partition_capacity_bytes`` (None = no limit a
run must fit in) and ``limitations`` (guarantees the backend does not provide; they go into the verdict).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_soak import quotas as soak_quotas
from kafka_soak.backends.docker_kafka import DockerKafkaBackend
from kafka_soak.backends.embedded import EmbeddedBackend
from kafka_soak.backends.external import ExternalBackend

BACKENDS: dict[str, type] = {"embedded": EmbeddedBackend, "docker": DockerKafkaBackend, "external": ExternalBackend}


def create(plan: dict[str, Any], run_dir: Path) -> EmbeddedBackend | DockerKafkaBackend | ExternalBackend:
    """The backend a run's plan asks for, configured from its params."""
    quotas = soak_quotas.from_params(plan["quotas"])
    docker = {"docker_url": plan["docker_url"], "docker_conn_id": plan["docker_conn_id"] or None}
    if plan["backend"] == "docker":
        return DockerKafkaBackend(run_dir, plan["kafka_image"], quotas, **docker)
    if plan["backend"] == "external":
        return ExternalBackend(run_dir, plan["kafka_conn_id"], quotas, plan["keep_topics"], plan["kafka_image"],
                               **docker)
    return EmbeddedBackend(run_dir, brokers=plan["brokers"])
