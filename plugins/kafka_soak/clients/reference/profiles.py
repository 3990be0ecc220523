"""The suite's own apps under test as profiles: the reference worker, the Kafka Streams app (its versions, workflow
designs and controls as the profile's members) and an ``app_command`` written for the suite's contract.

A run knows its app only by its profile (``profile.Profile``, the plan's ``app_profile``), so these take the path a
team's app takes: provision, the generator, the instances, the drain and the checker ask the profile, never which app
it is. What the suite knows of its own apps is said as profile facts: the client ids a quota may name, whether a
stopped instance leaves its group at once, and that every topic name is the run's (scoped to it on every cluster).
They read the suite's records (encoding ``soak``) and keep the suite's data contract (``id-assignment``, or the
workflow engine's ``workflow``); they learn the run's names from the contract's ``SOAK_*`` environment or the
``{placeholders}`` of their command.
"""

from __future__ import annotations

from typing import Any

from kafka_soak.clients import encodings
from kafka_soak.clients.profile import STATE_DIR, VERSION, AppMember, Input, Output, Profile, literal
from kafka_soak.clients.reference import releases, streams
from kafka_soak.infra.runtime.local import python_command
from kafka_soak.shared import contracts, stalls

IMAGE = "kafka-soak-worker:latest"  # make worker-image: the worker, and the default image of an app_command
INPUT, OUTPUT, ASSERTIONS, CHANGELOG = "input", "output", "assertions", "changelog"
WORKFLOW_TOPICS = ("executions", "tasks", "results")
COUNTS, SUMS = "counts", "sums"  # the aggregation topologies' tables
AGGREGATIONS = ("aggregate", "repartition")
# The aggregation topologies' input: the suite's headers (soak.id, soak.seq) and an amount per record to sum.
AGGREGATION_VALUE = {"encoding": "json",
                     "template": {"id": "{id}", "seq": "{seq}", "amount": "{random_int:1:1000}", "payload": "{payload}"}}
THE_APP = "the app"  # how a verdict names a run's only app when it has no version


def profile(values: dict[str, Any], group_id: str) -> Profile:
    """The profile of the suite's app that params ``values`` choose (``app_command``, else param ``app``), running
    as ``group_id`` (the run's application id)."""
    if values["app_command"]:
        return command_app(values, group_id)
    return streams_app(values, group_id) if values["app"] == "streams" else worker(values, group_id)


def contract_profile(values: dict[str, Any], group_id: str, name: str, command: list[str], image: str,
                     **facts: Any) -> Profile:
    """An app of the suite's id-assignment contract: the suite's records in, one output record per input with the id
    its key got, its self-check failures on ``assertions``, its state on ``changelog`` if it keeps one there."""
    parts = values["partitions"]
    return Profile(name=name, command=command, group_id=group_id, client_properties={},
                   topics={CHANGELOG: parts, ASSERTIONS: 1}, inputs=[soak_input(parts)],
                   outputs=[Output(OUTPUT, parts, contracts.ID_ASSIGNMENT, INPUT, assertions=ASSERTIONS)],
                   image=image, scoped=True, **{"members": [AppMember(label=THE_APP)], **facts})


def soak_input(partitions: int) -> Input:
    return Input(INPUT, partitions, "{key}", {"encoding": encodings.SOAK})


