"""The ``provision`` task's work: the backend a plan asks for, where a run's topics live (``local``, the default;
``docker``; ``external``), each cluster of a broker version matrix provisioned, and whether an attempt's Kafka was
given back.

Each backend has ``provision(topics, prefix) -> Cluster`` (a setup) and ``release(cluster)`` (a teardown).
A backend that started the cluster itself also owns its faults: ``set_broker(n, up)`` for the program's
``bN-``/``bN+``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends import broker_matrix
from kafka_soak.backends import quotas as soak_quotas
from kafka_soak.backends.cluster import Cluster, topic_prefix
from kafka_soak.backends.connection import client_settings
from kafka_soak.backends.docker_kafka import DockerKafkaBackend
from kafka_soak.backends.external import ExternalBackend
from kafka_soak.backends.local_kafka import LocalKafkaBackend, cluster_features
from kafka_soak.clients import subjects
from kafka_soak.faults import program as programs
from kafka_soak.shared import rundir

if TYPE_CHECKING:  # the plan's type only: run_plan imports the implementations
    from kafka_soak.run_plan import Plan

Backend = LocalKafkaBackend | DockerKafkaBackend | ExternalBackend
# A run whose program lasts up to this long starts its local brokers with C1 alone: over a short run a broker's C2
# compilations are about 40 % of its CPU (docs/benchmarks.md: "The broker's JIT over a short run"); a long soak keeps
# the JVM's default.
SHORT_RUN_S = 300


def create(plan: Plan, run_dir: Path) -> Backend:
    """The backend a run's plan asks for, configured from its params."""
    quotas = soak_quotas.from_params(plan["quotas"])
    if plan["backend"] == "docker":
        return DockerKafkaBackend(run_dir, plan["kafka_image"], quotas, plan["docker_url"],
                                  plan["docker_conn_id"] or None)
    if plan["backend"] == "external":
        # every group of a run on a shared cluster is the run's own (run_plan.scoped_group), a team's app's too
        return ExternalBackend(run_dir, plan["kafka_conn_id"], quotas, plan["keep_topics"], plan["kafka_version"],
                               subjects.app_ids(plan))
    features = {} if plan["transaction_version"] is None else {"transaction.version": plan["transaction_version"]}
    short = programs.duration_s(plan["program"], plan["interval_s"]) <= SHORT_RUN_S
    return LocalKafkaBackend(run_dir, plan["brokers"], plan["kafka_version"], quotas, features, short_lived=short)


class AttemptReleased(RuntimeError):
    """Provision asked again of an attempt whose Kafka data went with its release."""


def provision_run(run_dir: Path, plan: Plan, dag_id: str) -> dict[str, Any]:
    """Task ``provision``: the run's cluster (``provision_cluster``), or each cluster of a broker version matrix, all
    at once, as ``{"members": {release: cluster}}``. A matrix whose cluster failed gives back the others it started."""
    all_members = broker_matrix.members(run_dir, plan)
    for member in all_members:
        member.dir.mkdir(parents=True, exist_ok=True)
    try:
        clusters = broker_matrix.each(all_members, lambda m: provision_cluster(m.dir, m.plan, dag_id))
    except broker_matrix.MemberFailed as exc:  # a failed setup's teardowns may not run: give back what it made
        for m in all_members:
            if m.name in exc.results:
                create(m.plan, m.dir).release(Cluster(**exc.results[m.name]))
                rundir.journal(m.dir, RELEASED, backend=m.plan["backend"])
        raise
    if all_members[0].name:
        rundir.journal(run_dir, PROVISIONED, backend=plan["backend"], kafka_versions=list(clusters))
        return {"members": clusters}
    return clusters[""]


def provision_cluster(run_dir: Path, plan: Plan, dag_id: str) -> dict[str, Any]:
    """One cluster, in the attempt ``check_params`` opened: start the run's Kafka (or reach the external one),
    create its topics (scoped to the attempt), set its quotas, record the apps under test (``cluster.json``). A task
    cleared on its own runs again in that attempt (Airflow clears its setup and teardowns with it): the ``local``
    brokers start again on their data, so ``validate`` judges the attempt's evidence again. An attempt released on
    ``docker`` or on a shared cluster has no data left (the container is gone; the topics were deleted unless
    ``keep_topics``): that is refused, saying to clear the whole DAG run instead."""
    gone = plan["backend"] == "docker" or (plan["backend"] == "external" and not plan["keep_topics"])
    if gone and released(run_dir):
        raise AttemptReleased(f"attempt {run_dir.name} was released and its Kafka data went with it (backend "
                              f"{plan['backend']}); clear the whole DAG run to run it again as a new attempt")
    rundir.reopen_app(run_dir)  # its teardowns ran before if this is a task cleared on its own: it runs again
    backend = create(plan, run_dir)
    cluster = backend.provision(subjects.topics(plan), topic_prefix(dag_id, run_dir.name), fixed=subjects.app_names(plan))
    if plan.get("group_protocol", "classic") != "classic":
        try:
            require_group_protocol(cluster, plan["kafka_version"], plan["group_protocol"])
        except Exception:
            backend.release(cluster)  # a failed setup's teardowns may not run: give back what it made
            raise
    cluster.subjects = [s.as_dict() for s in subjects.build(plan, cluster.topics)]
    rundir.write_json(run_dir / rundir.CLUSTER, cluster.as_dict())
    rundir.journal(run_dir, PROVISIONED, backend=plan["backend"])
    return cluster.as_dict()


class FeatureMissing(RuntimeError):
    """The cluster lacks a feature a param needs."""


# The broker feature each rebalance protocol needs, the KIP that brought it and the release that finalizes it by default.
PROTOCOL_FEATURES = {"consumer": ("group.version", "KIP-848", "4.0"), "streams": ("streams.version", "KIP-1071", "4.2")}


def require_group_protocol(cluster: Cluster, kafka_version: str, protocol: str) -> int:
    """Param group_protocol ``consumer`` or ``streams`` needs its feature finalized at 1 or more on the cluster, which any
    backend's cluster is asked with Kafka's ``kafka-features describe`` (a secured cluster's settings on its standard
    input); returns the level."""
    feature, kip, since = PROTOCOL_FEATURES[protocol]
    level = cluster_features(kafka_version, cluster.bootstrap_servers, client_settings(cluster)).get(feature, 0)
    if level < 1:
        raise FeatureMissing(f"group_protocol: {protocol!r} needs the cluster's {feature} feature at 1 or more ({kip}; "
                             f"brokers of Apache Kafka {since} or later finalize it by default); the {cluster.backend} "
                             f"cluster at {cluster.bootstrap_servers} has {level}: use group_protocol 'classic', or "
                             f"upgrade the feature (kafka-features upgrade --feature {feature}=1)")
    return level


PROVISIONED, RELEASED = "provisioned", "released"  # events.jsonl: an attempt's Kafka set up, and given back


def released(run_dir: Path) -> bool:
    """Whether the attempt's Kafka was given back after it was last provisioned."""
    return last_kafka_event(run_dir) == RELEASED


def unreleased(run_dir: Path) -> bool:
    """Whether the attempt provisioned a Kafka and never gave it back (its teardowns did not run)."""
    return last_kafka_event(run_dir) == PROVISIONED


def last_kafka_event(run_dir: Path) -> str:
    """The attempt's last ``provisioned`` or ``released`` event ("" before either, and in runs older than both)."""
    return next((e["event"] for e in reversed(rundir.read_jsonl(run_dir / rundir.EVENTS))
                 if e.get("event") in (PROVISIONED, RELEASED)), "")
