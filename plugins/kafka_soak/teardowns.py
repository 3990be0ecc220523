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
from typing import Any

from kafka_soak import backends, health, kafka_connection
from kafka_soak.app.worker import CRASH_EXIT_CODE
from kafka_soak.backends import quota_meter
from kafka_soak.backends.cluster import Cluster
from kafka_soak.instances import Instances
from kafka_soak.load import Load
from kafka_soak.shared import rundir

log = logging.getLogger(__name__)


def cluster_on_file(run_dir: Path) -> Cluster | None:
    """What provision wrote, if it got that far (a teardown must work after a failed setup too)."""
    written = rundir.read_json(run_dir / rundir.CLUSTER)
    return Cluster(**written) if written else None


def stop_app(run_dir: Path, plan: dict[str, Any], cluster: dict[str, Any]) -> dict[str, int | None]:
    """Stop every instance gracefully and the generator; returns their exit codes. The quotas' measurement ends with
    the app (``quotas.json``); how the instances fared is judged (``health.json``). Nothing of the app starts again
    after this (``rundir.close_app``), whatever task of the run still runs."""
    rundir.close_app(run_dir)
    codes = Instances.for_run(run_dir, cluster, plan).stop_all()
    generator = Load(run_dir, cluster, plan).stop()
    log.info("stopped: %s", {**codes, **({"generator": generator} if generator is not None else {})}
             or "nothing was running")
    app_health = health.assess(run_dir, plan["health_allowance"],
                               crash_code=CRASH_EXIT_CODE if plan.get("crash_probability") else None)  # older plans: none
    rundir.write_json(run_dir / rundir.HEALTH, app_health)
    log.info("app health: %s", health.one_line(app_health))
    for incident in app_health["incidents"][:10]:
        log.warning("  %s", incident["what"])
    for usage in backends.create(plan, run_dir).quota_usage():
        log.info("%s", quota_meter.describe(usage))
    return codes


def release(run_dir: Path, plan: dict[str, Any]) -> None:
    """Stop the Kafka this run started (or give back what it used of an external one). The run directory is kept,
    with the secrets of a shared cluster's connection masked in every file (``kafka_connection.scrub``)."""
    cluster = cluster_on_file(run_dir)
    backends.create(plan, run_dir).release(cluster)
    rundir.journal(run_dir, backends.RELEASED, backend=plan["backend"])
    if cluster is not None and cluster.conn_id:
        try:
            secrets = kafka_connection.secret_values(kafka_connection.connection_config(cluster.conn_id))
        except kafka_connection.KafkaConnectionError as exc:
            log.error("could not mask the connection's secrets in the evidence: %s", exc)
            secrets = []
        for path in kafka_connection.scrub(run_dir, secrets):
            log.warning("masked the connection's secrets in %s (the app under test wrote them)", path)
    log.info("evidence kept in %s", run_dir)


def from_files(run_dir: Path, why: str) -> dict[str, int | None]:
    """Both teardowns of an attempt that did not run them, each as far as it got (one that fails is logged and does
    not stop the other), noted with ``why`` in its ``events.jsonl``. Returns the instances stopped, with exit codes."""
    plan = (rundir.read_json(run_dir / rundir.PARAMS) or {}).get("plan")
    cluster = rundir.read_json(run_dir / rundir.CLUSTER)
    stopped: dict[str, int | None] = {}
    if plan and cluster:
        try:
            stopped = stop_app(run_dir, plan, cluster)
        except Exception as exc:
            log.error("could not stop the app of %s: %s", run_dir, exc)
    if plan:
        try:
            release(run_dir, plan)
        except Exception as exc:
            log.error("could not release the Kafka of %s: %s", run_dir, exc)
    rundir.journal(run_dir, "torn-down", why=why, instances=sorted(stopped))
    return stopped