def worker(values: dict[str, Any], group_id: str) -> Profile:
    """The reference worker (``worker_style``: the suite's or confluent-kafka's example's): this interpreter locally,
    or the virtualenv of each confluent-kafka release of ``worker_versions`` (one member each, built before the run);
    the worker image's entrypoint with Docker. It closes its consumer on a stop (so it leaves its group at once); its
    clients are the consumer ``<group>-<n>`` and the producer ``<group>-<n>-producer``."""
    args = ["--bootstrap", "{bootstrap_servers}", "--app-id", "{app_id}", "--instance", "{instance}", "--step", "{step}",
            "--input-topic", "{input_topic}", "--output-topic", "{output_topic}", "--changelog-topic",
            "{changelog_topic}", "--assertions-topic", "{assertions_topic}",
            *map(literal, ["--standbys", str(values["standbys"]), "--cache-entries", str(values["cache_entries"]),
                           "--bug", values["bug"], "--bug-every", str(values["bug_every"]),
                           "--commit-interval-ms", str(values["commit_interval_ms"]),
                           "--crash-probability", repr(float(values["crash_probability"])),
                           "--session-timeout-ms", str(values["session_timeout_ms"]), "--seed", str(values["seed"]),
                           *(["--group-protocol", "consumer"] if values["group_protocol"] == "consumer" else []),
                           *(["--style", values["worker_style"]] if values["worker_style"] != "reference" else [])])]
    docker = values["runtime"] == "docker"
    versions = list(values["worker_versions"])
    start = releases.command(f"{{{VERSION}}}") if versions else [
        *map(literal, python_command(releases.WORKER_MODULE))]
    title = "worker" + (" (confluent-kafka's example)" if values["worker_style"] == "example" else "")
    return contract_profile(values, group_id, "worker", args if docker else [*start, *args],
                            values["app_image"] or IMAGE if docker else "",
                            title=title + (f" on confluent-kafka {', '.join(versions)}" if versions else ""),
                            leaves_group=True, clients=["", "-producer"], build="worker" if versions else "",
                            members=worker_members(versions, values["variants"]), stall=stalls.CONTRACT,
                            **image_source(values))


def worker_members(versions: list[str], variants: list[dict[str, Any]]) -> list[AppMember]:
    """The worker's confluent-kafka releases a run compares, each its own member; or the worker beside its controls
    (param variants: each with its own bug switch, after the run's on its command line); the one worker otherwise."""
    if variants:
        return [AppMember("worker", label="worker"),
                *(AppMember(f"worker-{v['name']}", args=["--bug", literal(v.get("bug", "none"))],
                            quoted=v.get("quotas", True), label=f"worker ({v['name']})") for v in variants)]
    if len(versions) > 1:
        return [AppMember(v, v, label=f"confluent-kafka {v}") for v in versions]
    return [AppMember(label=f"confluent-kafka {versions[0]}" if versions else THE_APP,
                      version=versions[0] if versions else "")]


def command_app(values: dict[str, Any], group_id: str) -> Profile:
    """A team's app written for the suite's contract, started by ``app_command`` (``app_image`` with Docker): taken
    to leave its group on a stop; its client ids are its own."""
    docker = values["runtime"] == "docker"
    return contract_profile(values, group_id, "app_command", list(values["app_command"]),
                            values["app_image"] or IMAGE if docker else "", title="own app", leaves_group=True,
                            **image_source(values))


def streams_app(values: dict[str, Any], group_id: str) -> Profile:
    """The Kafka Streams app: one member per version, workflow design or control (each ``<version>-<control>``) of
    the run, built against its version before the run; its clients are each stream thread's producer, consumer
    and restore consumer and the instance's admin client. It does not leave its group when it closes."""
    parts = values["partitions"]
    topics, inputs, outputs = streams_topics(values["topology"], parts)
    options = [*map(literal, streams.options(values)), "--state-dir", f"{{{STATE_DIR}}}"]
    docker = values["runtime"] == "docker"
    command = options if docker else [*map(literal, streams.jvm()), "-cp", streams.classpath(f"{{{VERSION}}}"),
                                      streams.MAIN_CLASS, *options]
    threads = [f"-StreamThread-{t}-{role}" for t in range(1, values["threads"] + 1)
               for role in ("producer", "consumer", "restore-consumer")]
    return Profile(name="streams", command=command, group_id=group_id, client_properties={}, topics=topics,
                   inputs=inputs, outputs=outputs,
                   image=values["app_image"] or streams.image(f"{{{VERSION}}}") if docker else "",
                   members=streams_members(values), stall=stalls.JVM, scoped=True, clients=[*threads, "-admin"],
                   build="streams",
                   title=streams_title(values), **image_source(values, "streams_version",
                                                               f"make streams-image STREAMS_VERSION={{{VERSION}}}"))


