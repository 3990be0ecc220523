"""The ``external`` Kafka backend: an existing cluster, from an Airflow connection of type ``kafka``.

The connection (``infra.connection``: its settings, its secrets kept out of every file) is the one
apache-airflow-providers-apache-kafka defines. Topics carry the run in their names, so parallel runs never collide, and are
deleted at release unless param ``keep_topics`` is set, with the run's consumer groups (their committed offsets) and
the internal topics Kafka Streams made for them. Every group and application id of a run here is the run's own
(``run_plan.scoped_group``: ``<group_id>-<run scope>``), so release deletes only what the run made: a shared cluster
keeps nothing of a run, and loses nothing of anyone else's.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends import kafka_jars
from kafka_soak.backends import quotas as soak_quotas
from kafka_soak.infra import kafka_io
from kafka_soak.infra.cluster import Cluster, topic_names
from kafka_soak.infra.connection import KafkaConnectionError, client_settings, connection_config, settings_in_env
from kafka_soak.params import KAFKA_VERSION
from kafka_soak.shared import java_client

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)


class ExternalBackend:
    """A cluster someone else runs, reached through an Airflow connection."""

    name = "external"
    shared, starts_brokers, broker_faults, network_faults = True, False, False, False

    def __init__(self, run_dir: Path, conn_id: str, quotas: list[soak_quotas.Quota] | None = None,
                 keep_topics: bool = False, kafka_version: str = KAFKA_VERSION) -> None:
        self.run_dir, self.conn_id, self.quotas, self.keep_topics = run_dir, conn_id, quotas or [], keep_topics
        self.kafka_version = kafka_version
        self.data_survives_release = keep_topics

    @classmethod
    def from_plan(cls, plan: Plan, run_dir: Path) -> ExternalBackend:
        return cls(run_dir, plan["kafka_conn_id"], soak_quotas.from_params(plan["quotas"]), plan["keep_topics"],
                   plan["kafka_version"])

    @classmethod
    def preflight(cls, plan: Plan) -> None:
        """Kafka's jars where the run sets quotas (kafka-configs), and a connection whose settings the checker's Java
        client (Spark's Kafka source) can use too."""
        if plan["quotas"]:
            kafka_jars.resolve(plan["kafka_version"])
        try:
            java_client.java_settings(client_settings({"conn_id": plan["kafka_conn_id"]}))
        except java_client.UntranslatableSettings as exc:
            raise KafkaConnectionError(f"param kafka_conn_id: the settings {exc.names} of connection "
                                       f"{plan['kafka_conn_id']!r} cannot reach the checker, as Spark's Kafka source "
                                       f"is a Java client ({exc.reason})") from None

    @staticmethod
    def groups(cluster: Cluster) -> list[str]:
        """The consumer groups the run's apps used, each under the run's own name (``run_plan.scoped_group``): deleted
        at release."""
        return [s["app_id"] for s in cluster.subjects]

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
            try:  # a failed setup's teardowns may not run: what was made of it (some topics, no quota) goes now
                kafka_io.create_topics(bootstrap, {names[role]: n for role, n in topics.items()}, timeout=timeout)
                log.info("created topics on %s: %s", bootstrap, names)
                applied = (soak_quotas.apply(self.quotas, self.kafka_configs(settings), bootstrap,
                                             kafka_jars.STDIN_CONFIG)
                           if self.quotas else [])
            except Exception:
                left = {name: error for name, error in kafka_io.delete_topics(bootstrap, list(names.values())).items()
                        if "UNKNOWN_TOPIC" not in error}
                for name, error in left.items():
                    log.error("could not delete topic %s: %s; delete it by hand", name, error)
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
                log.info("keeping the run's topics and consumer groups (param keep_topics): %s, %s", names,
                         self.groups(cluster))
                return
            errors = kafka_io.delete_topics(cluster.bootstrap_servers, names)
            # after its topics: an instance stopped a moment ago has left its group (a killed one holds it until its
            # session times out, and Kafka removes the group once it is empty and its offsets are gone)
            groups = kafka_io.delete_groups(cluster.bootstrap_servers, self.groups(cluster))
        for name, error in errors.items():
            log.error("could not delete topic %s: %s; delete it by hand", name, error)
        for group, error in groups.items():
            log.error("could not delete consumer group %s: %s; delete it by hand (kafka-consumer-groups --delete)",
                      group, error)
