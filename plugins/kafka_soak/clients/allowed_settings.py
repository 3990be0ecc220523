"""Which Kafka client and Kafka Streams settings a run's params may carry to an app: an allow-list.

Kafka Streams hands prefixed settings to each of its clients (``admin.bootstrap.servers`` points its admin client at
another host, with the run's credentials), and any Kafka client loads the classes and config providers its settings
name (``config.providers`` with ``${env:...}`` reads the worker's environment). A deny-list of a few names cannot keep
up with that, so every key of param ``streams_config``, of a control's (``variants[].streams_config``) and of a
profile's ``client_properties`` must be a name below: settings that shape how an app processes, commits, fetches and
rebalances, none that changes where a client connects, how it authenticates or what it loads. The same list holds for
every source of those params (a trigger, a scenario file, ``SOAK_PARAM_DEFAULTS``, a value ``SOAK_TRIGGER_ALLOW``
opens). Every JVM the suite starts also runs with config providers off (``shared.java_client.NO_CONFIG_PROVIDERS``).
"""

from __future__ import annotations

from typing import Any

from kafka_soak.shared.java_client import PROVIDER_VARIABLE, SEPARATORS

# Kafka Streams' own settings (StreamsConfig), unprefixed.
STREAMS = frozenset({
    "acceptable.recovery.lag", "buffered.records.per.partition", "cache.max.bytes.buffering", "commit.interval.ms",
    "default.dsl.store", "ensure.explicit.internal.resource.naming", "max.task.idle.ms", "max.warmup.replicas",
    "metrics.num.samples", "metrics.recording.level", "metrics.sample.window.ms", "num.standby.replicas",
    "num.stream.threads", "poll.ms", "probing.rebalance.interval.ms", "processing.guarantee",
    "rack.aware.assignment.non_overlap_cost", "rack.aware.assignment.strategy", "rack.aware.assignment.traffic_cost",
    "repartition.purge.interval.ms", "replication.factor", "state.cleanup.delay.ms", "statestore.cache.max.bytes",
    "task.timeout.ms", "topology.optimization", "upgrade.from", "windowstore.changelog.additional.retention.ms",
    # internal switches Kafka's own tests flip (the state updater, 3.8-4.1)
    "__state.updater.enabled__",
})
# The producer's, consumers' and admin client's settings (ProducerConfig, ConsumerConfig, AdminClientConfig) that
# shape timing, batching and fetching: unprefixed, or behind one of CLIENT_PREFIXES.
CLIENT = frozenset({
    "acks", "allow.auto.create.topics", "auto.commit.interval.ms", "auto.offset.reset", "batch.size", "buffer.memory",
    "check.crcs", "client.rack", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "connections.max.idle.ms", "default.api.timeout.ms", "delivery.timeout.ms",
    "enable.auto.commit", "enable.idempotence", "fetch.max.bytes", "fetch.max.wait.ms", "fetch.min.bytes",
    "group.protocol", "group.remote.assignor", "heartbeat.interval.ms", "isolation.level", "linger.ms",
    "max.block.ms", "max.in.flight.requests.per.connection", "max.partition.fetch.bytes", "max.poll.interval.ms",
    "max.poll.records", "max.request.size", "metadata.max.age.ms", "metadata.max.idle.ms",
    "partitioner.adaptive.partitioning.enable", "partitioner.availability.timeout.ms", "partitioner.ignore.keys",
    "receive.buffer.bytes", "reconnect.backoff.max.ms", "reconnect.backoff.ms", "request.timeout.ms", "retries",
    "retry.backoff.max.ms", "retry.backoff.ms", "send.buffer.bytes", "session.timeout.ms",
    "socket.connection.setup.timeout.max.ms", "socket.connection.setup.timeout.ms", "transaction.timeout.ms",
})
CLIENT_PREFIXES = ("producer.", "consumer.", "main.consumer.", "restore.consumer.", "global.consumer.", "admin.")
# Configs of the internal topics Kafka Streams creates (``topic.`` prefix).
TOPIC = frozenset({
    "cleanup.policy", "max.compaction.lag.ms", "max.message.bytes", "min.compaction.lag.ms", "min.insync.replicas",
    "retention.bytes", "retention.ms", "segment.bytes", "segment.ms",
})
TOPIC_PREFIX = "topic."


def allowed(name: str) -> bool:
    """Whether ``name`` is on the list, as it stands or behind a client's or the internal topics' prefix."""
    if name in STREAMS or name in CLIENT:
        return True
    if name.startswith(TOPIC_PREFIX):
        return name[len(TOPIC_PREFIX):] in TOPIC
    return any(name.startswith(p) and name[len(p):] in CLIENT for p in CLIENT_PREFIXES)


def problems(where: str, settings: dict[str, Any], separators: bool = True) -> list[str]:
    """Each setting of ``settings`` that is not on the list or whose value cannot pass as it is, named (``where``: the
    param, e.g. ``streams_config:``). ``separators``: whether the value travels as ``name=value;...``."""
    errors = []
    for name, value in settings.items():
        text = str(value)
        if name != name.strip() or not allowed(name):
            errors.append(f"{where} {name!r} is not a setting a run may change: only settings that shape how the app "
                          "processes, commits, fetches and rebalances are allowed, none that changes where a client "
                          "connects, how it authenticates or what it loads (e.g. commit.interval.ms, "
                          "producer.transaction.timeout.ms, repartition.purge.interval.ms; the whole list: "
                          "docs/scenarios.md, 'Kafka client settings')")
        elif PROVIDER_VARIABLE in text:
            errors.append(f"{where} {name!r}: a value may not hold '${{' (a config provider's variable, which would "
                          "read the machine's files or environment)")
        elif separators and any(c in text for c in SEPARATORS):
            errors.append(f"{where} {name!r}: {value!r} holds ';', '=' or a line break")
    return errors


def documented() -> str:
    """The list as docs/scenarios.md shows it (tests/unit/airflow_side/test_params.py holds the two together)."""
    return "\n".join([
        "- Kafka Streams: " + ", ".join(f"`{n}`" for n in sorted(STREAMS)),
        "- its clients, unprefixed or behind " + ", ".join(f"`{p}`" for p in CLIENT_PREFIXES) + ": "
        + ", ".join(f"`{n}`" for n in sorted(CLIENT)),
        f"- its internal topics, behind `{TOPIC_PREFIX}`: " + ", ".join(f"`{n}`" for n in sorted(TOPIC)),
    ])
