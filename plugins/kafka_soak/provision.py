"""The ``provision`` task's work: the backend the plan asks for (``backends.registry``) provisions the run's topics,
each cluster of a broker version matrix at once, and the attempt's events say whether its Kafka was given back."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends import broker_matrix
from kafka_soak.backends.local_kafka import cluster_features
from kafka_soak.backends.registry import create
from kafka_soak.clients import subjects
from kafka_soak.faults import program as programs
from kafka_soak.faults.kinds import upgrade
from kafka_soak.infra import resource_sampler
from kafka_soak.infra.cluster import Cluster, topic_prefix
from kafka_soak.infra.connection import client_settings
from kafka_soak.shared import rundir

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)


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
    backend = create(plan, run_dir)
    if not backend.data_survives_release and released(run_dir):
        raise AttemptReleased(f"attempt {run_dir.name} was released and its Kafka data went with it (backend "
                              f"{plan['backend']}); clear the whole DAG run to run it again as a new attempt")
    rundir.reopen_app(run_dir)  # its teardowns ran before if this is a task cleared on its own: it runs again
    resource_sampler.start(run_dir, plan["sample_interval_s"])  # from the brokers' start on, until release
    try:
        cluster = backend.provision(subjects.topics(plan), topic_prefix(dag_id, run_dir.name),
                                    fixed=subjects.app_names(plan))
    except Exception:
        resource_sampler.stop(run_dir)  # a failed setup's teardowns may not run: stop what it started
        raise
    try:
        if plan.get("group_protocol", "classic") != "classic":
            require_group_protocol(cluster, plan["kafka_version"], plan["group_protocol"])
        if not cluster.features and upgrade.BROKERS in dict(programs.kinds_in(plan["program"])):
            # what a rolling upgrade keeps: the cluster's metadata.version and features stay as formatted (Kafka's own
            # upgrade tests once ran transactions v2 on v0 unnoticed: the evidence says what the cluster finalized)
            cluster.features = cluster_features(plan["kafka_version"], cluster.bootstrap_servers)
            log.info("the cluster finalized %s", cluster.features)
    except Exception:
        backend.release(cluster)  # a failed setup's teardowns may not run: give back what it made
        resource_sampler.stop(run_dir)
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
