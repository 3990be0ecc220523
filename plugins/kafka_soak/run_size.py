"""What one run starts on this machine, writes to Kafka and names there, counted over every member of every matrix,
and the one bound on each.

A run multiplies: each cluster of a broker version matrix (``kafka_versions``) runs its brokers, its generator and
every app member (Kafka Streams versions x controls, workflow designs, a profile's versions), each with ``instances``
processes. A field-by-field check admits confs whose product starts hundreds of JVMs; this module counts the product
once, for admission (``run_plan``) and the disk check (``preflight``).

The figures per process are upper bounds taken from this machine (2 cores, 24 GiB): a JVM's heap cap plus what the JVM
holds besides it (its code cache, metaspace, threads and RocksDB's memtables), a Python process's measured peak
rounded up (`docs/benchmarks.md`, "What one run's processes hold").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kafka_soak.backends import registry
from kafka_soak.clients import encodings, subjects
from kafka_soak.clients import profile as profiles
from kafka_soak.infra.cluster import topic_names, topic_prefix
from kafka_soak.params import MAX_INPUT_BYTES, RECORD_OVERHEAD_BYTES

# Resident memory per process, MiB. A broker: its 512 MiB heap (backends.local_kafka.BROKER_HEAP) and the JVM's
# own; a JVM app instance (the Kafka Streams app's 256 MiB heap, a team's app taken to be one); a Python process.
BROKER_MIB, JVM_APP_MIB, PYTHON_MIB = 768, 512, 128
# Of the machine's 24 GiB, what a run's brokers, apps and generators may hold together: the rest is the Airflow
# worker's, the checker's (about 2 GiB at 10M records), the operating system's and another run's.
MAX_RUN_MEMORY_MIB = 14 * 1024
# Processes of one run side by side on two cores: beyond this their start-up alone (a JVM's is about 1.5 CPU-s)
# outlasts a program step.
MAX_RUN_PROCESSES = 40


@dataclass(frozen=True)
class RunSize:
    clusters: int
    brokers: int  # over every cluster, on this machine (0 on a shared cluster)
    members: int  # apps side by side in each cluster
    instances: int  # app processes over every member of every cluster
    generators: int
    memory_mib: int
    input_bytes: int  # the generator's records, over every cluster
    state_bytes: int  # what state_write_bytes makes the Kafka Streams members write to their changelogs

    @property
    def processes(self) -> int:
        return self.brokers + self.instances + self.generators

    def describe(self) -> str:
        return (f"{self.clusters} cluster(s) x ({self.brokers // self.clusters} broker(s) + 1 generator + "
                f"{self.members} app(s) x {self.instances // (self.clusters * self.members)} instance(s)) = "
                f"{self.processes} processes holding up to {self.memory_mib / 1024:.1f} GiB")


def app_mib(app: profiles.Profile) -> int:
    """What one instance of the app holds: the reference worker is Python; everything else is taken to be a JVM."""
    return PYTHON_MIB if app.name == "worker" else JVM_APP_MIB


def payload_repeats(app: profiles.Profile) -> int:
    """How many times a record of the app's input holds the payload (a profile's template may repeat it)."""
    value = app.input.value
    if value.get("encoding") == encodings.SOAK:
        return 1
    return repr(value).count("{payload}") + app.input.key.count("{payload}")


def record_bytes(values: dict[str, Any], app: profiles.Profile) -> int:
    """About one input record's bytes: its fields and keys, and its payload as many times as its format writes it."""
    return RECORD_OVERHEAD_BYTES + values["payload_bytes"] * payload_repeats(app)


def measure(values: dict[str, Any], app: profiles.Profile) -> RunSize:
    """The size of a run of ``values`` (params) whose app under test is ``app`` (resolved)."""
    clusters = len(values["kafka_versions"]) or 1
    own_brokers = values["brokers"] if registry.kind(values["backend"]).starts_brokers else 0
    members = len(app.members)
    instances = clusters * members * values["instances"]
    stores = members if app.build == "streams" and values["topology"] == "id-assignment" else 0
    return RunSize(clusters=clusters, brokers=clusters * own_brokers, members=members, instances=instances,
                   generators=clusters,
                   memory_mib=clusters * own_brokers * BROKER_MIB + instances * app_mib(app) + clusters * PYTHON_MIB,
                   input_bytes=clusters * values["records"] * record_bytes(values, app),
                   state_bytes=clusters * stores * values["records"] * values["state_write_bytes"])


