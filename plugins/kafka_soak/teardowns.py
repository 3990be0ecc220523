"""A run's teardowns: stop the app (its instances and the generator, then judge how the instances fared) and
release the Kafka the run used (stop the brokers it started, remove its broker container, or give back the topics
and quotas of a shared cluster).

The DAG runs both whatever happened, a run marked failed by hand included. An attempt that ran neither (an
interrupted ``airflow dags test``, a DAG run cleared while it ran) has them run from what it wrote (``params.json``,
``cluster.json``) by whoever finds it: ``make soak`` when it is interrupted, the next run's reaper.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak import provision
from kafka_soak.backends import broker_matrix, quota_meter, registry
from kafka_soak.clients import health
from kafka_soak.clients.instances import Instances
from kafka_soak.clients.reference.worker import CRASH_EXIT_CODE
from kafka_soak.infra import connection, resource_sampler
from kafka_soak.infra.cluster import Cluster
from kafka_soak.load.process import Load
from kafka_soak.shared import rundir

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)


def cluster_on_file(run_dir: Path) -> Cluster | None:
    """What provision wrote, if it got that far (a teardown must work after a failed setup too)."""
    written = rundir.read_json(run_dir / rundir.CLUSTER)
    return Cluster(**written) if written else None


def stop_apps(run_dir: Path, plan: Plan, cluster: dict[str, Any]) -> Any:
    """Task ``stop_instances``: ``stop_app`` on the run's cluster, or on every cluster of a broker version matrix at
    once, whose app health over all clusters (``health.json`` in the run's directory) the run's report shows."""
    all_members = broker_matrix.members(run_dir, plan)
    codes = broker_matrix.each(all_members, lambda m: stop_app(m.dir, m.plan, m.cluster(cluster)))
    if all_members[0].name:
        healths = {m.name: rundir.read_json(m.dir / rundir.HEALTH) for m in all_members}
        rundir.write_json(run_dir / rundir.HEALTH, health.merge({k: v for k, v in healths.items() if v}))
    return broker_matrix.single_or_all(codes)


def stop_app(run_dir: Path, plan: Plan, cluster: dict[str, Any]) -> dict[str, int | None]:
    """Stop every instance gracefully and the generator; returns their exit codes. The quotas' measurement ends with
    the app (``quotas.json``); how the instances fared is judged (``health.json``). Nothing of the app starts again
    after this (``rundir.close_app``), whatever task of the run still runs."""
    rundir.close_app(run_dir)
    instances = Instances.for_run(run_dir, cluster, plan)
    codes = instances.stop_all()
    generator = Load(run_dir, cluster, plan).stop()
    log.info("stopped: %s", {**codes, **({"generator": generator} if generator is not None else {})}
             or "nothing was running")
    app_health = health.assess(run_dir, plan["health_allowance"],
                               crash_code=CRASH_EXIT_CODE if plan.get("crash_probability") else None,  # older plans: none
                               ready=health.at_work(instances.app.ready))
    rundir.write_json(run_dir / rundir.HEALTH, app_health)
    log.info("app health: %s", health.one_line(app_health))
    for incident in app_health["incidents"][:10]:
        log.warning("  %s", incident["what"])
    for usage in registry.create(plan, run_dir).quota_usage():
        log.info("%s", quota_meter.describe(usage))
    return codes


def release_all(run_dir: Path, plan: Plan) -> None:
    """Task ``release``: ``release`` the run's cluster, or every cluster of a broker version matrix at once."""
    all_members = broker_matrix.members(run_dir, plan)
    broker_matrix.each(all_members, lambda m: release(m.dir, m.plan))
    if all_members[0].name:
        rundir.journal(run_dir, provision.RELEASED, backend=plan["backend"])


def release(run_dir: Path, plan: Plan) -> None:
    """Stop the run's resource sampler and the Kafka this run started (or give back what it used of an external one).
    The run directory is kept, with the secrets of a shared cluster's connection and those written into the app's
    command or environment masked in every file (``connection.scrub``)."""
    cluster = cluster_on_file(run_dir)
    resource_sampler.stop(run_dir)
    registry.create(plan, run_dir).release(cluster)
    rundir.journal(run_dir, provision.RELEASED, backend=plan["backend"])
    secrets = connection.app_secrets(plan)
    if cluster is not None and cluster.conn_id:
        try:
            secrets += connection.secret_values(connection.connection_config(cluster.conn_id))
        except connection.KafkaConnectionError as exc:
            log.error("could not mask the connection's secrets in the evidence: %s", exc)
    for path in connection.scrub(run_dir, secrets) if secrets else []:
        log.warning("masked the connection's or the app's secrets in %s", path)
    log.info("evidence kept in %s", run_dir)


def from_files(run_dir: Path, why: str) -> dict[str, int | None]:
    """Both teardowns of an attempt that did not run them, each as far as it got (one that fails is logged and does
    not stop the other), noted with ``why`` in its ``events.jsonl``. Returns the instances stopped, with exit codes."""
    plan = (rundir.read_json(run_dir / rundir.PARAMS) or {}).get("plan")
    if plan:  # a plan written before it had program_s
        plan.setdefault("program_s", len(plan["program"]) * plan["interval_s"])
    stopped: dict[str, int | None] = {}
    for member in broker_matrix.members(run_dir, plan) if plan else []:
        cluster = rundir.read_json(member.dir / rundir.CLUSTER)
        if cluster:
            try:
                stopped.update({f"{name}@{member.name}" if member.name else name: code
                                for name, code in stop_app(member.dir, member.plan, cluster).items()})
            except Exception as exc:
                log.error("could not stop the app of %s: %s", member.dir, exc)
        try:
            release(member.dir, member.plan)
        except Exception as exc:
            log.error("could not release the Kafka of %s: %s", member.dir, exc)
    if plan and plan.get("kafka_versions"):
        rundir.journal(run_dir, provision.RELEASED, backend=plan["backend"])
    rundir.journal(run_dir, "torn-down", why=why, instances=sorted(stopped))
    return stopped
