"""The apps under test of one run: one, or one per Kafka Streams version of a matrix (param ``streams_versions``), or
one per design of the workflow engine (param ``workflow_designs``).

A matrix runs its versions side by side on the same broker, fed by the same input topic and toggled by the same
program step at the same moment: every version sees exactly the same load and the same program timing, so a
difference in the verdicts is the versions' own. (Running them one after the other would take N times as long
and give each version a different load and timing.) Each subject has its own application id (so its own
consumer group, changelogs and transactional ids), its own output and assertion topics, its own instances
(``instance-<n>@<version>``) and its own verdict. A design matrix is the same with one version and the designs as
names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kafka_soak import contracts
from kafka_soak.app import streams

REFERENCE_IMAGE = "kafka-soak-worker:latest"  # make worker-image


@dataclass(frozen=True)
class Subject:
    name: str  # "" for a run's only app; the Kafka Streams version in a matrix
    app_id: str  # application.id / group.id
    version: str  # the Kafka Streams version it runs (app=streams), else ""
    output: str  # topic
    assertions: str  # topic
    design: str = ""  # topology=workflow: the engine's design; "" for the id-assignment contract
    executions: str = ""  # topology=workflow: the topic of every committed version of every execution
    tasks: str = ""  # topology=workflow: the worker's orders
    results: str = ""  # topology=workflow: the worker's results

    @property
    def contract(self) -> str:
        """Which records the app writes (docs/architecture.md, "The data contract"): what the checker judges."""
        return contracts.of(self.design)

    def process(self, instance: int) -> str:
        """Its instance's name in the run's process registry."""
        return f"instance-{instance}" + (f"@{self.name}" if self.name else "")

    def label(self, instance: int) -> str:
        return f"instance {instance}" + (f" @{self.name}" if self.name else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def matrix(plan: dict[str, Any]) -> list[str]:
    """The names of the apps a run compares (Kafka Streams versions or workflow designs); empty when it judges one."""
    if plan["app"] != "streams" or plan["app_command"]:
        return []
    if design_matrix(plan):
        return list(plan["workflow_designs"])
    return list(plan["streams_versions"])


def workflow(plan: dict[str, Any]) -> bool:
    """Whether the run's app is the Kafka Streams app's workflow engine (the workflow data contract)."""
    return plan["app"] == "streams" and not plan["app_command"] and plan.get("topology") == "workflow"


def design_matrix(plan: dict[str, Any]) -> bool:
    return workflow(plan) and len(plan["workflow_designs"]) > 1


def topology(plan: dict[str, Any]) -> str:
    """What the Kafka Streams app of a run does, in a few words."""
    if not workflow(plan):
        return "id-assignment topology"
    return (f"workflow topology, design {' vs '.join(plan['workflow_designs'])}, {plan['parallel_tasks']} parallel "
            "tasks per execution")


def versions(plan: dict[str, Any]) -> list[str]:
    """The Kafka Streams versions a run's subjects run: a matrix's, the one of app=streams, or ``[""]`` when the app
    under test is not the Kafka Streams app."""
    if plan["app"] != "streams" or plan["app_command"]:
        return [""]
    return list(plan["streams_versions"]) or [plan["streams_version"]]


def image(version: str, app_image: str) -> tuple[str, str, str]:
    """The container image a subject's instances start from on runtime=docker: (image, the param that chose it,
    how to build it)."""
    if app_image:
        return app_image, "app_image", ""
    if version:
        return streams.image(version), "streams_version", f"build it with: make streams-image STREAMS_VERSION={version}"
    return REFERENCE_IMAGE, "app_image", "build it with: make worker-image"


def topics(plan: dict[str, Any]) -> dict[str, int]:
    """The run's topics by role, with their partitions: one output and assertion topic per subject, and the workflow
    engine's topics (partitioned alike: its join needs them co-partitioned)."""
    parts = plan["partitions"]
    apps = matrix(plan) or [""]
    roles = {"input": parts, "changelog": parts}
    for name in apps:
        suffix = f".{name}" if name else ""
        roles.update({f"output{suffix}": parts, f"assertions{suffix}": 1})
        if workflow(plan):
            roles.update({f"{role}{suffix}": parts for role in WORKFLOW_TOPICS})
    return roles


WORKFLOW_TOPICS = ("executions", "tasks", "results")


def version_app_id(app_id: str, version: str) -> str:
    """The application id of one version of a matrix."""
    return f"{app_id}-{version}"


def build(plan: dict[str, Any], app_id: str, names: dict[str, str]) -> list[Subject]:
    """The subjects of a run whose topics are ``names`` (``{role: topic}``, as provisioned)."""
    def subject(name: str, version: str, design: str) -> Subject:
        suffix = f".{name}" if name else ""
        topics = {role: names[f"{role}{suffix}"] for role in (*WORKFLOW_TOPICS, "output", "assertions")
                  if f"{role}{suffix}" in names}
        return Subject(name, version_app_id(app_id, name) if name else app_id, version,
                       design=design if workflow(plan) else "", **topics)

    designs = plan.get("workflow_designs") or [""]
    if design_matrix(plan):
        return [subject(d, versions(plan)[0], d) for d in designs]
    return [subject(v, v, designs[0]) for v in matrix(plan)] or [subject("", versions(plan)[0], designs[0])]


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
