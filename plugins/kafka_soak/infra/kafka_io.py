"""Small confluent-kafka helpers shared by the generator, the drain and the provisioner."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from tenacity import before_sleep_log, retry, retry_if_exception, stop_after_delay, wait_fixed

from kafka_soak.shared import offsets
from kafka_soak.shared.java_client import SETTINGS_ENV, given_settings

log = logging.getLogger(__name__)

# Errors a broker outage or a leader election causes for a while; a client retries them instead of failing. By name:
# the reference worker runs on older confluent-kafka releases too (param worker_versions), which lack some of them.
TRANSIENT = {getattr(KafkaError, name) for name in (
    "NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN",
    "REQUEST_TIMED_OUT", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
    "UNKNOWN_TOPIC_OR_PART",
    # a client whose metadata lost a partition's leader in an election, until its next metadata refresh
    "_UNKNOWN_PARTITION",
    # a request sent to a broker that left the cluster's metadata (killed) while it waited: the next attempt goes to
    # the partition's new leader (librdkafka 2.1.0 has no such code)
    "_DESTROY_BROKER",
    # a partition's new leader whose high watermark has not caught up yet ("Leader high watermark is not caught up",
    # seen after a broker's upgrade moved the leaders)
    "OFFSET_NOT_AVAILABLE",
    # a request that timed out in the client's queue before it was sent: the process was stopped (SIGSTOP, a program's
    # pN) past its timeout while the request waited, as the fetch of an assignment's committed offsets once did
    "_TIMED_OUT_QUEUE") if hasattr(KafkaError, name)}


def is_transient(exc: BaseException) -> bool:
    if not isinstance(exc, KafkaException) or not isinstance(exc.args[0], KafkaError):
        return False
    error: KafkaError = exc.args[0]
    return error.retriable() or error.code() in TRANSIENT


# A metadata or offset look-up retried through a broker outage or leader election (up to two minutes).
retry_transient = retry(retry=retry_if_exception(is_transient), wait=wait_fixed(0.5), stop=stop_after_delay(120),
                        reraise=True, before_sleep=before_sleep_log(log, logging.WARNING))

def settings_env(settings: Mapping[str, Any] | None) -> dict[str, str]:
    """The environment that hands ``settings`` to a child process (empty when there are none)."""
    return {SETTINGS_ENV: json.dumps(dict(settings))} if settings else {}


def client_config(bootstrap: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Client settings for the run's cluster: the security settings this process was given, then ``extra``."""
    return {"bootstrap.servers": bootstrap, "log_level": 3, **given_settings(), **(extra or {})}


def partition_count(bootstrap: str, topic: str, timeout: float = 10.0) -> int:
    consumer = Consumer(client_config(bootstrap, {"group.id": "kafka-soak-metadata"}))
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics[topic]
        if meta.error is not None:
            raise KafkaException(meta.error)
        return len(meta.partitions)
    finally:
        consumer.close()


