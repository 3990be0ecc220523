"""What a run needs from outside before anything starts: Apache Kafka's jars of ``kafka_version``, the Kafka Streams
app built against ``streams_version``, Spark's Kafka source for the checker, the external cluster's connection (with
settings the checker's Java client can use too), and the images of the Docker runtime and backend on the engine.
Checked by ``check_params`` and by ``make soak`` itself, so a run that cannot start is refused with one line, before
any broker, topic or container exists."""

from __future__ import annotations

from kafka_soak import java_client, spark_kafka
from kafka_soak import subjects as run_subjects
from kafka_soak.app import streams
from kafka_soak.backends.external import KafkaConnectionError, client_settings
from kafka_soak.backends.kafka_jars import resolve
from kafka_soak.maven import BuildError
from kafka_soak.params import RunPlan
from kafka_soak.profile import VERSION, render
from kafka_soak.runtime.docker import DockerRuntimeError, docker_api, ensure_image

ERRORS = (BuildError, KafkaConnectionError, DockerRuntimeError)


def check(plan: RunPlan) -> None:
    """Raise one of ``ERRORS`` naming the param when something the plan needs is not there."""
    if plan.backend == "local" or (plan.backend == "external" and plan.quotas):
        resolve(plan.kafka_version)  # fetched now (cached after), so a version nobody serves is refused here
    app = run_subjects.profile(plan.as_dict())
    if app.build == "streams":
        for version in app.versions:
            streams.build(version)  # built now (cached after), timed in the log
    spark_kafka.resolve()
    if plan.backend == "external":
        try:
            java_client.java_settings(client_settings({"conn_id": plan.kafka_conn_id}))
        except java_client.UntranslatableSettings as exc:
            raise KafkaConnectionError(f"param kafka_conn_id: the settings {exc.names} of connection "
                                       f"{plan.kafka_conn_id!r} cannot reach the checker, as Spark's Kafka source "
                                       f"is a Java client ({exc.reason})") from None
    images = app_images(plan) if plan.runtime == "docker" else []
    if plan.backend == "docker":
        images.append((plan.kafka_image, "kafka_image", "make kafka-image builds one from Kafka's jars"))
    if images:
        api = docker_api(plan.docker_url, plan.docker_conn_id or None)
        for image, param, hint in images:
            ensure_image(api, image, param, hint)


def app_images(plan: RunPlan) -> list[tuple[str, str, str]]:
    """The images runtime=docker starts the app from: (image, what chose it, how to build it)."""
    app = run_subjects.profile(plan.as_dict())
    return [(app.image_of(version), app.image_param, render(app.image_hint, {VERSION: version}, {}))
            for version in app.versions]
