"""A soak run's parameters: JSON schema for Airflow's trigger form and CLI, plus the checks schema can't say.

``PARAMS`` declares each param once (default, schema, audience); ``PARAM_SCHEMAS``, derived from it, is what the
trigger form and ``airflow dags test -c`` enforce. ``check`` adds the
checks that span several params (an instance number above ``instances``, a broker above ``brokers``, params of
another backend) and resolves the program, so a bad run is refused before anything is
provisioned, with a message that names the param and what is allowed.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from kafka_soak import generator, subjects
from kafka_soak import profile as profiles
from kafka_soak import program as programs
from kafka_soak.app import reference
from kafka_soak.app.streams import DEFAULT_VERSION as DEFAULT_STREAMS_VERSION
from kafka_soak.app.streams import VERSION_PATTERN as STREAMS_VERSION_PATTERN
from kafka_soak.app.worker import BUGS
from kafka_soak.backends import NAMES as BACKENDS
from kafka_soak.backends.docker_kafka import DEFAULT_IMAGE as DEFAULT_KAFKA_IMAGE
from kafka_soak.backends.kafka_jars import DEFAULT_VERSION as DEFAULT_KAFKA_VERSION
from kafka_soak.backends.kafka_jars import VERSION_PATTERN as KAFKA_VERSION_PATTERN
from kafka_soak.program import MAX_STEPS
from kafka_soak.runtime.docker import DEFAULT_URL as DEFAULT_DOCKER_URL

APPS = ("worker", "streams")
TOPOLOGIES = ("id-assignment", "workflow", "aggregate", "repartition")
WORKFLOW_DESIGNS = ("ktable-self-join", "single-writer")
RESTART_POLICIES = ("never", "on-failure")
SHARED = "external"  # a param only the deployment sets on a shared cluster (Declared.deployer)
TRANSACTION_VERSIONS = (0, 1, 2)  # the transaction.version feature levels Kafka 4.x brokers know
APP_ID = "{app_id}"  # in a quota's client id: each application id of the run
UNNAMED_APP_ID = "app"  # the application id of a plan checked without a run's (a DAG's is <dag_id>-app)
MAX_RUN_S = 7 * 86_400  # a program, a load phase: a week at most
# Clusters of a broker version matrix: each is its own JVM (and its app's and generator's processes) on this machine.
MAX_BROKER_VERSIONS = 3
MAX_RATE = 1_000_000  # records/s
MAX_INPUT_BYTES = 16 * 2**30  # what a run's generator may write (before replication, outputs and changelogs)
RECORD_OVERHEAD_BYTES = 120  # an input record's key and JSON fields besides its payload


@dataclass(frozen=True)
class Declared:
    """One param, declared once: its default, its JSON Schema (with the description the trigger form shows), whether
    only whoever deploys the suite sets it, and whether only the reference apps read it. Every list of params below
    (schemas, defaults, audiences) is derived from these."""

    default: Any
    schema: dict[str, Any]
    # Decides what runs where and with which credentials: set by the scenario file, SOAK_PARAM_DEFAULTS, or a value
    # SOAK_TRIGGER_ALLOW lists, never by a trigger conf (SHARED: only when the run's backend is external, a shared
    # cluster; on the run's own broker quotas and kept topics shape the soak).
    deployer: bool | str = False  # "external": only on a shared cluster
    # A setting of the reference apps: a team's own app (app_profile) takes its settings from its client_properties.
    reference: bool = False


# Kafka Streams settings as a control or param streams_config gives them: a few names, each a scalar.
STREAMS_CONFIG_SCHEMA = {"type": "object", "maxProperties": 20,
                         "propertyNames": {"pattern": r"^[_a-z][a-z0-9._-]{0,99}(?![\s\S])"},
                         "additionalProperties": {"type": ["string", "integer", "number", "boolean"]}}
GROUP_PROTOCOLS = ("classic", "consumer", "streams")
STREAMS_PROTOCOL_SINCE = (4, 2)  # KIP-1071 generally available: Kafka Streams and brokers

PARAMS: dict[str, Declared] = {
    "program": Declared("1 2 1", {
        "type": ["string", "array"], "items": {"type": ["integer", "string"]}, "maxItems": MAX_STEPS,
        "maxLength": 8 * MAX_STEPS,
        "description": "One operation per step: N toggles instance N (\"1 2 1\" = start 1, start 2, stop 1), "
                       "0 = no-op, kN = kill -9, pN/rN = pause/resume (SIGSTOP/SIGCONT), bN-/bN+ = broker N "
                       "down/up. Empty: a random program from `seed`, stored with the run for replay."}),
    "interval_s": Declared(10, {
        "type": "number", "minimum": 1, "maximum": 3600,
        "description": "Seconds between two program steps."}),
    "records": Declared(20_000, {
        "type": "integer", "minimum": 1, "maximum": 100_000_000,
        "description": "Input records the generator produces while the program runs: at most 1,000,000 "
                       "records/s and 16 GiB of input (records x (payload_bytes + ~120 bytes)) per run, "
                       "and it must fit in the runs directory's free space."}),
    "keys": Declared(500, {
        "type": "integer", "minimum": 1, "maximum": 10_000_000,
        "description": "Distinct entity keys the records cycle over."}),
    "partitions": Declared(4, {
        "type": "integer", "minimum": 1, "maximum": profiles.MAX_PARTITIONS,
        "description": "Partitions of the input, output and changelog topics."}),
    "instances": Declared(3, {
        "type": "integer", "minimum": 1, "maximum": 32,
        "description": "How many app instances the program may toggle."}),
    "brokers": Declared(1, {
        "type": "integer", "enum": [1, 3],
        "description": "backend=local: Kafka nodes the run starts, 1 or 3 (3: replication factor 3, "
                       "min.insync.replicas 2); the program's bN-/bN+ kill broker N and restart it."}),
    "kafka_version": Declared(DEFAULT_KAFKA_VERSION, {
        "type": "string", "pattern": KAFKA_VERSION_PATTERN,
        "description": "backend=local: the Apache Kafka release the run's brokers run (any 4.x that "
                       "Maven Central serves; fetched on first use and cached). Its tools also set "
                       "quotas on backend=external."}),
    "kafka_versions": Declared([], {
        "type": "array", "items": {"type": "string", "pattern": KAFKA_VERSION_PATTERN},
        "uniqueItems": True, "maxItems": MAX_BROKER_VERSIONS,
        "description": "backend=local: a broker version matrix. The run starts a cluster of each Apache Kafka "
                       "release (any 4.x Maven Central serves) and runs the same app, load and program on "
                       "each, side by side, with a verdict each; the report shows broker version x status x "
                       "anomalies (with streams_versions: each pair). Empty: kafka_version alone."}),
    "transaction_version": Declared(None, {
        "type": ["integer", "null"], "enum": [None, *TRANSACTION_VERSIONS],
        "description": "backend=local: the brokers' transaction.version feature, set when their storage is "
                       "formatted: 0 and 1 (the classic protocol), 2 (transactions v2, KIP-890: no "
                       "AddPartitionsToTxn, a new producer epoch per transaction; Java clients 4.0 and later "
                       "use it when the cluster has it). Empty: the release's default (2 on 4.x)."}),
    "app": Declared("worker", reference=True, schema={
        "type": "string", "enum": list(APPS),
        "description": "The reference app under test: worker (kafka-soak's Python EOS worker, with bug switches "
                       "to prove the checker) or streams (the id-assignment topology on Kafka Streams "
                       "streams_version, as in the KAFKA-14172/14624 reproductions). app_command names your own."}),
    "streams_version": Declared(DEFAULT_STREAMS_VERSION, reference=True, schema={
        "type": "string", "pattern": STREAMS_VERSION_PATTERN,
        "description": "app=streams: the Kafka Streams release the app is built against (any from 3.3 "
                       "on that Maven Central serves; built on first use and cached)."}),
    "streams_versions": Declared([], reference=True, schema={
        "type": "array", "items": {"type": "string", "pattern": STREAMS_VERSION_PATTERN},
        "uniqueItems": True, "maxItems": 4,
        "description": "app=streams: a version matrix. Each Kafka Streams version runs as its own app "
                       "side by side with the others, on the same input, toggled by the same program "
                       "steps, and gets its own verdict; the report shows version x status x "
                       "anomalies. Empty: streams_version alone."}),
    "variants": Declared([], reference=True, schema={
        "type": "array", "maxItems": 3, "items": {
            "type": "object", "required": ["name"], "additionalProperties": False, "properties": {
                "name": {"type": "string", "pattern": r"^[a-z][a-z0-9-]{0,19}(?![\s\S])"},
                "streams_config": STREAMS_CONFIG_SCHEMA,
                "quotas": {"type": "boolean"}}},
        "description": "app=streams: controls that run side by side with each version, on the same input "
                       "and program: each {name, streams_config (Kafka Streams settings of its own, e.g. "
                       "producer.transaction.timeout.ms), quotas (false: the run's {app_id} quotas skip "
                       "it)}, with its own application id (<app_id>-<version>-<name>) and verdict."}),
    "streams_config": Declared({}, reference=True, schema={
        **STREAMS_CONFIG_SCHEMA,
        "description": "app=streams: Kafka Streams settings of every version and control, applied after the "
                       "app's own (e.g. producer.transaction.timeout.ms, or __state.updater.enabled__ on 3.8-4.1); "
                       "a control's streams_config comes after them. What the run sets (application.id, "
                       "bootstrap.servers, client.id, state.dir, processing.guarantee, group.protocol) is refused."}),
    "group_protocol": Declared("classic", reference=True, schema={
        "type": "string", "enum": list(GROUP_PROTOCOLS),
        "description": "The rebalance protocol of the reference app's groups: classic; consumer (app=worker, "
                       "KIP-848: the brokers assign the partitions; brokers whose group.version feature is 1, the "
                       "default from Apache Kafka 4.0); or streams (app=streams, KIP-1071: the brokers assign the "
                       "tasks; Kafka Streams 4.2 or later on brokers whose streams.version feature is 1, the "
                       "default from 4.2). Under either the brokers set the session (and, for streams, the "
                       "standbys) as group configs: leave session_timeout_ms (and standbys) at their defaults."}),
    "topology": Declared("id-assignment", reference=True, schema={
        "type": "string", "enum": list(TOPOLOGIES),
        "description": "app=streams: what the Kafka Streams app does. id-assignment: a stable id per key "
                       "(the KAFKA-14172/14624 reproductions); workflow: a workflow engine whose executions "
                       "run parallel tasks through a worker role (the workflow-rollback reproduction); "
                       "aggregate: a count and a sum per key in a RocksDB store (tables judged by the aggregate "
                       "contract); repartition: the same aggregation behind an internal repartition topic."}),
    "workflow_designs": Declared(["ktable-self-join"], reference=True, schema={
        "type": "array", "items": {"type": "string", "enum": list(WORKFLOW_DESIGNS)},
        "minItems": 1, "uniqueItems": True,
        "description": "topology=workflow: how the engine keeps its executions. ktable-self-join: "
                       "read back as a KTable of the topic it writes (the original's); "
                       "single-writer: one processor's store. Two designs run side by side as a "
                       "matrix, each with its own verdict."}),
    "parallel_tasks": Declared(3, reference=True, schema={
        "type": "integer", "minimum": 1, "maximum": 64,
        "description": "topology=workflow: tasks every execution runs at once; their results "
                       "arrive concurrently."}),
    "threads": Declared(1, reference=True, schema={
        "type": "integer", "minimum": 1, "maximum": 32,
        "description": "app=streams: stream threads per instance (num.stream.threads)."}),
    "acceptable_recovery_lag": Declared(10_000, reference=True, schema={
        "type": "integer", "minimum": 0, "maximum": 2**63 - 1,
        "description": "app=streams: acceptable.recovery.lag, the changelog lag below which "
                       "an instance counts as caught up and may take an active task at once."}),
    "max_warmup_replicas": Declared(2, reference=True, schema={
        "type": "integer", "minimum": 1, "maximum": 64,
        "description": "app=streams: max.warmup.replicas, extra replicas warming up for a task "
                       "that moves."}),
    "commit_interval_ms": Declared(100, {
        "type": "integer", "minimum": 1, "maximum": 600_000,
        "description": "How often the app commits (each commit is a transaction under EOS): Kafka "
                       "Streams' commit.interval.ms with app=streams; the reference worker keeps "
                       "its transaction open across polls for as long."}),
    "state_write_bytes": Declared(0, reference=True, schema={
        "type": "integer", "minimum": 0, "maximum": 1_000_000,
        "description": "app=streams: bytes of a random string every input record writes to an "
                       "uncached, changelogged store of its own, as the quota reproduction's "
                       "topology does (its Streams producer then writes about this many bytes per "
                       "record); 0 = no such store."}),
    "rocksdb_write_buffer_bytes": Declared(0, reference=True, schema={
        "type": "integer", "minimum": 0, "maximum": 1 << 30,
        "description": "app=streams: the write buffer (memtable) of every RocksDB store, in bytes; a small one "
                       "flushes a store's writes to its files within a few records. 0: Kafka Streams' default "
                       "(16 MiB)."}),
    "standbys": Declared(0, reference=True, schema={
        "type": "integer", "minimum": 0, "maximum": 8,
        "description": "Standby replicas: Kafka Streams' num.standby.replicas with app=streams; the reference "
                       "worker keeps 0 or 1 (1 = an instance keeps a warm copy of every partition it loses by "
                       "tailing its changelog; 0 = state is restored on the next assignment)."}),
    "cache_entries": Declared(1000, reference=True, schema={
        "type": "integer", "minimum": 0, "maximum": 10_000_000,
        "description": "Entries of the write-back cache per partition store (flushed to the store and "
                       "changelog at each commit); 0 disables caching. app=streams: the instance's "
                       "statestore.cache.max.bytes is cache_entries x partitions x 2 stores x 128 B."}),
    "phases": Declared([], {
        "type": "array", "maxItems": MAX_STEPS, "items": {
            "type": "object", "additionalProperties": False, "required": ["records"],
            "properties": {"records": {"type": "integer", "minimum": 1, "maximum": 100_000_000},
                           "at_s": {"type": "number", "minimum": 0, "maximum": MAX_RUN_S},
                           "after_step": {"type": "integer", "minimum": 0, "maximum": MAX_STEPS - 1},
                           "rate": {"type": "number", "minimum": 0, "maximum": MAX_RATE}},
            "oneOf": [{"required": ["at_s"]}, {"required": ["after_step"]}]},
        "description": "Load in bursts tied to the program: [{\"records\": N, \"at_s\": S | \"after_step\": I, "
                       "\"rate\": R}], produced in order; at_s counts from the first step, after_step waits until "
                       "step I (0-based) was applied, rate 0 = full speed. The records of all phases must add up to "
                       "`records`. Empty: one steady phase over the whole program at `rate`."}),
    "rate": Declared(0, {
        "type": "number", "minimum": 0, "maximum": MAX_RATE,
        "description": "Records/s produced; 0 spreads the records evenly over the program. The load may "
                       "last at most 7 days."}),
    "payload_bytes": Declared(0, {
        "type": "integer", "minimum": 0, "maximum": 1_000_000,
        "description": "Size of each record's payload field; a record, payload included, must stay within the "
                       "1,000,000 bytes Kafka's clients take by default."}),
    "bug": Declared("none", reference=True, schema={
        "type": "string", "enum": list(BUGS),
        "description": "A bug switch of the reference app, to prove the checker catches it."}),
    "bug_every": Declared(1000, reference=True, schema={
        "type": "integer", "minimum": 1, "maximum": 100_000_000,
        "description": "The switches drop/duplicate act on every input id divisible by this."}),
    "crash_probability": Declared(0, reference=True, schema={
        "type": "number", "minimum": 0, "exclusiveMaximum": 1,
        "description": "app=worker: the chance, per input record, that an instance exits "
                       "ungracefully (no commit, no abort: the broker times its open transaction "
                       "out), as the workers of the crashing-workers reproduction do; 0 = never. "
                       "Pair it with restart 'on-failure'."}),
    "restart": Declared("never", {
        "type": "string", "enum": list(RESTART_POLICIES),
        "description": "runtime=local: what happens to an instance that exits by itself (not a stop or kill "
                       "of the program): never = it stays down; on-failure = started again after a backoff, "
                       "as Kubernetes or Compose restart a crashed container. Each exit and restart is on "
                       "the report's time axis and in the app-health counts."}),
    "session_timeout_ms": Declared(45_000, reference=True, schema={
        "type": "integer", "minimum": 6000, "maximum": 300_000,
        "description": "The reference app's group consumer's session.timeout.ms (the worker's "
                       "consumer; the Kafka Streams app's main consumer, heartbeating every third "
                       "of it): how long the group waits for an instance that stopped "
                       "heartbeating (crashed, killed, paused; a Kafka Streams instance that "
                       "closed, as it does not leave the group) before it hands its partitions "
                       "to the others; within the broker's group.min/max.session.timeout.ms."}),
    "restart_backoff_s": Declared(1, {
        "type": "number", "minimum": 0.1, "maximum": 60,
        "description": "restart=on-failure: the first backoff; it doubles with each consecutive "
                       "failure up to 30 s and starts over after 30 s of running."}),
    "seed": Declared(0, {
        "type": "integer", "minimum": 0, "maximum": 2**63 - 1,
        "description": "Seed of the random program, the payloads and the reference worker's crash draws "
                       "(crash_probability; new for each instance, step and restart)."}),
    "health_allowance": Declared(0, {
        "type": "integer", "minimum": 0, "maximum": 1_000_000,
        "description": "App-health incidents a run tolerates before anomaly app_health fails it: "
                       "instance exits nobody asked for plus error-level log events of the app "
                       "(stream thread deaths included)."}),
    "drain_timeout_s": Declared(180, {
        "type": "integer", "minimum": 10, "maximum": 86_400,
        "description": "How long the drain waits for the app to catch up. Then the run is judged on "
                       "what the app committed: the input past its group's committed offsets is "
                       "unprocessed, and a lagging partition whose committed offset has not moved "
                       "for stall_timeout_s is stalled."}),
    "stall_timeout_s": Declared(120, {
        "type": "integer", "minimum": 10, "maximum": 86_400,
        "description": "How long a partition's committed offset may stay put while records remain "
                       "before a drain that times out calls it stalled (the whole drain, if "
                       "shorter); one that moved but did not finish is a backlog (unprocessed)."}),
    "allow_backlog": Declared(False, {
        "type": "boolean",
        "description": "Whether input the app had not committed when the drain ended (anomaly "
                       "unprocessed) is counted and shown without failing the run, for a scenario that "
                       "expects lag to grow (a quota); a stalled partition fails the run either way."}),
    "backend": Declared("local", deployer=True, schema={
        "type": "string", "enum": list(BACKENDS),
        "description": "Where the run's Kafka is: local (Apache Kafka kafka_version started by the run as "
                       "JVM processes on this machine, no Docker), docker (an Apache Kafka container per "
                       "run, image kafka_image) or external (an existing cluster from the Airflow "
                       "connection kafka_conn_id)."}),
    "runtime": Declared("local", deployer=True, schema={
        "type": "string", "enum": ["local", "docker"],
        "description": "Where app instances run: local processes, or docker containers of app_image."}),
    "kafka_conn_id": Declared("kafka_default", deployer=True, schema={
        "type": "string", "minLength": 1,
        "description": "backend=external: Airflow connection of type kafka whose extra is the client "
                       "config (bootstrap.servers, SASL/SSL settings)."}),
    "kafka_image": Declared(DEFAULT_KAFKA_IMAGE, deployer=True, schema={
        "type": "string", "minLength": 1,
        "description": "backend=docker: the broker image."}),
    "keep_topics": Declared(False, deployer=SHARED, schema={
        "type": "boolean",
        "description": "backend=external: keep the run's topics after the run instead of deleting them (only the "
                       "deployment sets it: kept topics stay on the shared cluster)."}),
    "quotas": Declared([], deployer=SHARED, schema={
        "type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["client_id"],
            "properties": {"client_id": {"type": "string", "minLength": 1},
                           "producer_byte_rate": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
                           "consumer_byte_rate": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
                           "request_percentage": {"type": "number", "exclusiveMinimum": 0, "maximum": 100_000}},
            "anyOf": [{"required": ["producer_byte_rate"]}, {"required": ["consumer_byte_rate"]},
                      {"required": ["request_percentage"]}]},
        "description": "Client quotas for the run, e.g. [{\"client_id\": \"my-app-StreamThread-1-producer\", "
                       "\"producer_byte_rate\": 35000}]; verified after setting; release puts back what each client "
                       "id had before. On the run's own broker a quota must name a client of the reference app: the "
                       "worker's producer is <app_id>-<instance>-producer, the Kafka Streams app's "
                       "<app_id>-<instance>-StreamThread-<thread>-producer (<app_id>: <dag_id>-app, "
                       "<dag_id>-app-<version> in a matrix; write {app_id} for it: a quota per application id)."}),
    "app_image": Declared("", deployer=True, schema={
        "type": "string",
        "description": "runtime=docker: image of the app under test; empty = the reference app, "
                       "kafka-soak-worker:latest (make worker-image)."}),
    "app_command": Declared([], deployer=True, schema={
        "type": "array", "items": {"type": "string"},
        "description": "Command of the app under test, with {bootstrap_servers}, {app_id}, {instance}, "
                       "{step}, {input_topic}, {output_topic}, {changelog_topic}, {assertions_topic} "
                       "filled in (also given as SOAK_* environment variables). Empty = the reference app."}),
    "app_profile": Declared({}, deployer=True, schema={
        "type": "object",
        "description": "A team's own app under test, described once (docs/own-app.md): name, command "
                       "(with {properties_file} and {topic:NAME} placeholders), group_id, "
                       "client_properties, topics, inputs (the app's own key and value formats) and outputs "
                       "(each with its contract: one-to-one, aggregate or none). Empty = a reference app "
                       "(param app) or app_command."}),
    "app_env": Declared({}, deployer=True, schema={
        "type": "object", "additionalProperties": {"type": "string"},
        "description": "runtime=docker: extra environment of the app's containers."}),
    "docker_url": Declared(DEFAULT_DOCKER_URL, deployer=True, schema={
        "type": "string", "minLength": 1,
        "description": "The Docker engine (local socket or tcp://host:2376) for runtime/backend docker."}),
    "docker_conn_id": Declared("", deployer=True, schema={
        "type": "string",
        "description": "Airflow docker connection to log in to a registry before pulling; empty = none."}),
}

# The JSON Schema draft the schemas are written in, named in each: Airflow checks a param's schema against its draft's
# meta-schema at every validation (each task of a run, each DAG serialized), and the default, 2020-12, costs about
# four times draft-07's there (the six scenario DAGs serialized in 1.95 CPU-s, now 0.55: bench/notes.md). Every keyword
# above means the same in both drafts.
SCHEMA_DRAFT = "http://json-schema.org/draft-07/schema#"
PARAM_SCHEMAS = {name: {"$schema": SCHEMA_DRAFT, **p.schema} for name, p in PARAMS.items()}
DEFAULTS = {name: p.default for name, p in PARAMS.items()}
DEPLOYER_ONLY = tuple(name for name, p in PARAMS.items() if p.deployer)
REFERENCE_ONLY = tuple(name for name, p in PARAMS.items() if p.reference)
WHERE_DEPLOYER_SETS = ("the scenario file (dags/scenarios/<dag_id>.yaml), SOAK_PARAM_DEFAULTS, or a value listed for it "
                       "in SOAK_TRIGGER_ALLOW")
PLACEHOLDERS = ("bootstrap_servers", "app_id", "instance", "step", "input_topic", "output_topic", "changelog_topic",
                "assertions_topic")


class ParamsError(ValueError):
    """Params that cannot run; the message lists every problem."""


@dataclass(frozen=True)
class RunPlan:
    """Resolved params of one run, each by its name (``plan.records``; ``as_dict()`` is what tasks pass on): the
    program as tokens (and ``program_source``: "given" or "random(seed=N)"), the load as phases with their id ranges
    (each: records, first_id, rate, and at_s or after_step), a profile as ``profile.Profile.as_dict()``."""

    values: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values", {})
        if name not in values:
            raise AttributeError(f"RunPlan has no param {name!r}")
        return values[name]

    @property
    def program_duration_s(self) -> float:
        return programs.duration_s(self.program, self.interval_s)

    def as_dict(self) -> dict[str, Any]:
        """A copy to pass on (nested lists and objects too: a caller's change reaches neither the plan nor DEFAULTS)."""
        return copy.deepcopy(self.values)


def resolve_phases(values: dict[str, Any], steps: int, rate: float) -> tuple[list[dict[str, Any]], list[str]]:
    """The generator's phases with their id ranges, and the problems found (the caller reports them)."""
    given = values["phases"] or [{"records": values["records"], "at_s": 0, "rate": rate}]
    errors = []
    total = sum(p["records"] for p in given)
    if total != values["records"]:
        errors.append(f"phases: their records add up to {total} but param records is {values['records']}; "
                      "make them equal")
    phases, first_id = [], 1
    for n, phase in enumerate(given, start=1):
        if phase.get("after_step") is not None and phase["after_step"] >= steps:
            errors.append(f"phases: phase {n} waits for step {phase['after_step']} but the program has {steps} "
                          f"steps (0..{steps - 1})")
        phases.append({**phase, "rate": float(phase.get("rate", 0)), "first_id": first_id})
        first_id += phase["records"]
    return phases, errors


def check(params: dict[str, Any], app_id: str | None = None) -> RunPlan:
    """Resolve ``params`` into a plan for a backend, or raise ``ParamsError`` naming each bad param. With the run's
    ``app_id``, quotas on the run's own broker must name a client of the app under test."""
    values = {name: whole_numbers(value, PARAM_SCHEMAS[name])
              for name, value in {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}.items()}
    errors = []
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        errors.append(f"unknown params {unknown}; known: {sorted(DEFAULTS)}")
    infinite = [f"{name}: must be a finite number (got {value})" for name, value in numbers(values)
                if not math.isfinite(value)]
    if infinite:  # NaN passes every minimum and maximum of the schema; nothing below can work with it
        raise ParamsError("; ".join(errors + infinite))
    raw = values["program"]
    source = "given"
    program: list[str] = []
    if raw in ("", [], None):
        program = programs.random_program(values["seed"], values["instances"])
        source = f"random(seed={values['seed']})"
    else:
        try:
            program = programs.parse(raw, values["instances"], values["brokers"])
        except programs.ProgramError as exc:
            errors.append(str(exc))
    duration = max(len(program), 1) * float(values["interval_s"])
    rate = float(values["rate"]) or values["records"] / duration
    phases, phase_errors = resolve_phases(values, len(program), rate)
    errors.extend(phase_errors if program else [])
    if program and duration > MAX_RUN_S:
        errors.append(f"interval_s: {len(program)} steps every {values['interval_s']} s last "
                      f"{duration / 86_400:.1f} days; a run's program may last {MAX_RUN_S // 86_400} days at most")
    errors.extend(load_errors(values, phases, duration, rate) if program else [])
    errors.extend(app_errors(values))
    errors.extend(deployment_errors(values, program))
    if values["app_profile"]:
        try:
            values["app_profile"] = profiles.parse(values["app_profile"], values["partitions"], values["backend"],
                                                   values["runtime"], PLACEHOLDERS).as_dict()
        except profiles.ProfileError as exc:
            errors.append(str(exc))
    if errors:
        raise ParamsError("; ".join(errors))
    if not values["app_profile"]:  # from here on the run knows its app by its profile alone
        values["app_profile"] = reference.profile(values, app_id or UNNAMED_APP_ID).as_dict()
    errors.extend(record_size_errors(values))
    if app_id:
        values["quotas"] = expand_quotas(values)
        errors.extend(quota_errors(values))
    if errors:
        raise ParamsError("; ".join(errors))
    return RunPlan({**copy.deepcopy(values), "program": program, "program_source": source,
                    "interval_s": float(values["interval_s"]), "phases": phases, "rate": rate,
                    "crash_probability": float(values["crash_probability"]),
                    "restart_backoff_s": float(values["restart_backoff_s"])})


def load_errors(values: dict[str, Any], phases: list[dict[str, Any]], program_s: float, rate: float) -> list[str]:
    """The load bounded as a whole, not field by field: its rate, how long it lasts (every phase one after the
    other, after the program), and the bytes it writes."""
    errors = []
    if not values["rate"] and not values["phases"] and rate > MAX_RATE:
        errors.append(f"records: {values['records']} over the program's {program_s:g} s is {rate:,.0f} records/s; at "
                      f"most {MAX_RATE:,} (set rate, or lengthen the program)")
    timed = [p for p in phases if p["rate"]] if values["phases"] or values["rate"] else []
    producing = sum(p["records"] / p["rate"] for p in timed)
    if program_s + producing > MAX_RUN_S:
        what = (f"phases: their {sum(p['records'] for p in timed)} records at their rates" if values["phases"]
                else f"rate: {values['records']} records at {rate:g} records/s")
        errors.append(f"{what} take {producing / 86_400:.1f} days after a program of {program_s:g} s; a run's load "
                      f"may last {MAX_RUN_S // 86_400} days at most; raise the rate or lower the records")
    written = input_bytes(values)
    if written > MAX_INPUT_BYTES:
        errors.append(f"records: {values['records']} records of about {RECORD_OVERHEAD_BYTES + values['payload_bytes']} "
                      f"bytes (payload_bytes {values['payload_bytes']}) make {written / 2**30:.1f} GiB of input; a run "
                      f"writes at most {MAX_INPUT_BYTES // 2**30} GiB (lower records or payload_bytes)")
    return errors


def record_size_errors(values: dict[str, Any]) -> list[str]:
    """One input record, in the app's input format, must be one Kafka takes by default."""
    if not values["payload_bytes"]:
        return []
    app = profiles.Profile.of(values["app_profile"])
    size = generator.largest_record_bytes(values["records"], values["keys"], values["payload_bytes"], app.input.key,
                                          app.input.value, values["partitions"])
    if size + generator.FRAMING_BYTES <= generator.MESSAGE_MAX_BYTES:
        return []
    return [f"payload_bytes: {values['payload_bytes']} makes the input's largest record {size:,} bytes; Kafka's "
            f"clients take at most {generator.MESSAGE_MAX_BYTES:,} bytes a record, framing included (librdkafka's "
            "message.max.bytes; the brokers' max.message.bytes is 1,048,588): lower payload_bytes"]


def input_bytes(values: dict[str, Any]) -> int:
    """About how many bytes the generator writes (keys, JSON fields and payload per record)."""
    return values["records"] * (RECORD_OVERHEAD_BYTES + values["payload_bytes"])


def deployer_only(name: str, backend: str) -> bool:
    """Whether only the deployment sets param ``name`` of a run on ``backend``: quotas and kept topics on a shared
    (external) cluster reach other people's clients and stay; on the run's own broker they shape the soak."""
    declared = PARAMS[name].deployer if name in PARAMS else False
    return declared is True or (declared == SHARED and backend == "external")


def trigger_errors(conf: dict[str, Any], deployed: dict[str, Any], allow: dict[str, list[Any]]) -> list[str]:
    """A trigger conf's changes to what only the deployment may set (``deployed``: the DAG's param defaults;
    ``allow``: values the deployment lets a trigger choose, per param)."""
    errors = []
    for name in DEPLOYER_ONLY:
        if name not in conf or conf[name] == deployed.get(name) or conf[name] in allow.get(name, []):
            continue
        if not deployer_only(name, conf.get("backend", deployed.get("backend", DEFAULTS["backend"]))):
            continue  # judged by the backend the run will use: a trigger that may choose external gets its rules
        errors.append(f"{name}: decides what runs where or with which credentials, so only whoever deploys the suite "
                      f"sets it: in {WHERE_DEPLOYER_SETS}; a trigger conf may not change it")
    return errors


def split(conf: dict[str, Any], backend: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what only the deployment sets, the rest) of a run on ``backend``: how the CLI, run by whoever owns the
    machine, passes each part (the rest as a trigger conf, which overrides a scenario file's defaults)."""
    deployment = {k: v for k, v in conf.items() if deployer_only(k, backend)}
    return deployment, {k: v for k, v in conf.items() if k not in deployment}


STREAMS_ONLY = ("state_write_bytes", "rocksdb_write_buffer_bytes")  # stores of the Kafka Streams app alone
# Kafka Streams settings the run decides for every app it runs (a variant may not change them).
RUN_STREAMS_CONFIG = ("application.id", "bootstrap.servers", "client.id", "state.dir", "processing.guarantee",
                      "group.protocol")


def streams_config_errors(where: str, config: dict[str, Any]) -> list[str]:
    """Kafka Streams settings of the run's (param streams_config) or a control's: any but the run's own, each a value
    the app's ``--config`` can carry."""
    errors = []
    for key, value in config.items():
        if key in RUN_STREAMS_CONFIG:
            errors.append(f"{where} {key!r} is the run's to set (allowed: any other Kafka Streams setting"
                          + ("; the rebalance protocol is param group_protocol)" if key == "group.protocol" else ")"))
        elif any(c in str(value) for c in ";\n="):
            errors.append(f"{where} {key!r}: {value!r} holds ';', '=' or a line break")
    return errors


def release_of(version: str) -> tuple[int, int]:
    """A release's major and minor number (``4.3.1`` -> (4, 3))."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def broker_versions(values: dict[str, Any]) -> tuple[str, list[str]]:
    """The Apache Kafka releases a local run starts, and the param that names them."""
    if values["kafka_versions"]:
        return "kafka_versions", list(values["kafka_versions"])
    return "kafka_version", [values["kafka_version"]]


def streams_app_errors(values: dict[str, Any]) -> list[str]:
    """The reference apps' client settings: the Kafka Streams app's own (streams_config), and a rebalance protocol
    only where both the app and the brokers speak it (consumer for the worker, streams for Kafka Streams)."""
    streams = values["app"] == "streams" and not values["app_command"]
    protocol = values["group_protocol"]
    if (values["streams_config"] or protocol == "streams") and not streams:
        name = "streams_config" if values["streams_config"] else "group_protocol"
        return [f"{name}: a setting of the Kafka Streams reference app (set app to 'streams' and leave app_command "
                "empty)"]
    if protocol == "consumer" and (values["app"] != "worker" or values["app_command"]):
        return ["group_protocol: 'consumer' (KIP-848) is the reference worker's (app 'worker', no app_command); "
                "Kafka Streams takes 'streams'"]
    errors = streams_config_errors("streams_config:", values["streams_config"])
    if protocol == "consumer" and values["session_timeout_ms"] != DEFAULTS["session_timeout_ms"]:
        errors.append("group_protocol: under 'consumer' the brokers, not the app, set session_timeout_ms (the "
                      "group's consumer session timeout): leave session_timeout_ms at the default, or use "
                      "group_protocol 'classic'")
    if protocol == "streams":
        since = ".".join(map(str, STREAMS_PROTOCOL_SINCE))
        old = [v for v in values["streams_versions"] or [values["streams_version"]]
               if release_of(v) < STREAMS_PROTOCOL_SINCE]
        if old:
            errors.append(f"group_protocol: 'streams' needs Kafka Streams {since} or later (KIP-1071 is generally "
                          f"available from {since}; 4.1 had it as early access only): not {', '.join(old)}")
        name, versions = broker_versions(values)
        old = [v for v in versions if release_of(v) < STREAMS_PROTOCOL_SINCE]
        if values["backend"] == "local" and old:
            errors.append(f"group_protocol: 'streams' needs brokers of Apache Kafka {since} or later, whose "
                          f"streams.version feature is 1: {name} {', '.join(old)} has not")
        brokers_set = [name for name in ("standbys", "session_timeout_ms") if values[name] != DEFAULTS[name]]
        if brokers_set:  # the app's num.standby.replicas and session.timeout.ms would be ignored without a word
            errors.append(f"group_protocol: under 'streams' the brokers, not the app, set {' and '.join(brokers_set)} "
                          "(the group's streams.num.standby.replicas and streams.session.timeout.ms): leave "
                          f"{' and '.join(brokers_set)} at the default, or use group_protocol 'classic'")
    return errors


def variant_errors(values: dict[str, Any]) -> list[str]:
    """Controls run beside each version of the Kafka Streams reference app, with settings of their own."""
    if values["app"] != "streams" or values["app_command"]:
        return ["variants: run beside the Kafka Streams reference app (set app to 'streams' and leave app_command "
                "empty)"]
    if len(values["workflow_designs"]) > 1:
        return ["variants: a run compares either designs of the workflow engine or variants, not both"]
    names = [v["name"] for v in values["variants"]]
    errors = [f"variants: {names} names a variant twice"] if len(set(names)) != len(names) else []
    for variant in values["variants"]:
        errors.extend(streams_config_errors(f"variants: {variant['name']}: streams_config", variant.get("streams_config", {})))
    return errors


def app_errors(values: dict[str, Any]) -> list[str]:
    """Settings the chosen app does not have."""
    if values["app_profile"]:
        return profile_errors(values)
    if values["streams_versions"] and (values["app"] != "streams" or values["app_command"]):
        return ["streams_versions: a version matrix runs the Kafka Streams reference app (set app to 'streams' and "
                "leave app_command empty)"]
    errors = streams_app_errors(values) + (variant_errors(values) if values["variants"] else [])
    if errors:
        return errors
    if values["topology"] != "id-assignment" and (values["app"] != "streams" or values["app_command"]):
        return [f"topology: {values['topology']!r} is a topology of the Kafka Streams reference app (set app to "
                "'streams' and leave app_command empty)"]
    if len(values["workflow_designs"]) > 1 and values["topology"] != "workflow":
        return ["workflow_designs: compares designs of the workflow engine (set topology to 'workflow')"]
    if len(values["workflow_designs"]) > 1 and values["streams_versions"]:
        return ["workflow_designs: a run compares either designs or Kafka Streams versions (streams_versions), not "
                "both: leave one of them with a single value"]
    if values["topology"] != "id-assignment" and values["state_write_bytes"]:
        return [f"state_write_bytes: is a store of the id-assignment topology; the {values['topology']} topology has "
                "none"]
    if values["crash_probability"] and (values["app"] != "worker" or values["app_command"]):
        return [f"crash_probability: {values['crash_probability']:g} makes the reference worker crash itself (app "
                "'worker', no app_command); another app has no such switch: crash it with the program's kN steps"]
    if values["app_command"]:
        return []
    if values["app"] == "worker" and values["standbys"] > 1:
        return [f"standbys: the reference worker keeps 0 or 1 standby replicas (got {values['standbys']}); "
                "app=streams takes any number"]
    if values["app"] == "streams" and values["bug"] != "none":
        return [f"bug: {values['bug']!r} is a switch of the reference worker (app=worker); app=streams runs Kafka "
                "Streams as released (leave bug at 'none')"]
    if values["app"] == "worker" and (setting := next((name for name in STREAMS_ONLY if values[name]), "")):
        return [f"{setting}: is a setting of the Kafka Streams app (app=streams); the reference worker has no "
                "such store"]
    return []


def profile_errors(values: dict[str, Any]) -> list[str]:
    """What a run of a team's own app (``app_profile``) cannot also be given: another app, or settings that only the
    reference apps read."""
    errors = [f"{name}: the app_profile's command starts the app under test; leave {name} empty"
              for name in ("app_command", "app_image") if values[name]]
    errors += [f"{name}: is a setting of the reference apps (got {values[name]!r}); a profile's app takes its settings "
               "from app_profile.client_properties (Kafka Streams' num.standby.replicas, statestore.cache.max.bytes, "
               "session.timeout.ms, ...)" for name in REFERENCE_ONLY if values[name] != DEFAULTS[name]]
    return errors


def expand_quotas(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The quotas with ``{app_id}`` in a client id made one per application id of the run (each version of a matrix
    has its own), so a scenario names its app's clients without knowing which versions a trigger compares."""
    expanded = []
    for quota in values["quotas"]:
        if APP_ID in quota["client_id"]:
            expanded += [{**quota, "client_id": quota["client_id"].replace(APP_ID, app)}
                         for app in subjects.quoted_app_ids(values)]
        else:
            expanded.append(quota)
    return expanded


def quota_errors(values: dict[str, Any]) -> list[str]:
    """A quota on the run's own broker throttles the app under test: one that names none of the clients the suite
    knows its app has would throttle nothing (an external cluster's quotas are its deployer's to choose; a team's
    app's clients are its own)."""
    known = subjects.client_ids(values) if values["backend"] != "external" else None
    if known is None:
        return []
    app = subjects.profile(values).title_or_name
    return [f"quotas: client_id {q['client_id']!r} is no client of the app under test ({app}, "
            f"{values['instances']} instances); its clients are {', '.join(known[:6])}"
            + (f" and {len(known) - 6} more of the same pattern" if len(known) > 6 else "")
            for q in values["quotas"] if q["client_id"] not in known]


def deployment_errors(values: dict[str, Any], program: list[str]) -> list[str]:
    """Backend/runtime params that contradict each other or the program."""
    errors = []
    backend, runtime = values["backend"], values["runtime"]
    if backend != "local":
        broker_ops = [t for t in program if t.startswith("b")]
        if broker_ops:
            errors.append(f"program: {broker_ops} kill and restart brokers, which only backend 'local' can do "
                          f"(backend is {backend!r})")
        if values["brokers"] != 1:
            errors.append(f"brokers: {values['brokers']} brokers are for backend 'local'; backend {backend!r} "
                          "has its own (leave brokers at 1)")
        if values["kafka_versions"]:
            errors.append(f"kafka_versions: a broker version matrix starts a cluster of each release, which only "
                          f"backend 'local' can do (backend is {backend!r}); leave kafka_versions empty")
        if values["transaction_version"] is not None:
            errors.append(f"transaction_version: {values['transaction_version']} is set when backend 'local' formats "
                          f"its brokers' storage; backend {backend!r} has its own features (leave transaction_version "
                          "empty)")
    if runtime != "local" and values["restart"] != "never":
        errors.append(f"restart: {values['restart']!r} is the local runtime's restart policy; runtime {runtime!r} has "
                      "none yet (leave restart at 'never')")
    if runtime != "docker":
        for name in ("app_image", "app_env"):
            if values[name]:
                errors.append(f"{name}: is for runtime 'docker' (runtime is {runtime!r})")
    errors.extend(f"app_command: {part!r} {problem}; allowed: " + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                  + " as they are, without format spec or conversion (write {{ and }} for braces)"
                  for part in values["app_command"] if (problem := profiles.placeholder_problem(part, PLACEHOLDERS)))
    return errors


def whole_numbers(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` with each integral float made an int where its schema asks for an integer: JSON Schema counts 3.0
    as an integer, and what the plan feeds (``range``, Kafka's configs, the generator's ids) does not."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if isinstance(value, float) and "integer" in kinds and "number" not in kinds and value.is_integer():
        return int(value)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [whole_numbers(item, schema["items"]) for item in value]
    if isinstance(value, dict) and "properties" in schema:
        return {key: whole_numbers(item, schema["properties"].get(key, {})) for key, item in value.items()}
    return value


def numbers(value: Any, name: str = "") -> list[tuple[str, float]]:
    """Every float in the params (inside lists and objects too), with the param it belongs to."""
    if isinstance(value, float):
        return [(name, value)]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in numbers(item, name or key)]
    if isinstance(value, list):
        return [pair for item in value for pair in numbers(item, name)]
    return []