def problems(values: dict[str, Any], app: profiles.Profile) -> list[str]:
    """The run's size against the bounds, each refusal naming what multiplies and what is allowed."""
    size = measure(values, app)
    errors = []
    if size.processes > MAX_RUN_PROCESSES or size.memory_mib > MAX_RUN_MEMORY_MIB:
        errors.append(f"instances: the run starts {size.describe()}; a run starts at most {MAX_RUN_PROCESSES} "
                      f"processes holding {MAX_RUN_MEMORY_MIB // 1024} GiB on this machine: lower instances, or "
                      "compare fewer broker releases (kafka_versions), app versions or controls")
    written = size.input_bytes + size.state_bytes
    if written > MAX_INPUT_BYTES:
        parts = [f"{size.input_bytes / 2**30:.1f} GiB of input ({values['records']} records of about "
                 f"{record_bytes(values, app)} bytes, payload_bytes {values['payload_bytes']} x "
                 f"{payload_repeats(app)} in each record, x {size.clusters} cluster(s))"]
        if size.state_bytes:
            apps = size.state_bytes // (values["records"] * values["state_write_bytes"])
            parts.append(f"{size.state_bytes / 2**30:.1f} GiB of state (state_write_bytes "
                         f"{values['state_write_bytes']} x {values['records']} records x {apps} app(s))")
        errors.append(f"records: the run writes {' and '.join(parts)}; a run writes at most "
                      f"{MAX_INPUT_BYTES // 2**30} GiB (lower records, payload_bytes or state_write_bytes)")
    return errors


# Kafka's longest topic name, and what Kafka Streams adds to an application id for its internal topics (its generated
# store names: <application.id>-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog).
MAX_TOPIC_CHARS = 249
STREAMS_INTERNAL_SUFFIX = "-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"
# Linux's limit on one argument of a command (MAX_ARG_STRLEN, 32 pages): the generator's, the checker's and the app's
# arguments are each one.
MAX_ARG_BYTES = 128 * 1024
# Partitions a run creates on one cluster (before Kafka Streams' internal topics): a broker of this machine with
# thousands of partitions takes minutes to start and to elect their leaders.
MAX_RUN_PARTITIONS = 2048


def name_problems(plan: dict[str, Any], dag_id: str, attempt: str) -> list[str]:
    """What the run would name or pass that Kafka or the kernel refuses only after provisioning: a topic name over
    Kafka's 249 characters (the attempt's prefix included: a topic created and its sibling refused would be left on a
    shared cluster), an application id that leaves Kafka Streams' internal topics no room, an argument of the
    generator, the checker or the app over the kernel's limit."""
    app = profiles.Profile.of(plan["app_profile"])
    names = topic_names(subjects.topics(plan), topic_prefix(dag_id, attempt), subjects.app_names(plan),
                        owned=not registry.shared(plan["backend"]))
    errors = [f"topics: the run's topic {name[:60]}... (soak.<dag id>.<run>.<name>) is {len(name)} characters; Kafka "
              f"takes {MAX_TOPIC_CHARS} at most: shorten the DAG id, the run id or the app's topic names"
              for name in sorted(set(names.values())) if len(name) > MAX_TOPIC_CHARS][:1]
    by_metric: dict[str, list[str]] = {}
    for role, name in names.items():
        by_metric.setdefault(name.replace(".", "_"), []).append(role)
    for roles in (sorted(r) for r in by_metric.values() if len(r) > 1):
        named = sorted({names[r] for r in roles})
        alike = (f"would both be named {named[0]}" if len(named) == 1 else
                 f"would be named {' and '.join(named)}, which differ only by '.' and '_' (Kafka refuses that: its "
                 "metrics name them alike)")
        errors.append(f"topics: {' and '.join(roles)} {alike}; rename one of the app's topics (in a matrix each member's "
                      "copy of a topic is <name>.<member>)")
    partitions = sum(subjects.topics(plan).values())
    if partitions > MAX_RUN_PARTITIONS:
        errors.append(f"partitions: the run's {len(names)} topics have {partitions} partitions in all (each member of a "
                      f"matrix has its own copy of the app's topics); a run makes at most {MAX_RUN_PARTITIONS} on a "
                      "cluster: lower partitions, or compare fewer versions or controls")
    longest = max(subjects.app_ids(plan), key=len)
    if len(longest + STREAMS_INTERNAL_SUFFIX) > MAX_TOPIC_CHARS:
        errors.append(f"app_profile.group_id: the application id {longest[:60]}... ({len(longest)} characters) leaves "
                      f"Kafka Streams' internal topics (<id>{STREAMS_INTERNAL_SUFFIX}) over Kafka's {MAX_TOPIC_CHARS} "
                      f"characters: at most {MAX_TOPIC_CHARS - len(STREAMS_INTERNAL_SUFFIX)} with the run's "
                      "additions (a member's name, the run's scope on a shared cluster)")
    checked = {"app_profile.inputs[0].value": json.dumps(app.input.value), "app_profile.inputs[0].key": app.input.key,
               "phases": json.dumps(plan["phases"]),
               "the checker's --subjects (its outputs and their topics)": json.dumps(subjects.judged(
                   {"subjects": [s.as_dict() for s in subjects.build(plan, names)]})),
               **{f"app_profile.command[{n}]": part for n, part in enumerate(app.command)}}
    errors += [f"{what}: {len(text.encode()):,} bytes passed as one argument; Linux takes {MAX_ARG_BYTES:,} at most"
               for what, text in checked.items() if len(text.encode()) > MAX_ARG_BYTES]
    return errors


def of_plan(plan: dict[str, Any]) -> RunSize:
    """The size of a resolved plan (its ``app_profile`` resolved)."""
    return measure(plan, profiles.Profile.of(plan["app_profile"]))

