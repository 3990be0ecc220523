"""Which settings of the run's own brokers param ``broker_config`` may carry: an allow-list.

A broker's ``server.properties`` can open a listener (``listeners``, ``advertised.listeners``), read and write any path
(``log.dirs``, ``metadata.log.dir``, ``ssl.keystore.location``), load code (``authorizer.class.name``,
``metric.reporters``, ``config.providers``, ``*.class``) and change who may connect. None of that is a trigger's to set
on a machine that runs other people's soaks, so every key must be a name below: settings that shape how the brokers
time out, clean up and coordinate transactions and groups, replicate, roll, compress and retain the log, as Kafka's
own system tests vary them (``transaction.abort.timed.out.transaction.cleanup.interval.ms``, ``compression.type``).
The settings the run gives its brokers for their layout (node ids, the quorum, listeners, data directories) are the
run's, and refused by name. A shared cluster's brokers are their owner's: backend ``external`` takes none.
"""

from __future__ import annotations

from typing import Any

from kafka_soak.shared.java_client import PROVIDER_VARIABLE, SEPARATORS

ALLOWED = frozenset({
    # transactions and their coordinator
    "transaction.abort.timed.out.transaction.cleanup.interval.ms", "transaction.max.timeout.ms",
    "transaction.remove.expired.transaction.cleanup.interval.ms", "transactional.id.expiration.ms",
    "transaction.partition.verification.enable", "producer.id.expiration.ms",
    "producer.id.expiration.check.interval.ms",
    # groups and their coordinator
    "group.initial.rebalance.delay.ms", "group.min.session.timeout.ms", "group.max.session.timeout.ms",
    "group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms",
    "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms",
    "group.streams.session.timeout.ms", "group.streams.heartbeat.interval.ms", "group.streams.num.standby.replicas",
    "offsets.commit.timeout.ms",
    # replication and leadership
    "min.insync.replicas", "default.replication.factor", "unclean.leader.election.enable",
    "replica.lag.time.max.ms", "replica.fetch.wait.max.ms", "replica.fetch.max.bytes", "replica.fetch.min.bytes",
    "replica.socket.timeout.ms", "auto.leader.rebalance.enable", "leader.imbalance.check.interval.seconds",
    "broker.heartbeat.interval.ms", "broker.session.timeout.ms",
    # how the log is written and served
    "compression.type", "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
    "log.flush.interval.messages", "log.flush.interval.ms", "log.message.timestamp.type", "message.max.bytes",
    "fetch.max.bytes",
})
# Left out on purpose, besides what connects, reaches a path or loads code: thread and request counts (a trigger could
# exhaust the machine every run shares) and the log's and offsets' retention, segments and cleanup (what the run keeps
# for the checker: a run that deletes its own input would be judged on records it threw away).
# What the run sets for its brokers' layout: one home each, in the backends (``Layout.server_properties``).
RUNS_OWN = frozenset({
    "process.roles", "node.id", "broker.id", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "listeners", "advertised.listeners", "listener.security.protocol.map", "controller.listener.names",
    "inter.broker.listener.name", "log.dirs", "log.dir", "metadata.log.dir",
})


def problems(config: dict[str, Any], shared: bool) -> list[str]:
    """Each setting of param broker_config a run may not give its brokers, named; on a ``shared`` backend, all."""
    if config and shared:
        return ["broker_config: sets the run's own brokers; a shared cluster's brokers are their owner's (leave "
                "broker_config empty on backend external)"]
    errors = []
    for name, value in config.items():
        text = str(value)
        if name in RUNS_OWN:
            errors.append(f"broker_config: {name!r} is the run's to set (its brokers' layout: node ids, the quorum, "
                          "listeners and data directories)")
        elif name not in ALLOWED:
            errors.append(f"broker_config: {name!r} is not a broker setting a run may change: only settings of "
                          "timeouts, transactions, groups, replication and the log are allowed, none that opens a "
                          "listener, reads or writes outside the run's directory or loads code (e.g. "
                          "transaction.abort.timed.out.transaction.cleanup.interval.ms, compression.type; the whole "
                          "list: docs/scenarios.md, 'Broker settings')")
        elif PROVIDER_VARIABLE in text or any(c in text for c in SEPARATORS) or not text.strip():
            errors.append(f"broker_config: {name!r}: {value!r} is not a value a properties file carries as it is "
                          "(no '${', '=', ';' or line break, not empty)")
    return errors


def as_properties(config: dict[str, Any]) -> dict[str, str]:
    """The settings as ``server.properties`` lines take them (booleans as Kafka spells them)."""
    return {name: str(value).lower() if isinstance(value, bool) else str(value) for name, value in config.items()}


def as_environment(config: dict[str, Any]) -> dict[str, str]:
    """The settings as the apache/kafka image reads them: ``KAFKA_`` and the name upper-cased, ``.`` as ``_``, ``_``
    as ``__``, ``-`` as ``___``."""
    return {"KAFKA_" + name.replace("_", "__").replace("-", "___").replace(".", "_").upper(): value
            for name, value in as_properties(config).items()}


def documented() -> str:
    """The list as docs/scenarios.md shows it (tests hold the two together)."""
    return ", ".join(f"`{name}`" for name in sorted(ALLOWED))
