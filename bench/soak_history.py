"""A soak run's history of N records, written straight to a Kafka broker, with anomalies planted on purpose.

The validation benchmark must not wait for a real soak of 10M records (the app processes a few thousand
records/s), and its checkers must have something to find: so the input is produced as the generator does
(same keys, seqs and partitions), the outputs as the reference app would commit them, and a known set of
records is lost, duplicated, reordered, given a second id or made up; a few assertion records are added.
Both checkers must report exactly ``History.planted``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from confluent_kafka import Producer

from kafka_soak import kafka_io
from kafka_soak.generator import key_of, partition_of, seq_of

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


def _producer(bootstrap: str) -> Producer:
    return Producer(kafka_io.client_config(bootstrap, {
        "enable.idempotence": True, "acks": "all", "linger.ms": 50, "batch.size": 1_000_000,
        "compression.type": "lz4", "queue.buffering.max.messages": 1_000_000}))


def _send(producer: Producer, topic: str, records: Iterator[tuple[str, str, int]]) -> int:
    """Produce ``(key, value, partition)`` records; returns how many."""
    sent = 0
    for key, value, partition in records:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition)
                break
            except BufferError:
                producer.poll(0.05)
        sent += 1
    if producer.flush(300):
        raise RuntimeError(f"{topic}: records left undelivered after 300 s")
    return sent


def _inputs(h: History, ts: int) -> Iterator[tuple[str, str, int]]:
    partition = [partition_of(key_of(k + 1, h.keys), h.partitions) for k in range(h.keys)]
    for i in range(1, h.records + 1):
        key = key_of(i, h.keys)
        yield key, f'{{"id":{i},"key":"{key}","seq":{seq_of(i, h.keys)},"payload":"","ts":{ts}}}', \
            partition[(i - 1) % h.keys]


def _output(i: int, key: str, seq: int, assigned: int, partition: int, offset: int) -> tuple[str, str, int]:
    return key, (f'{{"id":{i},"key":"{key}","seq":{seq},"assigned_id":{assigned},"instance":1,'
                 f'"in_partition":{partition},"in_offset":{offset}}}'), partition


def _outputs(h: History) -> Iterator[tuple[str, str, int]]:
    """What the app commits for every input, in input order, with the planted anomalies; fills ``h.planted``."""
    partition = [partition_of(key_of(k + 1, h.keys), h.partitions) for k in range(h.keys)]
    offsets = [0] * h.partitions
    delayed: dict[int, tuple[str, str, int]] = {}  # id -> an earlier output committed right after it
    planted = dict.fromkeys(("lost", "duplicated", "unexpected", "id_reuse", "stale_state", "reordered"), 0)
    reused_keys = set()
    for i in range(1, h.records + 1):
        k = (i - 1) % h.keys
        key, p, plant = key_of(i, h.keys), partition[k], i % PLANT_EVERY
        offset = offsets[p]
        offsets[p] += 1
        assigned = k * h.partitions + p
        if plant == REUSED:
            assigned = FRESH_ID + i
            reused_keys.add(key)
        record = _output(i, key, seq_of(i, h.keys), assigned, p, offset)
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
    for n in range(UNEXPECTED):  # ids never produced, on a key of their own with one id
        yield _output(h.records + 1 + n, "key-unexpected", n + 1, 2 * FRESH_ID, 0, 0)
    planted["unexpected"] = UNEXPECTED
    planted["id_reuse"] = len(reused_keys)
    planted["stale_state"] = STALE
    h.planted = planted


def _assertions() -> Iterator[tuple[str, str, int]]:
    for n in range(STALE):
        yield f"key-{n:06d}", (f'{{"kind":"stale_state","key":"key-{n:06d}","expected":{n + 2},"found":{n + 1},'
                               f'"partition":0,"instance":1,"step":"1","ts":0}}'), 0


def write(bootstrap: str, topics: dict[str, str], h: History) -> dict[str, int]:
    """Produce the whole history; returns records per topic role. Refuses a history the broker did not keep
    whole (a low watermark above 0, or fewer records than sent)."""
    producer = _producer(bootstrap)
    sent = {"input": _send(producer, topics["input"], _inputs(h, int(time.time() * 1000))),
            "output": _send(producer, topics["output"], _outputs(h)),
            "assertions": _send(producer, topics["assertions"], _assertions())}
    for role, topic in topics.items():
        marks = kafka_io.watermarks(bootstrap, topic)
        kept = {p: low for p, (low, _high) in marks.items() if low > 0}
        held = sum(high for _low, high in marks.values())
        if kept or held != sent[role]:
            raise RuntimeError(f"{topic}: the broker did not keep the whole history (low watermarks above 0: "
                               f"{kept}; {held} of {sent[role]} records); use more partitions")
    return sent