def streams_topics(topology: str, parts: int) -> tuple[dict[str, int], list[Input], list[Output]]:
    """A topology's topics of its own, its input and its judged outputs: the id assignment's output and self-check,
    the workflow engine's executions, the aggregations' count and sum tables (``aggregate`` contract)."""
    if topology in AGGREGATIONS:
        tables = [Output(COUNTS, parts, contracts.AGGREGATE, INPUT, function="count", value={"encoding": "string"}),
                  Output(SUMS, parts, contracts.AGGREGATE, INPUT, function="sum", field="amount",
                         value={"encoding": "string"})]
        return {}, [Input(INPUT, parts, "{key}", AGGREGATION_VALUE)], tables
    if topology == "workflow":
        return ({ASSERTIONS: 1, **{name: parts for name in WORKFLOW_TOPICS}}, [soak_input(parts)],
                [Output(OUTPUT, parts, contracts.WORKFLOW, INPUT, assertions=ASSERTIONS, executions="executions")])
    return ({ASSERTIONS: 1}, [soak_input(parts)],
            [Output(OUTPUT, parts, contracts.ID_ASSIGNMENT, INPUT, assertions=ASSERTIONS)])


def image_source(values: dict[str, Any], param: str = "app_image", make: str = "make worker-image") -> dict[str, str]:
    """What chose an instance's image on runtime docker and how to build it: the user's own (``app_image``), else the
    suite's image of the app (``make``)."""
    if values["app_image"]:
        return {"image_param": "app_image", "image_hint": ""}
    return {"image_param": param, "image_hint": f"build it with: {make}"}


def streams_members(values: dict[str, Any]) -> list[AppMember]:
    """The Kafka Streams apps a run compares: its workflow designs (on one version), each version with its
    controls (param variants), or its versions; else the one app. Each gets the run's Kafka Streams settings (param
    streams_config, the rebalance protocol), then a control's own."""
    versions = list(values["streams_versions"]) or [values["streams_version"]]
    workflow = values["topology"] == "workflow"
    designs = list(values["workflow_designs"]) if workflow else [""]
    run_config = {**values["streams_config"],
                  **({"group.protocol": "streams"} if values["group_protocol"] == "streams" else {})}

    def member_args(name: str, own: dict[str, Any] | None = None, bug: str | None = None) -> list[str]:
        """A member's own options: its workflow design, if any, its Kafka Streams settings (the run's, then a
        control's ``own``), and a control's own bug switch (after the run's, which the app's options carry)."""
        settings = {**run_config, **(own or {})}
        return [*(["--design", literal(name), "--parallel-tasks", str(values["parallel_tasks"])] if name else []),
                *(["--config", literal(config(settings))] if settings else []),
                *(["--bug", literal(bug)] if bug else [])]

    if len(designs) > 1:
        return [AppMember(d, versions[0], member_args(d), label=f"design {d}") for d in designs]
    if values["variants"]:
        return [member for version in versions for member in (
            AppMember(version, version, member_args(designs[0]), label=f"Kafka Streams {version}"),
            *(AppMember(f"{version}-{v['name']}", version,
                        member_args(designs[0], v.get("streams_config", {}), v.get("bug")),
                        quoted=v.get("quotas", True), label=f"Kafka Streams {version} ({v['name']})")
              for v in values["variants"]))]
    if len(versions) > 1:
        return [AppMember(v, v, member_args(designs[0]), label=f"Kafka Streams {v}") for v in versions]
    return [AppMember("", versions[0], member_args(designs[0]), label=f"Kafka Streams {versions[0]}")]


def config(settings: dict[str, Any]) -> str:
    """Kafka Streams settings as the app's ``--config`` takes them (applied after its own)."""
    return ";".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in settings.items())


def streams_title(values: dict[str, Any]) -> str:
    """The Kafka Streams app of a run in a few words (the history page's app column)."""
    versions = values["streams_versions"] or [values["streams_version"]]
    designs = f" workflow ({', '.join(values['workflow_designs'])})" if values["topology"] == "workflow" else ""
    controls = f" with controls {', '.join(v['name'] for v in values['variants'])}" if values["variants"] else ""
    return f"Kafka Streams {', '.join(versions)}{designs}{controls}"
