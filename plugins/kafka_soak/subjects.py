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


def build(plan: dict[str, Any], app_id: str, names: dict[str, str]) -> list[Subject]:
    """The subjects of a run whose topics are ``names`` (``{role: topic}``, as provisioned)."""
    if not matrix(plan):
        return [Subject("", app_id, versions(plan)[0], names["output"], names["assertions"])]
    return [Subject(v, f"{app_id}-{v}", v, names[f"output.{v}"], names[f"assertions.{v}"]) for v in matrix(plan)]


def of(cluster: dict[str, Any]) -> list[Subject]:
    """The subjects ``provision`` recorded in the cluster (XCom / ``cluster.json``)."""
    return [Subject(**s) for s in cluster["subjects"]]
