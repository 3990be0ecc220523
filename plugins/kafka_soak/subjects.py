"""The apps under test of one run: one, or one per Kafka Streams version of a matrix (param ``streams_versions``).

A matrix runs its versions side by side on the same broker, fed by the same input topic and toggled by the same
program step at the same moment: every version sees exactly the same load and the same program timing, so a
difference in the verdicts is the versions' own. (Running them one after the other would take N times as long
and give each version a different load and timing.) Each subject has its own application id (so its own
consumer group, changelogs and transactional ids), its own output and assertion topics, its own instances
(``instance-<n>@<version>``) and its own verdict.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kafka_soak.app import streams

REFERENCE_IMAGE = "kafka-soak-worker:latest"  # make worker-image


@dataclass(frozen=True)
class Subject:
    name: str  # "" for a run's only app; the Kafka Streams version in a matrix
    app_id: str  # application.id / group.id
    version: str  # the Kafka Streams version it runs (app=streams), else ""
    output: str  # topic
    assertions: str  # topic

    def process(self, instance: int) -> str:
        """Its instance's name in the run's process registry."""
        return f"instance-{instance}" + (f"@{self.name}" if self.name else "")

    def label(self, instance: int) -> str:
        return f"instance {instance}" + (f" @{self.name}" if self.name else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def matrix(plan: dict[str, Any]) -> list[str]:
    """The versions a run compares; empty when it judges one app."""
    return list(plan["streams_versions"]) if plan["app"] == "streams" and not plan["app_command"] else []


def versions(plan: dict[str, Any]) -> list[str]:
    """The Kafka Streams versions a run's subjects run: a matrix's, the one of app=streams, or ``[""]`` when the app
    under test is not the Kafka Streams app."""
    if plan["app"] != "streams" or plan["app_command"]:
        return [""]
    return matrix(plan) or [plan["streams_version"]]


def image(version: str, app_image: str) -> tuple[str, str, str]:
    """The container image a subject's instances start from on runtime=docker: (image, the param that chose it,
    how to build it)."""
    if app_image:
        return app_image, "app_image", ""
    if version:
        return streams.image(version), "streams_version", f"build it with: make streams-image STREAMS_VERSION={version}"
    return REFERENCE_IMAGE, "app_image", "build it with: make worker-image"


def topics(plan: dict[str, Any]) -> dict[str, int]:
    """The run's topics by role, with their partitions: one output and assertion topic per subject."""
    parts = plan["partitions"]
    apps = matrix(plan) or [""]
    roles = {"input": parts, "changelog": parts}
    for name in apps:
        suffix = f".{name}" if name else ""
        roles.update({f"output{suffix}": parts, f"assertions{suffix}": 1})
    return roles


def version_app_id(app_id: str, version: str) -> str:
    """The application id of one version of a matrix."""
    return f"{app_id}-{version}"


def build(plan: dict[str, Any], app_id: str, names: dict[str, str]) -> list[Subject]:
    """The subjects of a run whose topics are ``names`` (``{role: topic}``, as provisioned)."""
    if not matrix(plan):
        return [Subject("", app_id, versions(plan)[0], names["output"], names["assertions"])]
    return [Subject(v, version_app_id(app_id, v), v, names[f"output.{v}"], names[f"assertions.{v}"])
            for v in matrix(plan)]


def app_ids(plan: dict[str, Any], app_id: str) -> list[str]:
    """The application ids of a run's subjects: one per version of a matrix, else the run's own."""
    return [version_app_id(app_id, v) for v in matrix(plan)] or [app_id]


def client_ids(plan: dict[str, Any], app_id: str) -> list[str] | None:
    """The client ids the reference app's instances connect with, which a quota may name: the worker's consumer
    (``<app_id>-<n>``) and producer (``-producer``); each Kafka Streams instance's (``client.id`` = ``<app_id>-<n>``)
    stream threads' producer, consumer and restore consumer, and its admin client. None for an ``app_command``,
    whose clients only its owner knows."""
    if plan["app_command"]:
        return None
    instances = range(1, plan["instances"] + 1)
    if plan["app"] == "worker":
        return [name for n in instances for name in (f"{app_id}-{n}", f"{app_id}-{n}-producer")]
    threads = [f"StreamThread-{t}-{role}" for t in range(1, plan["threads"] + 1)
               for role in ("producer", "consumer", "restore-consumer")]
    return [f"{app}-{n}-{client}" for app in app_ids(plan, app_id) for n in instances for client in (*threads, "admin")]


def of(cluster: dict[str, Any]) -> list[Subject]:
    """The subjects ``provision`` recorded in the cluster (XCom / ``cluster.json``)."""
    return [Subject(**s) for s in cluster["subjects"]]