@retry_transient
def watermarks(bootstrap: str, topic: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    """``{partition: (low, high)}`` of a topic."""
    marks = offsets.positions(client_config(bootstrap, {"group.id": "kafka-soak-metadata"}), topic, timeout=timeout)
    return {p: (low, high) for p, (low, high, _) in marks.items()}


@retry_transient
def open_ends(bootstrap: str, topic: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    """``{partition: (last stable offset, end)}`` of the partitions of ``topic`` whose last stable offset is behind
    their end: a transaction over them is still open, and a read_committed reader sees nothing past it."""
    config = client_config(bootstrap, {"group.id": "kafka-soak-metadata"})
    stable = offsets.positions({**config, "isolation.level": "read_committed"}, topic, timeout=timeout)
    ends = offsets.positions({**config, "isolation.level": "read_uncommitted"}, topic, timeout=timeout)
    return {p: (stable[p][1], high) for p, (_, high, _) in ends.items() if stable[p][1] < high}


# A record's value and headers, as a resumed generator reads where it stopped from one or the other.
LastRecord = tuple[bytes | None, list[tuple[str, bytes]] | None]


def last_records(bootstrap: str, topic: str, timeout: float = 30.0) -> dict[int, LastRecord | None]:
    """The value and headers of the newest record of every partition (``None`` for an empty one)."""
    marks = watermarks(bootstrap, topic)
    result: dict[int, LastRecord | None] = {p: None for p, (low, high) in marks.items() if high <= low}
    wanted = {p: high - 1 for p, (low, high) in marks.items() if high > low}
    if not wanted:
        return result
    consumer = Consumer(client_config(bootstrap, {"group.id": "kafka-soak-metadata", "enable.auto.commit": False}))
    try:
        consumer.assign([TopicPartition(topic, p, off) for p, off in wanted.items()])
        deadline = time.monotonic() + timeout
        while wanted and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            if wanted.get(msg.partition()) == msg.offset():
                result[msg.partition()] = (msg.value(), msg.headers())
                del wanted[msg.partition()]
        if wanted:
            raise TimeoutError(f"could not read the last record of {topic} partitions {sorted(wanted)} "
                               f"within {timeout:.0f} s")
        return result
    finally:
        consumer.close()


@retry_transient
def group_positions(bootstrap: str, group: str, topic: str) -> dict[int, tuple[int, int]]:
    """Per partition of ``topic``: the group's committed position (the partition's first offset where it committed
    nothing) and the partition's end."""
    marks = offsets.positions(client_config(bootstrap, {"group.id": group}), topic, committed=True)
    return {p: (position, high) for p, (_low, high, position) in marks.items()}


@retry_transient
def internal_lag(bootstrap: str, group: str, input_topic: str, timeout: float = 10.0) -> dict[str, int]:
    """``{"topic[partition]": records}`` the group has not committed on the other topics it consumes: a topology that
    reads what it writes (a repartition topic, a KTable of its own output, a worker's results) has work in flight
    there after the input is done."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(bootstrap))  # kept alive until the future resolves: it serves it
    request = [ConsumerGroupTopicPartitions(group)]
    committed = admin.list_consumer_group_offsets(request, request_timeout=timeout)[group].result(timeout)
    others = [tp for tp in committed.topic_partitions if tp.topic != input_topic and tp.offset >= 0]
    ends = {topic: watermarks(bootstrap, topic, timeout) for topic in {tp.topic for tp in others}}
    return {f"{tp.topic}[{tp.partition}]": max(0, ends[tp.topic][tp.partition][1] - tp.offset) for tp in others}


def group_descriptions(bootstrap: str, groups: list[str], timeout: float = 10.0) -> dict[str, Any]:
    """Each group's description as its coordinator has it (AdminClient's ``ConsumerGroupDescription``), in one
    request to each coordinator."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(bootstrap))  # kept alive until the futures resolve: it serves them
    return {group: future.result(timeout)
            for group, future in admin.describe_consumer_groups(groups, request_timeout=timeout).items()}


@retry_transient
def group_states(bootstrap: str, groups: list[str], timeout: float = 10.0) -> dict[str, str]:
    """Each group's state: ``PREPARING_REBALANCING``, ``COMPLETING_REBALANCING``, ``STABLE``, ``EMPTY``, ``DEAD`` (a
    classic-protocol group's)."""
    return {group: description.state.name for group, description in group_descriptions(bootstrap, groups, timeout).items()}


def group_members(bootstrap: str, group: str, topic: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The group's members now: client id, host and the partitions of ``topic`` each owns."""
    description = group_descriptions(bootstrap, [group], timeout)[group]
    return [{"client_id": member.client_id, "host": member.host,
             "partitions": sorted(tp.partition for tp in (member.assignment.topic_partitions if member.assignment
                                                          else []) if tp.topic == topic)}
            for member in description.members]


def create_topics(bootstrap: str, topics: Mapping[str, int], replication_factor: int = -1,
                  timeout: float = 60.0, config: Mapping[str, str] | None = None) -> None:
    """Create ``{name: partitions}`` with AdminClient; retention off, so no evidence ages out during a run.
    ``replication_factor=-1`` takes the cluster's default."""
    from confluent_kafka.admin import AdminClient, NewTopic

    if not topics:
        return
    admin = AdminClient(client_config(bootstrap))
    settings = {"retention.ms": "-1", **(config or {})}

    @retry_transient
    def create() -> None:
        """One CreateTopics, again while every failure is transient: a cluster that just started can drop the
        connection a request waits on (``_DESTROY_BROKER``, seen on a fresh 3.5.2 cluster of three)."""
        futures = admin.create_topics([NewTopic(name, partitions, replication_factor, config=settings)
                                       for name, partitions in topics.items()], request_timeout=timeout)
        # a topic created before (by an earlier attempt, or a re-run provision on the same brokers) is kept
        errors = {name: exc for name, exc in _exceptions(futures, timeout).items()
                  if "TOPIC_ALREADY_EXISTS" not in str(exc)}
        if errors and all(is_transient(exc) for exc in errors.values()):
            raise next(iter(errors.values()))
        if errors:
            raise KafkaException(f"could not create topics on {bootstrap}: "
                                 f"{ {name: _said(exc) for name, exc in errors.items()} }")

    create()
    wait_for_leaders(admin, set(topics), timeout)


def wait_for_leaders(admin: Any, names: set[str], timeout: float) -> None:
    """Until every partition of ``names`` has a leader: CreateTopics returns before the brokers serve them."""
    deadline = time.monotonic() + timeout
    while True:
        meta = admin.list_topics(timeout=10).topics
        waiting = sorted(name for name in names if name not in meta or meta[name].error is not None
                         or any(p.leader < 0 or p.error is not None for p in meta[name].partitions.values()))
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise KafkaException(f"topics {waiting} have partitions without a leader {timeout:.0f} s after creation")
        time.sleep(0.1)


def internal_topics(bootstrap: str, application_ids: list[str], timeout: float = 10.0) -> list[str]:
    """The changelog and repartition topics Kafka Streams made for these application ids
    (``<application.id>-<name>-changelog|repartition``)."""
    from confluent_kafka.admin import AdminClient

    if not application_ids:
        return []
    names = AdminClient(client_config(bootstrap, {"log_level": 0})).list_topics(timeout=timeout).topics
    return sorted(n for n in names if n.endswith(("-changelog", "-repartition"))
                  and any(n.startswith(f"{app}-") for app in application_ids))


def delete_topics(bootstrap: str, names: list[str], timeout: float = 60.0) -> dict[str, str]:
    """Delete topics; returns ``{name: error}`` for those that could not be deleted."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(bootstrap))  # kept alive until the futures resolve: it serves them
    return _failures(admin.delete_topics(names, request_timeout=timeout), timeout)


def delete_groups(bootstrap: str, groups: list[str], timeout: float = 60.0, leaving_s: float = 15.0) -> dict[str, str]:
    """Delete consumer groups and their committed offsets; returns ``{group: error}`` for those that could not be
    deleted. A group that does not exist is no error (an app that never joined left nothing); one that still has
    members is asked again for ``leaving_s``, as an instance stopped a moment ago may still be leaving it."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(bootstrap))
    errors: dict[str, str] = {}
    pending, deadline = list(groups), time.monotonic() + leaving_s
    while pending:
        failed = {group: error for group, error in _failures(
            admin.delete_consumer_groups(pending, request_timeout=timeout), timeout).items()
            if "GROUP_ID_NOT_FOUND" not in error}
        for group in pending:
            errors.pop(group, None)
        errors.update(failed)
        pending = [group for group, error in failed.items() if "NON_EMPTY_GROUP" in error]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    return errors


def _exceptions(futures: Mapping[str, Any], timeout: float) -> dict[str, BaseException]:
    """``{name: exception}`` of an admin call's per-topic (or per-group) futures that failed."""
    errors = {}
    for name, future in futures.items():
        try:
            future.result(timeout)
        except Exception as exc:  # KafkaException carries the broker's error; a timeout has none
            errors[name] = exc
    return errors


def _said(exc: BaseException) -> str:
    """An admin call's failure as a line: the broker's error, or the exception's kind (a timeout says nothing)."""
    return str(exc) or type(exc).__name__


def _failures(futures: Mapping[str, Any], timeout: float) -> dict[str, str]:
    """``{name: error}`` of an admin call's per-topic (or per-group) futures that failed."""
    return {name: _said(exc) for name, exc in _exceptions(futures, timeout).items()}


def live_brokers(bootstrap: str, timeout: float = 5.0) -> set[int]:
    """Ids of the brokers the cluster's metadata lists now (empty when none answers)."""
    from confluent_kafka.admin import AdminClient

    try:  # log_level 0: a broker still starting refuses connections, which is not worth a line each
        return set(AdminClient(client_config(bootstrap, {"log_level": 0})).list_topics(timeout=timeout).brokers)
    except KafkaException:
        return set()


def out_of_sync(bootstrap: str, broker: int, timeout: float = 10.0) -> list[str]:
    """The partitions (``topic-p``) that have ``broker`` among their replicas but not in their in-sync replicas."""
    from confluent_kafka.admin import AdminClient

    topics = AdminClient(client_config(bootstrap, {"log_level": 0})).list_topics(timeout=timeout).topics
    return sorted(f"{name}-{p.id}" for name, meta in topics.items() for p in meta.partitions.values()
                  if broker in p.replicas and broker not in p.isrs)


def wait_until_in_sync(bootstrap: str, broker: int, timeout: float) -> None:
    """Block until ``broker`` is back in the in-sync replicas of every partition it holds (a restarted broker catches up
    on what the others took meanwhile before the ISR takes it back)."""
    deadline = time.monotonic() + timeout
    while lagging := retry_transient(out_of_sync)(bootstrap, broker):
        if time.monotonic() > deadline:
            raise KafkaException(f"broker {broker} was not back in the in-sync replicas of {len(lagging)} partition(s) "
                                 f"within {timeout:.0f} s, e.g. {', '.join(lagging[:3])}")
        time.sleep(0.5)


def wait_until_reachable(bootstrap: str, timeout: float) -> None:
    """Block until a broker at ``bootstrap`` answers a metadata request."""
    deadline = time.monotonic() + timeout
    while not live_brokers(bootstrap):
        if time.monotonic() > deadline:
            raise KafkaException(f"no broker at {bootstrap} answered within {timeout:.0f} s")
        time.sleep(1)
