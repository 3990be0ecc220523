"""Kafka backends: where a run's topics live. ``local`` (default), ``docker`` and ``external``.

Each backend has ``provision(topics, prefix) -> Cluster`` (a setup) and ``release(cluster)`` (a teardown).
A backend that started the cluster itself also owns its faults: ``set_broker(n, up)`` for the program's
``bN-``/``bN+``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_soak import quotas as soak_quotas
from kafka_soak.backends.docker_kafka import DockerKafkaBackend
from kafka_soak.backends.external import ExternalBackend
from kafka_soak.backends.local_kafka import LocalKafkaBackend

Backend = LocalKafkaBackend | DockerKafkaBackend | ExternalBackend
NAMES = ("local", "docker", "external")


def create(plan: dict[str, Any], run_dir: Path) -> Backend:
    """The backend a run's plan asks for, configured from its params."""
    quotas = soak_quotas.from_params(plan["quotas"])
    if plan["backend"] == "docker":
        return DockerKafkaBackend(run_dir, plan["kafka_image"], quotas, plan["docker_url"],
                                  plan["docker_conn_id"] or None)
    if plan["backend"] == "external":
        return ExternalBackend(run_dir, plan["kafka_conn_id"], quotas, plan["keep_topics"], plan["kafka_version"])
    features = {} if plan["transaction_version"] is None else {"transaction.version": plan["transaction_version"]}
    return LocalKafkaBackend(run_dir, plan["brokers"], plan["kafka_version"], quotas, features)
