"""The apps under test of one run: one, or one per Kafka Streams version of a matrix (param ``streams_versions``, or
the ``versions`` of a team's app in its profile), or one per design of the workflow engine (param
``workflow_designs``).

A matrix runs its versions side by side on the same broker, fed by the same input topic and toggled by the same
program step at the same moment: every version sees exactly the same load and the same program timing, so a
difference in the verdicts is the versions' own. (Running them one after the other would take N times as long
and give each version a different load and timing.) Each subject has its own application id (so its own
consumer group, changelogs and transactional ids), its own output and assertion topics, its own instances
(``instance-<n>@<version>``) and its own verdict. A design matrix is the same with one version and the designs as
names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_soak import contracts
from kafka_soak import profile as profiles
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
    outputs: list[dict[str, Any]] = field(default_factory=list)  # app_profile: its judged outputs (``judged``)
    variant: str = ""  # app=streams: the control it runs as (param variants), "" for the scenario's own settings

    @property
    def contract(self) -> str:
        """Which records the app writes (docs/architecture.md, "The data contract"): what the checker judges (a
        profile's app: each of its ``outputs`` says)."""
        return contracts.of(self.design)

    def process(self, instance: int) -> str:
        """Its instance's name in the run's process registry."""
        return f"instance-{instance}" + (f"@{self.name}" if self.name else "")

    def label(self, instance: int) -> str:
        return f"instance {instance}" + (f" @{self.name}" if self.name else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def kind(plan: dict[str, Any]) -> str:
    """Which app a run has under test: ``profile`` (a team's own, ``app_profile``), ``command`` (``app_command``), or
    the reference ``worker`` or ``streams`` app (param ``app``)."""
    if plan.get("app_profile"):
        return "profile"
    return "command" if plan["app_command"] else plan["app"]


def stop_leaves_group(plan: dict[str, Any]) -> bool:
    """Whether an instance the program stops leaves its group at once (the reference worker closes its consumer; an
    ``app_command`` is taken to), or holds its partitions until its session times out: Kafka Streams does not leave
    the group when it closes, and a profile's app may well be a Kafka Streams app."""
    return kind(plan) in ("worker", "command")


def profile(plan: dict[str, Any]) -> profiles.Profile | None:
    """The profile of a team's own app under test, if the run has one."""
    return profiles.Profile.of(plan["app_profile"]) if plan.get("app_profile") else None


def describe(plan: dict[str, Any]) -> str:
    """The app under test in a few words, for the run's log."""
    app = kind(plan)
    if app == "profile":
        own = profile(plan)
        judged = "; ".join(f"{o.topic} judged {o.contract}" + (f" {o.function}" if o.function else "")
                           for o in own.judged())
        versions = f", versions {' vs '.join(own.versions)}" if own.matrix else (
            f", version {own.versions[0]}" if own.versions else "")
        return f"{own.name} (app_profile, group {own.group_id}{versions}): {judged or 'no output judged'}"
    if app == "command":
        return "app_command " + " ".join(plan["app_command"])
    if app == "streams":
        controls = "; controls " + ", ".join(v["name"] for v in plan["variants"]) if plan.get("variants") else ""
        return (f"Kafka Streams {', '.join(plan['streams_versions'] or [plan['streams_version']])}{controls} ({plan['threads']} "
                f"thread(s), {plan['standbys']} standby(s), acceptable.recovery.lag {plan['acceptable_recovery_lag']}), "
                + topology(plan))
    return "the reference worker"


def matrix(plan: dict[str, Any]) -> list[str]:
    """The names of the apps a run compares (Kafka Streams versions, a profile's versions or workflow designs); empty
    when it judges one."""
    app = profile(plan)
    if app is not None:
        return app.matrix
    if kind(plan) != "streams":
        return []
    if design_matrix(plan):
        return list(plan["workflow_designs"])
    if plan.get("variants"):
        return [name for name, _version, _variant in controlled(plan)]
    return list(plan["streams_versions"])


def controlled(plan: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(name, version, variant)`` of every app of a run with controls (param variants): each version as itself, then
    each of its controls as ``<version>-<variant>`` (its name in topics, application id and instances)."""
    return [app for version in versions(plan)
            for app in ((version, version, ""), *((variant_name(version, v["name"]), version, v["name"])
                                                   for v in plan["variants"]))]


def variant_name(version: str, variant: str) -> str:
    return f"{version}-{variant}"


def variant_config(plan: dict[str, Any], variant: str) -> dict[str, Any]:
    """The Kafka Streams settings of a control (none for the scenario's own app)."""
    return next((v.get("streams_config", {}) for v in plan.get("variants") or [] if v["name"] == variant), {})


def workflow(plan: dict[str, Any]) -> bool:
    """Whether the run's app is the Kafka Streams app's workflow engine (the workflow data contract)."""
    return kind(plan) == "streams" and plan.get("topology") == "workflow"


def design_matrix(plan: dict[str, Any]) -> bool:
    return workflow(plan) and len(plan["workflow_designs"]) > 1


def topology(plan: dict[str, Any]) -> str:
    """What the Kafka Streams app of a run does, in a few words."""
    if not workflow(plan):
        return "id-assignment topology"
    return (f"workflow topology, design {' vs '.join(plan['workflow_designs'])}, {plan['parallel_tasks']} parallel "
            "tasks per execution")


def versions(plan: dict[str, Any]) -> list[str]:
    """The versions a run's subjects run: a matrix's, the one of app=streams or of a profile, or ``[""]`` when the app
    under test has none."""
    app = profile(plan)
    if app is not None:
        return app.versions or [""]
    if kind(plan) != "streams":
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
    engine's topics (partitioned alike: its join needs them co-partitioned); a profile's app has its own, each version of
    its matrix all but the input."""
    apps = matrix(plan) or [""]
    app = profile(plan)
    if app is not None:
        return {profiles.role(name, app) + version_suffix(app, name, version): n for name, n in app.names().items()
                for version in apps}
    parts = plan["partitions"]
    roles = {"input": parts, "changelog": parts}
    for name in apps:
        suffix = f".{name}" if name else ""
        roles.update({f"output{suffix}": parts, f"assertions{suffix}": 1})
        if workflow(plan):
            roles.update({f"{role}{suffix}": parts for role in WORKFLOW_TOPICS})
    return roles


WORKFLOW_TOPICS = ("executions", "tasks", "results")


def version_suffix(app: profiles.Profile, name: str, version: str) -> str:
    """What tells one version's copy of a profile's topic from another's (``.<version>``); the input is shared."""
    return f".{version}" if version and profiles.role(name, app) != "input" else ""


def app_names(plan: dict[str, Any]) -> dict[str, str]:
    """``{role: name}`` of the topics whose names the app under test chose (a profile's, ``<name>.<version>`` in a
    matrix): kept as they are where the run owns the cluster, scoped to the run elsewhere."""
    app = profile(plan)
    if app is None:
        return {}
    return {profiles.role(name, app) + version_suffix(app, name, v): name + version_suffix(app, name, v)
            for name in app.names() for v in matrix(plan) or [""]}


def topics_of(app: profiles.Profile, subject: Subject, topics: dict[str, str]) -> dict[str, str]:
    """``{name: topic}``: the topic each of a profile's names stands for in one subject (its version's own)."""
    return {name: topics[profiles.role(name, app) + version_suffix(app, name, subject.name)] for name in app.names()}


def version_app_id(app_id: str, version: str) -> str:
    """The application id of one version of a matrix."""
    return f"{app_id}-{version}"


def build(plan: dict[str, Any], app_id: str, names: dict[str, str]) -> list[Subject]:
    """The subjects of a run whose topics are ``names`` (``{role: topic}``, as provisioned)."""
    def subject(name: str, version: str, design: str, variant: str = "") -> Subject:
        suffix = f".{name}" if name else ""
        topics = {role: names[f"{role}{suffix}"] for role in (*WORKFLOW_TOPICS, "output", "assertions")
                  if f"{role}{suffix}" in names}
        return Subject(name, version_app_id(app_id, name) if name else app_id, version,
                       design=design if workflow(plan) else "", variant=variant, **topics)

    app = profile(plan)
    if app is not None:
        inputs = {i.topic: i.value for i in app.inputs}
        matrixed = matrix(plan)
        def topic(declared: str, name: str) -> str:
            return names[profiles.role(declared, app) + version_suffix(app, declared, name)] if declared else ""

        return [Subject(name, version_app_id(app.group_id, name) if name else app.group_id, version, "", "", outputs=[
            {**{k: v for k, v in asdict(o).items() if k != "topic"}, "name": f"{o.topic}@{name}" if name else o.topic,
             "output": topic(o.topic, name), "assertions": topic(o.assertions, name), "input_value": inputs[o.of]}
            for o in app.judged()]) for name, version in zip(matrixed or [""], versions(plan), strict=True)]
    designs = plan.get("workflow_designs") or [""]
    if design_matrix(plan):
        return [subject(d, versions(plan)[0], d) for d in designs]
    if plan.get("variants"):
        return [subject(name, version, designs[0], variant) for name, version, variant in controlled(plan)]
    return [subject(v, v, designs[0]) for v in matrix(plan)] or [subject("", versions(plan)[0], designs[0])]


def app_ids(plan: dict[str, Any], app_id: str) -> list[str]:
    """The application ids of a run's subjects: one per version of a matrix, a profile's group, else the run's own."""
    app = profile(plan)
    own = app.group_id if app is not None else app_id
    return [version_app_id(own, v) for v in matrix(plan)] or [own]


def quoted_app_ids(plan: dict[str, Any], app_id: str) -> list[str]:
    """The application ids a quota's ``{app_id}`` names: every subject's but a control's that runs without the run's
    quotas (``quotas: false``)."""
    unquoted = {v["name"] for v in plan.get("variants") or [] if v.get("quotas") is False}
    skipped = {version_app_id(app_id, name) for name, _version, variant in controlled(plan) if variant in unquoted}
    return [app for app in app_ids(plan, app_id) if app not in skipped]


def client_ids(plan: dict[str, Any], app_id: str) -> list[str] | None:
    """The client ids the reference app's instances connect with, which a quota may name: the worker's consumer
    (``<app_id>-<n>``) and producer (``-producer``); each Kafka Streams instance's (``client.id`` = ``<app_id>-<n>``)
    stream threads' producer, consumer and restore consumer, and its admin client. None for an ``app_command`` or a
    profile's app, whose clients only its owner knows."""
    if kind(plan) in ("command", "profile"):
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


def judged(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """What the checker judges (its ``--subjects``): each reference app's subject, and each judged output of a
    profile's app, with its contract, named by the topic the app knows it by (``<topic>@<version>`` in a matrix) and
    with whose instances ran it (``instances``: its subject's name)."""
    return [{"app_id": s["app_id"], "version": s["version"], "assertions": "", "instances": s["name"], **output}
            for s in cluster["subjects"] for output in s.get("outputs") or []] + \
        [s for s in cluster["subjects"] if not s.get("outputs")]
