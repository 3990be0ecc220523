"""A soak run's parameters, each declared once: its default, its JSON Schema for Airflow's trigger form and the CLI, and
who may set it.

``PARAMS`` holds the declarations; ``PARAM_SCHEMAS``, ``DEFAULTS`` and the audience lists are derived from it. This
module imports nothing of the project, so an Airflow parsing the DAG or a CLI checking a conf reads the params without
loading an implementation; the checks that span several params, and the plan they resolve to, are ``run_plan``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The facts the declarations below state, at home here: the implementations read them from this module, which imports
# nothing of the project (tests/unit/airflow_side/test_package.py checks), so declaring the params loads no
# implementation.
BACKENDS = ("local", "docker", "external")
KAFKA_VERSION = "4.3.1"  # the newest Apache Kafka release Maven Central serves
STREAMS_VERSION = "4.3.1"  # the newest Kafka Streams release Maven Central serves
KAFKA_IMAGE = "apache/kafka:4.1.0"  # backend docker
DOCKER_URL = "unix:///var/run/docker.sock"  # the Docker engine of runtime and backend docker
# Apache Kafka's KRaft releases from 3.5 on (KRaft is production ready from 3.3; 3.5 is the oldest line the known bugs
# of transactions and upgrades need), on Java 17, with the storage tool and config names the local backend writes. A
# whole-string pattern in Python and in a browser alike: "$" lets Python's re accept a trailing newline, "\d" any
# script's digits; "(?![\s\S])" is the string's true end in both.
KAFKA_VERSION_PATTERN = r"^(3\.[5-9]|4\.[0-9]+)\.[0-9]+(?![\s\S])"
# Kafka Streams 3.3 is the first release whose KStream#process takes the Processor API the workflow topology's
# processors use (exactly_once_v2 and the metadata API the app logs its tasks with came in 3.0).
STREAMS_VERSION_PATTERN = r"^(3\.([3-9]|[1-9][0-9])|[4-9]\.[0-9]+)\.[0-9]+(?![\s\S])"
# A confluent-kafka release the reference worker runs on (param worker_versions): whether PyPI serves it as a wheel for
# this Python is checked when its virtualenv is built, before the run starts.
WORKER_VERSION_PATTERN = r"^[0-9]+\.[0-9]+\.[0-9]+(?![\s\S])"
MAX_WORKER_VERSIONS = 4  # side by side on two cores, as streams_versions
# reference: the suite's worker (commits the offsets it processed); example: what confluent-kafka's
# examples/eos_transactions.py does (commits the consumer's position(), partition EOF on).
WORKER_STYLES = ("reference", "example")
# The faults the reference worker can plant (its --bug); those of the Kafka Streams app (its --bug): STREAMS_BUGS.
BUGS = ("none", "skip-restore", "stale-cache", "drop", "duplicate", "revoke-no-offsets", "leak")
STREAMS_BUGS = ("none", "leak")  # leak: an iterator over a state store opened per record, never closed (id-assignment)
# One mapped program_step task per step: Airflow maps at most [core] max_map_length (1024) task instances.
MAX_STEPS = 1024
# The fault kinds a random program draws from (param random_program; faults.kinds.DRAWN, which a unit test holds equal).
RANDOM_FAULTS = ("toggle", "kill", "stall", "pause", "broker", "instance-cut", "broker-cut")
MAX_PARTITIONS = 256  # of any topic of a run (param partitions, a profile's topics)
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

# Anomaly resource_growth's bounds, per resource of shared/resources.JUDGED (MB, threads, file descriptors): a healthy
# JVM app fills its caches, JIT and pools in its first minutes, so the warm-up is long and the bounds are a leak's.
GROWTH_DEFAULTS = {"warmup_s": 600, "per_hour": {"rss_mb": 200, "heap_mb": 100, "threads": 30, "fds": 100},
                   "total": {"rss_mb": 100, "heap_mb": 50, "threads": 10, "fds": 50}, "brokers": False}
GROWTH_BOUNDS_SCHEMA = {"type": "object", "additionalProperties": False,
                        "properties": {r: {"type": "number", "minimum": 0} for r in ("rss_mb", "heap_mb", "threads", "fds")}}


def growth_bounds(given: dict[str, Any]) -> dict[str, Any]:
    """Param resource_growth whole, as the plan and the checker take it: what it leaves out keeps its default."""
    return {**GROWTH_DEFAULTS, **given, **{k: {**GROWTH_DEFAULTS[k], **given.get(k, {})} for k in ("per_hour", "total")}}


PARAMS: dict[str, Declared] = {
    "program": Declared("1 2 1", {
        "type": ["string", "array"], "items": {"type": ["integer", "string"]}, "maxItems": MAX_STEPS,
        "maxLength": 8 * MAX_STEPS,
        "description": "One operation per step: N toggles instance N (\"1 2 1\" = start 1, start 2, stop 1), "
                       "0 = no-op, kN = kill -9, pN/rN = pause/resume (SIGSTOP/SIGCONT), sN@POINT:SECONDS = the "
                       "first thread of instance N at POINT (commit, process, or a JVM app's Class#method) stalls "
                       "for SECONDS while the rest of it runs (sbN@append:SECONDS: a thread of broker N as it "
                       "appends a transaction's records), bN-/bN+ = broker N down/up, nN-/nN+ = instance N's "
                       "network to the brokers cut/healed, nbN-/nbN+ = broker N cut from the other brokers/healed "
                       "(backend=local), bN^V = broker N restarts on Apache Kafka release V, N^V = instance N "
                       "restarts on app version V (a rolling upgrade's steps), wN = wait until instance N is at "
                       "work (Kafka Streams RUNNING, the reference worker's first assignment), wr = until the app's "
                       "group is rebalancing (the later steps move with a wait). Empty: a random program from "
                       "`seed`, stored with the run for replay."}),
    "interval_s": Declared(10, {
        "type": "number", "minimum": 1, "maximum": 3600,
        "description": "Seconds between two program steps (a step after a wait, wN or wr, that held the program comes "
                       "as much later)."}),
    "records": Declared(20_000, {
        "type": "integer", "minimum": 1, "maximum": 100_000_000,
        "description": "Input records the generator produces while the program runs: at most 1,000,000 "
                       "records/s and 16 GiB of input (records x (payload_bytes + ~120 bytes)) per run, "
                       "and it must fit in the runs directory's free space."}),
    "keys": Declared(500, {
        "type": "integer", "minimum": 1, "maximum": 10_000_000,
        "description": "Distinct entity keys the records cycle over."}),
    "partitions": Declared(4, {
        "type": "integer", "minimum": 1, "maximum": MAX_PARTITIONS,
        "description": "Partitions of the input, output and changelog topics."}),
    "instances": Declared(3, {
        "type": "integer", "minimum": 1, "maximum": 32,
        "description": "How many app instances the program may toggle."}),
    "brokers": Declared(1, {
        "type": "integer", "enum": [1, 3],
        "description": "backend=local: Kafka nodes the run starts, 1 or 3 (3: replication factor 3, "
                       "min.insync.replicas 2); the program's bN-/bN+ kill broker N and restart it."}),
    "kafka_version": Declared(KAFKA_VERSION, {
        "type": "string", "pattern": KAFKA_VERSION_PATTERN,
        "description": "backend=local: the Apache Kafka release the run's brokers run (any KRaft release "
                       "from 3.5.0 on that Maven Central serves; fetched on first use and cached). Its tools also set "
                       "quotas on backend=external."}),
    "kafka_versions": Declared([], {
        "type": "array", "items": {"type": "string", "pattern": KAFKA_VERSION_PATTERN},
        "uniqueItems": True, "maxItems": MAX_BROKER_VERSIONS,
        "description": "backend=local: a broker version matrix. The run starts a cluster of each Apache Kafka "
                       "release (any from 3.5.0 on that Maven Central serves) and runs the same app, load and program on "
                       "each, side by side, with a verdict each; the report shows broker version x status x "
                       "anomalies (with streams_versions: each pair). Empty: kafka_version alone."}),
    "transaction_version": Declared(None, {
        "type": ["integer", "null"], "enum": [None, *TRANSACTION_VERSIONS],
        "description": "backend=local: the brokers' transaction.version feature, set when their storage is "
                       "formatted: 0 and 1 (the classic protocol), 2 (transactions v2, KIP-890: no "
                       "AddPartitionsToTxn, a new producer epoch per transaction; Java clients 4.0 and later "
                       "use it when the cluster has it). Empty: the release's default (2 on 4.x)."}),
    "broker_config": Declared({}, schema={
        "type": "object", "maxProperties": 64,
        "additionalProperties": {"type": ["string", "integer", "number", "boolean"]},
        "description": "backend=local or docker: settings of the run's own brokers, after the run's (e.g. "
                       "{\"transaction.abort.timed.out.transaction.cleanup.interval.ms\": 1000, \"compression.type\": "
                       "\"zstd\"}). Only settings of timeouts, transactions, groups, replication and the log "
                       "(docs/scenarios.md, 'Broker settings'): none that opens a listener, reads or writes outside "
                       "the run's directory or loads code."}),
    "app": Declared("worker", reference=True, schema={
        "type": "string", "enum": list(APPS),
        "description": "The reference app under test: worker (kafka-soak's Python EOS worker, with bug switches "
                       "to prove the checker) or streams (the id-assignment topology on Kafka Streams "
                       "streams_version, as in the KAFKA-14172/14624 reproductions). app_command names your own."}),
    "streams_version": Declared(STREAMS_VERSION, reference=True, schema={
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
                "quotas": {"type": "boolean"},
                "bug": {"type": "string", "enum": list(BUGS)}}},
        "description": "Controls of the reference app that run side by side with it (app=streams: with each "
                       "version), on the same input and program: each {name, streams_config (app=streams: Kafka "
                       "Streams settings of its own, e.g. producer.transaction.timeout.ms), quotas (false: the "
                       "run's {app_id} quotas skip it), bug (a bug switch of its own instead of the run's, e.g. "
                       "none beside a run's leak)}, with its own application id (<app_id>-<version>-<name>, the "
                       "worker's <app_id>-<name>) and verdict."}),
    "streams_config": Declared({}, reference=True, schema={
        **STREAMS_CONFIG_SCHEMA,
        "description": "app=streams: Kafka Streams settings of every version and control, applied after the "
                       "app's own (e.g. producer.transaction.timeout.ms, or __state.updater.enabled__ on 3.8-4.1); "
                       "a control's streams_config comes after them, and a trigger's are added to the scenario's. "
                       "Only settings of processing, commits, fetching and rebalancing (docs/scenarios.md, 'Kafka "
                       "client settings'): none of where a client connects, how it authenticates or what it loads, "
                       "none that a param sets."}),
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
        "description": "A bug switch of the reference app, to prove the checker catches it: the worker's "
                       "skip-restore, stale-cache, drop, duplicate, revoke-no-offsets, and leak (it keeps 16 KB of "
                       "every record it processes); the Kafka Streams app's leak (topology id-assignment: an iterator "
                       "over its store opened per record and never closed)."}),
    "bug_every": Declared(1000, reference=True, schema={
        "type": "integer", "minimum": 1, "maximum": 100_000_000,
        "description": "The switches drop/duplicate act on every input id divisible by this."}),
    "crash_probability": Declared(0, reference=True, schema={
        "type": "number", "minimum": 0, "exclusiveMaximum": 1,
        "description": "app=worker: the chance, per input record, that an instance exits "
                       "ungracefully (no commit, no abort: the broker times its open transaction "
                       "out), as the workers of the crashing-workers reproduction do; 0 = never. "
                       "Pair it with restart 'on-failure'."}),
    "worker_style": Declared("reference", reference=True, schema={
        "type": "string", "enum": list(WORKER_STYLES),
        "description": "app=worker: which reference worker. reference: kafka-soak's (commits the offsets it processed, "
                       "every commit_interval_ms); example: what confluent-kafka's examples/eos_transactions.py does "
                       "(partition EOF on; commits the consumer's position() once 100 records are in the transaction "
                       "and whenever every assigned partition reached its end), reading in batches "
                       "(Consumer.consume). Both keep the id-assignment contract."}),
    "worker_versions": Declared([], reference=True, schema={
        "type": "array", "items": {"type": "string", "pattern": WORKER_VERSION_PATTERN},
        "uniqueItems": True, "maxItems": MAX_WORKER_VERSIONS,
        "description": "app=worker, runtime=local: the confluent-kafka releases the reference worker runs on (any "
                       "PyPI serves as a wheel for this Python; a virtualenv each, built on first use and cached). "
                       "Several: a version matrix, each release its own app side by side on the same input and "
                       "program, with its own verdict. Empty: the suite's own confluent-kafka."}),
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
        "type": ["integer", "null"], "minimum": 0, "maximum": 2**63 - 1,
        "description": "Seed of the random program, the payloads and the reference worker's crash draws "
                       "(crash_probability; new for each instance, step and restart). null: drawn for each run "
                       "(a nightly soak's program differs every night), kept in its plan: trigger with it to "
                       "replay the run."}),
    "random_program": Declared({}, {
        "type": "object", "additionalProperties": False,
        "properties": {
            "faults": {"type": "array", "uniqueItems": True, "maxItems": len(RANDOM_FAULTS),
                       "items": {"type": "string", "enum": list(RANDOM_FAULTS)}},
            "every": {"type": "integer", "minimum": 2, "maximum": MAX_STEPS},
            "steps": {"type": "integer", "minimum": 1, "maximum": MAX_STEPS}},
        "description": "The random program of an empty `program`. {}: toggles of random instances, two per "
                       "instance. faults: the kinds it draws from (toggle: a graceful restart, kill: kill -9 and "
                       "a restart, pause, stall: record processing stalled for half a step, broker: one down, "
                       "instance-cut: an instance cut from every broker, broker-cut: a broker cut from the other "
                       "brokers), each fault lasting one step: every instance starts, then a fault every `every` "
                       "steps (default 2), the kinds taking turns in an order drawn each round. steps: the "
                       "program's length (default: the load's duration at `rate`, else each kind twice)."}),
    "health_allowance": Declared(0, {
        "type": "integer", "minimum": 0, "maximum": 1_000_000,
        "description": "App-health incidents a run tolerates before anomaly app_health fails it: "
                       "instance exits nobody asked for plus error-level log events of the app "
                       "(stream thread deaths included)."}),
    "sample_interval_s": Declared(5, {
        "type": "number", "minimum": 1, "maximum": 60,
        "description": "Seconds between two samples of what each process of the run uses (resident memory, CPU, "
                       "threads, open file descriptors, a JVM's heap after its last collection), and of the run "
                       "directory's and each broker's data size; kept in resources/ and drawn on the report "
                       "(runtime=local: a container is not sampled)."}),
    "resource_growth": Declared(GROWTH_DEFAULTS, schema={
        "type": "object", "additionalProperties": False,
        "properties": {
            "warmup_s": {"type": "number", "minimum": 0, "maximum": MAX_RUN_S},
            "per_hour": GROWTH_BOUNDS_SCHEMA, "total": GROWTH_BOUNDS_SCHEMA, "brokers": {"type": "boolean"}},
        "description": "Anomaly resource_growth: an app instance whose resident memory (rss_mb), heap after GC "
                       "(heap_mb), threads or open file descriptors (fds) keep rising over its life after warmup_s, "
                       "counted from when it got to work (Kafka Streams' state RUNNING, the reference worker's "
                       "first assignment; else from its start), "
                       "the lowest sample of each quarter of it never below the last quarter's and the last above the "
                       "first, faster than per_hour and by more than total fails the "
                       "run; each restart is a life of its own. brokers: judge the brokers too (else only drawn). What is "
                       "left out keeps its default."}),
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
                       "shorter, but never less than three of the app's commit intervals); one that moved "
                       "but did not finish is a backlog (unprocessed)."}),
    "allow_backlog": Declared(False, {
        "type": "boolean",
        "description": "Whether input the app had not committed when the drain ended (anomaly "
                       "unprocessed) is counted and shown without failing the run, for a scenario that "
                       "expects lag to grow (a quota), as long as every lagging partition, at its own pace "
                       "during the drain, would clear within another drain_timeout_s; a stalled partition "
                       "fails the run either way."}),
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
    "kafka_image": Declared(KAFKA_IMAGE, deployer=True, schema={
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
                       "client_properties, topics, inputs (the app's own key and value formats), outputs "
                       "(each with its contract: one-to-one, aggregate or none) and ready (the line its log has once "
                       "an instance got to work, which wN waits for). Empty = a reference app (param app) or "
                       "app_command."}),
    "app_env": Declared({}, deployer=True, schema={
        "type": "object", "additionalProperties": {"type": "string"},
        "description": "runtime=docker: extra environment of the app's containers."}),
    "docker_url": Declared(DOCKER_URL, deployer=True, schema={
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
