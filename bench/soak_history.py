"""A soak run's history of N records, written straight to a Kafka broker, with anomalies planted on purpose.

The validation benchmark must not wait for a real soak of 10M records (the app processes a few thousand
records/s), and its checkers must have something to find: so the input is produced as the generator does
(same keys, seqs and partitions), the outputs as the reference app would commit them, and a known set of
records is lost, duplicated, reordered, given a second id or made up; a few assertion records are added.
Both checkers must report exactly ``History.planted``. The app's group has committed the whole input, as after a
drain.

``ProfileHistory`` is the same run of a team's app (docs/own-app.md's orders example, ``PROFILE``): the input in
the profile's own format with the soak's headers, as the generator writes it; a one-to-one output that carries the
headers (as Kafka Streams forwards them) with the same records lost, duplicated, reordered and made up; and a count
table (big-endian int64 per customer) with a few keys' last count one too many.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_soak import run_plan
from kafka_soak.clients import encodings, subjects
from kafka_soak.clients import profile as profiles
from kafka_soak.infra import kafka_io
from kafka_soak.load.generator import key_of, partition_of, seq_of
from kafka_soak.shared import contracts

# Measured on this backend with lz4 batches of these records: a partition holds ~5 MB of batches, and
# 60 000 records of each topic stay well inside it (the low watermarks are checked after producing).
RECORDS_PER_PARTITION = 60_000
RECORDS_PER_KEY = 100
# Every PLANT_EVERY ids one id of each kind is planted (at these offsets): the counts grow with N.
PLANT_EVERY = 199_999
LOST, DUPLICATED, REORDERED, REUSED = 11, 23, 37, 53
UNEXPECTED = 5
STALE = 3
FRESH_ID = 10**12  # assigned ids above any the app would hand out
# A team's app: docs/own-app.md's orders-enricher, with its enriched orders (one-to-one) and its count per customer.
PROFILE = {
    "name": "orders-enricher", "command": ["orders-enricher"], "group_id": "orders-enricher",
    "inputs": [{"topic": "orders", "key": "customer-{key}", "value": {"encoding": "json", "template": {
        "orderId": "{id}", "customer": "customer-{key}", "amount": "{random_int:1:100}", "seq": "{seq}"}}}],
    "outputs": [{"topic": "orders-enriched", "contract": "one-to-one", "of": "orders"},
                {"topic": "orders-count", "contract": "aggregate", "of": "orders", "function": "count",
                 "value": {"encoding": "int64"}}]}
COUNT_EVERY = 10  # the count table gets a key's count after every COUNT_EVERY of its inputs, and after its last
WRONG_COUNT_EVERY, WRONG_COUNT = 1999, 7  # keys k with k % WRONG_COUNT_EVERY == WRONG_COUNT end one count too high

Record = tuple[str, str | bytes, int, list[tuple[str, str]] | None]  # key, value, partition, headers


@dataclass
class History:
    """The run's shape and what was planted in it."""

    records: int
    keys: int
    partitions: int
    planted: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, records: int) -> History:
        return cls(records, max(records // RECORDS_PER_KEY, 1), max(math.ceil(records / RECORDS_PER_PARTITION), 2))

    def topics(self) -> dict[str, int]:
        """Its topics by role, with their partitions."""
        return {"input": self.partitions, "output": self.partitions, "assertions": 1}

    def streams(self, ts: int) -> dict[str, Iterator[Record]]:
        """Each topic's records by role, produced at ``ts`` (ms); ``planted`` is filled once they are all drawn."""
        return {"input": _inputs(self, ts), "output": _outputs(self), "assertions": _assertions()}

    def group(self) -> tuple[str, str]:
        """The app's consumer group, as ``provision`` names it, and the role of the input it commits."""
        return subjects.app_ids(run_plan.check({}))[0], "input"


@dataclass
class ProfileHistory(History):
    """A team's app's run (``PROFILE``): topics by the names the app knows them (its input, ``orders-enriched``,
    ``orders-count``); ``planted`` counts the one-to-one output's anomalies and the table's ``wrong_aggregate``."""

    @property
    def profile(self) -> profiles.Profile:
        return profiles.parse(PROFILE, self.partitions, "local", "local", ())

    def topics(self) -> dict[str, int]:
        return self.profile.names()

    def streams(self, ts: int) -> dict[str, Iterator[Record]]:
        app = self.profile
        orders = encodings.ProfileRecords(app.input.key, app.input.value, self.keys,
                                          partial(partition_of, partitions=self.partitions), "", 0)
        return {app.input.topic: _orders(self, orders, ts), "orders-enriched": _enriched(self, orders, ts),
                "orders-count": _counts(self, orders)}

    def group(self) -> tuple[str, str]:
        app = self.profile
        return app.group_id, app.input.topic


def _producer(bootstrap: str) -> Producer:
    return Producer(kafka_io.client_config(bootstrap, {
        "enable.idempotence": True, "acks": "all", "linger.ms": 50, "batch.size": 1_000_000,
        "compression.type": "lz4", "queue.buffering.max.messages": 1_000_000}))


def _send(producer: Producer, topic: str, records: Iterator[Record]) -> int:
    """Produce ``(key, value, partition, headers)`` records; returns how many."""
    sent = 0
    for key, value, partition, headers in records:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition, headers=headers)
                break
            except BufferError:
                producer.poll(0.05)
        sent += 1
    if producer.flush(300):
        raise RuntimeError(f"{topic}: records left undelivered after 300 s")
    return sent


def _inputs(h: History, ts: int) -> Iterator[Record]:
    partition = [partition_of(key_of(k + 1, h.keys), h.partitions) for k in range(h.keys)]
    for i in range(1, h.records + 1):
        key = key_of(i, h.keys)
        yield key, f'{{"id":{i},"key":"{key}","seq":{seq_of(i, h.keys)},"payload":"","ts":{ts}}}', \
            partition[(i - 1) % h.keys], None


def _output(i: int, key: str, seq: int, assigned: int, partition: int, offset: int) -> Record:
    return key, (f'{{"id":{i},"key":"{key}","seq":{seq},"assigned_id":{assigned},"instance":1,'
                 f'"in_partition":{partition},"in_offset":{offset}}}'), partition, None


def _committed(h: History, outputs: Iterator[tuple[int, Record]], planted: dict[str, int]) -> Iterator[Record]:
    """What the app commits for ``outputs`` (input id, its output record; in input order), with the records planted
    lost, duplicated and reordered (a record committed right after its key's next seq), counted in ``planted``."""
    delayed: dict[int, Record] = {}  # id -> an earlier output committed right after it
    for i, record in outputs:
        plant = i % PLANT_EVERY
        if plant == LOST:
            planted["lost"] += 1
        elif plant == REORDERED and i + h.keys <= h.records:
            delayed[i + h.keys] = record  # the key's next seq is committed first
            planted["reordered"] += 1
        else:
            yield record
            if plant == DUPLICATED:
                yield record
                planted["duplicated"] += 1
        if i in delayed:
            yield delayed.pop(i)


def _outputs(h: History) -> Iterator[Record]:
    """What the app commits for every input, in input order, with the planted anomalies; fills ``h.planted``."""
    partition = [partition_of(key_of(k + 1, h.keys), h.partitions) for k in range(h.keys)]
    planted = dict.fromkeys(("lost", "duplicated", "unexpected", "id_reuse", "stale_state", "reordered"), 0)
    reused_keys = set()

    def outputs() -> Iterator[tuple[int, Record]]:
        offsets = [0] * h.partitions
        for i in range(1, h.records + 1):
            k = (i - 1) % h.keys
            key, p = key_of(i, h.keys), partition[k]
            offset = offsets[p]
            offsets[p] += 1
            assigned = k * h.partitions + p
            if i % PLANT_EVERY == REUSED:
                assigned = FRESH_ID + i
                reused_keys.add(key)
            yield i, _output(i, key, seq_of(i, h.keys), assigned, p, offset)

    yield from _committed(h, outputs(), planted)
    for n in range(UNEXPECTED):  # ids never produced, on a key of their own with one id
        yield _output(h.records + 1 + n, "key-unexpected", n + 1, 2 * FRESH_ID, 0, 0)
    planted["unexpected"] = UNEXPECTED
    planted["id_reuse"] = len(reused_keys)
    planted["stale_state"] = STALE
    h.planted = planted


def _assertions() -> Iterator[Record]:
    for n in range(STALE):
        yield f"key-{n:06d}", (f'{{"kind":"stale_state","key":"key-{n:06d}","expected":{n + 2},"found":{n + 1},'
                               f'"partition":0,"instance":1,"step":"1","ts":0}}'), 0, None


CHUNK = 10_000  # ids rendered at a time, as the generator does


def _orders(h: ProfileHistory, orders: encodings.ProfileRecords, ts: int) -> Iterator[Record]:
    """The profile's input as the generator writes it: its own key and value, the headers soak.id and soak.seq."""
    for first in range(1, h.records + 1, CHUNK):
        for key, partition, value, headers in orders.chunk(list(range(first, min(first + CHUNK, h.records + 1))), ts):
            yield key, value, partition, headers


def _enriched(h: ProfileHistory, orders: encodings.ProfileRecords, ts: int) -> Iterator[Record]:
    """The one-to-one output as a Kafka Streams app commits it: each order enriched, on its key and partition, with
    its input's headers; the records of ``_committed`` lost, duplicated and reordered, and a few made up."""
    planted = h.planted
    planted.update(dict.fromkeys(("lost", "duplicated", "unexpected", "reordered"), 0))

    def outputs() -> Iterator[tuple[int, Record]]:
        for i, (key, value, partition, headers) in enumerate(_orders(h, orders, ts), start=1):
            yield i, (key, f'{value[:-1]},"tier":"gold"}}', partition, headers)

    yield from _committed(h, outputs(), planted)
    for n in range(UNEXPECTED):  # ids never produced
        i = h.records + 1 + n
        yield "customer-unexpected", f'{{"orderId":{i},"tier":"gold"}}', 0, [(contracts.ID_HEADER, str(i))]
    planted["unexpected"] = UNEXPECTED


def _counts(h: ProfileHistory, orders: encodings.ProfileRecords) -> Iterator[Record]:
    """The count table as the app commits it: each customer's count (big-endian int64) after every ``COUNT_EVERY``
    of its orders and after its last, in input order; the last count of every ``WRONG_COUNT_EVERY``-th key one too
    high (an order counted twice)."""
    planted = h.planted
    planted["wrong_aggregate"] = 0
    for i in range(1, h.records + 1):
        k, seq = (i - 1) % h.keys, seq_of(i, h.keys)
        last = i + h.keys > h.records
        if seq % COUNT_EVERY and not last:
            continue
        wrong = last and k % WRONG_COUNT_EVERY == WRONG_COUNT
        planted["wrong_aggregate"] += wrong
        yield orders.names[k], struct.pack(">q", seq + wrong), orders.partitions[k], None


def write(bootstrap: str, topics: dict[str, str], h: History) -> dict[str, int]:
    """Produce the whole history into ``topics`` (by role: ``h.topics()``); returns records per role. Refuses a
    history the broker did not keep whole (a low watermark above 0, or fewer records than sent)."""
    producer = _producer(bootstrap)
    sent = {role: _send(producer, topics[role], records)
            for role, records in h.streams(int(time.time() * 1000)).items()}
    for role in sent:
        topic = topics[role]
        marks = kafka_io.watermarks(bootstrap, topic)
        kept = {p: low for p, (low, _high) in marks.items() if low > 0}
        held = sum(high for _low, high in marks.values())
        if kept or held != sent[role]:
            raise RuntimeError(f"{topic}: the broker did not keep the whole history (low watermarks above 0: "
                               f"{kept}; {held} of {sent[role]} records); use more partitions")
    commit_input(bootstrap, *h.group(), topics)
    return sent


def commit_input(bootstrap: str, group: str, role: str, topics: dict[str, str]) -> None:
    """Commit ``group``'s offsets at the end of its input, as the app's group stands after a drain: the checker judges
    the input its group committed, and counts the rest as ``unprocessed``."""
    topic = topics[role]
    consumer = Consumer(kafka_io.client_config(bootstrap, {"group.id": group, "enable.auto.commit": False}))
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, high) for p, (_low, high) in
                                 kafka_io.watermarks(bootstrap, topic).items()], asynchronous=False)
    finally:
        consumer.close()
