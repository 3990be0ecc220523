"""The ``docker`` Kafka backend: a single-node KRaft Apache Kafka container per run.

Two listeners: ``PLAINTEXT`` published on a free loopback port of the Docker host for the run's clients
(advertised as ``127.0.0.1:<port>``), and ``INTERNAL`` on ``localhost:19092`` inside the container for the
broker's own tools (``kafka-configs`` for quotas). Topics are created with AdminClient, retention off. The
container is labelled with the run; release copies its log into the run directory and removes it.
"""

from __future__ import annotations

import logging
import socket
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends import broker_settings
from kafka_soak.backends import quotas as soak_quotas
from kafka_soak.infra import kafka_io
from kafka_soak.infra.cluster import Cluster, topic_names
from kafka_soak.infra.docker_engine import (
    BROKER_ROLE,
    container_name,
    docker_api,
    ensure_image,
    exec_in,
    keep_log,
    remove_run_containers,
    run_labels,
)
from kafka_soak.params import DOCKER_URL, KAFKA_IMAGE

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)

INTERNAL_BOOTSTRAP = "localhost:19092"
KAFKA_CONFIGS = "/opt/kafka/bin/kafka-configs.sh"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def broker_environment(port: int) -> dict[str, str]:
    """The apache/kafka image's settings for one combined broker+controller node (any ``KAFKA_*`` variable
    replaces the image's default server.properties, so all of them are given)."""
    return {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://:9092,INTERNAL://:19092,CONTROLLER://:9093",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port},INTERNAL://{INTERNAL_BOOTSTRAP}",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_LOG_RETENTION_MS": "-1",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    }


class DockerKafkaBackend:
    """One broker of the run's own in a container, gone with it at release."""

    name = "docker"
    shared, starts_brokers, broker_faults, data_survives_release = False, True, False, False
    network_faults = False

    def __init__(self, run_dir: Path, image: str = KAFKA_IMAGE, quotas: list[soak_quotas.Quota] | None = None,
                 docker_url: str = DOCKER_URL, docker_conn_id: str | None = None,
                 config: dict[str, Any] | None = None) -> None:
        self.run_dir, self.image, self.quotas = run_dir, image, quotas or []
        self.config = config or {}  # param broker_config, after the image's settings the run gives
        self.docker_url, self.docker_conn_id = docker_url, docker_conn_id

    @classmethod
    def from_plan(cls, plan: Plan, run_dir: Path) -> DockerKafkaBackend:
        return cls(run_dir, plan["kafka_image"], soak_quotas.from_params(plan["quotas"]), plan["docker_url"],
                   plan["docker_conn_id"] or None, plan.get("broker_config", {}))

    @classmethod
    def preflight(cls, plan: Plan) -> None:
        """The broker's image on the engine (param kafka_image)."""
        ensure_image(docker_api(plan["docker_url"], plan["docker_conn_id"] or None), plan["kafka_image"],
                     "kafka_image", "make kafka-image builds one from Kafka's jars")

    @cached_property
    def api(self) -> Any:
        return docker_api(self.docker_url, self.docker_conn_id)

    def container_spec(self, port: int) -> dict[str, Any]:
        """``create_container`` arguments of the run's broker."""
        return {"image": self.image, "name": container_name(f"{self.run_dir.parent.name}.{self.run_dir.name}", "kafka"),
                "environment": {**broker_environment(port), **broker_settings.as_environment(self.config)},
                "labels": run_labels(self.run_dir, "kafka", BROKER_ROLE), "ports": [9092], "detach": True}

    def provision(self, topics: dict[str, int], prefix: str, start_timeout: float = 120.0,
                  fixed: dict[str, str] | None = None) -> Cluster:
        """Start the broker, wait until it answers, create ``{role: partitions}`` topics (named by ``topic_names``),
        apply the quotas. On any failure the container is removed before the error is raised (a teardown does not run
        when its setup failed)."""
        ensure_image(self.api, self.image, "kafka_image")
        port = free_port()
        spec = self.container_spec(port)
        container = self.api.create_container(
            **spec, host_config=self.api.create_host_config(port_bindings={9092: ("127.0.0.1", port)}))["Id"]
        bootstrap = f"127.0.0.1:{port}"
        try:
            self.api.start(container)
            log.info("started Kafka %s as container %s (%s), bootstrap %s", self.image, spec["name"], container[:12],
                     bootstrap)
            kafka_io.wait_until_reachable(bootstrap, start_timeout)
            names = topic_names(topics, prefix, fixed, owned=True)
            kafka_io.create_topics(bootstrap, {names[role]: n for role, n in topics.items()}, replication_factor=1)
            log.info("created topics %s", names)
            applied = soak_quotas.apply(self.quotas, self.kafka_configs(container), INTERNAL_BOOTSTRAP)
        except Exception:
            self.copy_log(container)
            self.api.remove_container(container, force=True)
            raise
        return Cluster(self.name, bootstrap, names, container=container, quotas=applied)

    def quota_usage(self) -> list[dict]:
        """What the quotas did is measured on the ``local`` backend only (it reads its own brokers' JMX)."""
        return []

    def kafka_configs(self, container: str) -> soak_quotas.Runner:
        return lambda args: exec_in(self.api, container, [KAFKA_CONFIGS, *args])

    def copy_log(self, container: str) -> None:
        keep_log(self.run_dir / "logs" / "kafka-broker.log", self.api.logs(container, stdout=True, stderr=True),
                 "the broker")

    def release(self, cluster: Cluster | None) -> None:
        """Keep the broker's log, remove the container (its quotas go with it) and any other of the run's."""
        if cluster is not None and cluster.container:
            self.copy_log(cluster.container)
        removed = remove_run_containers(self.api, self.run_dir, BROKER_ROLE)
        log.info("removed the run's Kafka containers: %s", removed or "none left")
