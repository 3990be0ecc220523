"""The load generator: produces the run's input records per the data contract, resumably.

Record ``id`` runs 1..records; key ``key-NNNNNN`` cycles over ``keys`` keys, so the per-key sequence
number of an id is known in closed form, and each record goes to a partition computed from its key.
A restarted generator reads the newest id of every partition and produces exactly the ids that are
missing — with an idempotent producer (ordered, no gaps within a partition) that never duplicates an
id and never skips one.

The load comes in **phases**, consecutive id ranges each released at a moment of the program: ``at_s``
seconds after T0 (the first step) or as soon as step ``after_step`` has been applied (its result file
appears in the run's ``program/`` directory), then produced at the phase's rate (0 = full speed).

A team's own app (an app profile's input) gets its own format instead: a key template and a value encoding
(``kafka_soak.clients.encodings``), every record with the headers ``soak.id`` and ``soak.seq``, and a resume reads the newest
id of every partition from its ``soak.id`` header. Without them, records follow the reference apps' contract.

Records are built and paced in chunks (bench/generator.py measures the speed and the rate accuracy):
at full speed the Python work per record is what limits the rate, so the keys, partitions and the
constant part of every value are worked out once, a chunk's values are formatted in one comprehension
and share one ``ts``, and the producer reports only failed deliveries. A rate-limited chunk holds at
most ``PACE_S`` worth of records, each chunk released on the schedule ``start + n / rate``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import logging
import random
import string
import sys
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from kafka_soak.clients import encodings
from kafka_soak.infra import kafka_io

log = logging.getLogger("kafka_soak.load.generator")

PROGRESS_EVERY_S = 2.0
PRODUCER_SETTINGS = {"enable.idempotence": True, "acks": "all", "linger.ms": 5}
FULL_SPEED_CHUNK = 512  # records per chunk at full speed: their shared ts is a few ms old at most
PACE_S = 0.001  # a rate-limited chunk spans at most this much of the schedule
# Producer.produce's on_delivery and callback (none per record: the producer's own reports failures) and timestamp
# (0: the time librdkafka takes the record), for a call with every argument positional.
NO_CALLBACK, NOW = None, 0


@dataclass(frozen=True)
class Phase:
    """Ids ``first_id .. first_id + records - 1``, released at ``at_s`` after T0 or after step ``after_step``."""

    records: int
    first_id: int = 1
    rate: float = 0.0
    at_s: float | None = None
    after_step: int | None = None

    def select(self, todo: list[int]) -> list[int]:
        """The ids of ``todo`` (ascending) that belong to this phase."""
        return todo[bisect.bisect_left(todo, self.first_id):bisect.bisect_left(todo, self.first_id + self.records)]

    def chunk_size(self) -> int:
        return max(1, int(self.rate * PACE_S)) if self.rate > 0 else FULL_SPEED_CHUNK

    def describe(self) -> str:
        when = f"after step {self.after_step}" if self.after_step is not None else f"at T0+{self.at_s or 0:g} s"
        speed = f"{self.rate:.0f} records/s" if self.rate else "full speed"
        return f"ids {self.first_id}..{self.first_id + self.records - 1} {when} at {speed}"


@dataclass(frozen=True)
class LoadSpec:
    """What to produce and how fast (``rate`` in records/s; 0 = as fast as possible), in ``phases`` if given; with a
    ``value`` encoding, a profile input's records (keys from ``key_template``), else the reference apps' contract."""

    bootstrap: str
    topic: str
    records: int
    keys: int
    rate: float = 0.0
    payload_bytes: int = 0
    seed: int = 0
    phases: tuple[Phase, ...] = ()
    key_template: str = "{key}"
    value: Mapping[str, Any] | None = None

    def plan(self) -> tuple[Phase, ...]:
        return self.phases or (Phase(self.records, 1, self.rate, at_s=0),)


def key_of(record_id: int, keys: int) -> str:
    return f"key-{(record_id - 1) % keys:06d}"


def seq_of(record_id: int, keys: int) -> int:
    return (record_id - 1) // keys + 1


# The most one record may take: librdkafka's default message.max.bytes (the brokers' default max.message.bytes,
# 1,048,588, is higher), with room for a record's framing. A larger one is refused by the producer
# (MSG_SIZE_TOO_LARGE), after the run's Kafka was provisioned.
MESSAGE_MAX_BYTES, FRAMING_BYTES = 1_000_000, 200


def largest_record_bytes(records: int, keys: int, payload_bytes: int, key_template: str = "{key}",
                         value: Mapping[str, Any] | None = None, partitions: int = 1) -> int:
    """Key, value and header bytes of the load's longest record (its last id): its payload is in it as many times as
    the input's format writes it."""
    spec = LoadSpec("", "", records, keys, payload_bytes=payload_bytes, key_template=key_template, value=value)
    key, _partition, body, headers = records_for(spec, partitions).one(records, int(time.time() * 1000))
    return sum(len(part.encode() if isinstance(part, str) else part)
               for part in (key, body, *(text for header in headers or () for text in header)))


def middle(name: str) -> str:
    """What lies between a record's id and its seq in the contract's JSON value."""
    return f', "key": "{name}", "seq": '


def partition_of(key: str, partitions: int) -> int:
    """CRC32 of the key, like librdkafka's ``consistent`` partitioner; fixed so a resume can recompute it."""
    return zlib.crc32(key.encode()) % partitions


class Records:
    """The run's records by id: keys and partitions worked out once, when the first chunk is asked for (a check of one
    record's size needs none of them), values formatted a chunk at a time."""

    def __init__(self, keys: int, partitions: int, payload: str) -> None:
        if payload and not (payload.isascii() and payload.isalnum()):
            raise ValueError("the payload goes into JSON unescaped: ASCII letters and digits only")
        self.keys, self.payload, self.partition_count = keys, payload, partitions

    @cached_property
    def names(self) -> list[str]:
        return [key_of(i, self.keys) for i in range(1, self.keys + 1)]

    @cached_property
    def partitions(self) -> list[int]:
        return [partition_of(name, self.partition_count) for name in self.names]

    @cached_property
    def middles(self) -> list[str]:
        return [middle(name) for name in self.names]

    def chunk(self, ids: list[int], ts_ms: int) -> list[tuple[str, int, str, None]]:
        """``(key, partition, value, headers)`` per id; the value is what ``json.dumps`` writes for the contract's
        fields, and there are no headers."""
        keys, names, partitions, middles = self.keys, self.names, self.partitions, self.middles
        tail = self.tail(ts_ms)
        return [(names[k], partitions[k], f'{{"id": {i}{middles[k]}{(i - 1) // keys + 1}{tail}', None)
                for i in ids for k in ((i - 1) % keys,)]

    def one(self, record_id: int, ts_ms: int) -> tuple[str, int, str, None]:
        """The record of one id, as ``chunk`` gives it, without working out every key."""
        name = key_of(record_id, self.keys)
        value = f'{{"id": {record_id}{middle(name)}{seq_of(record_id, self.keys)}{self.tail(ts_ms)}'
        return name, partition_of(name, self.partition_count), value, None

    def tail(self, ts_ms: int) -> str:
        return f', "payload": "{self.payload}", "ts": {ts_ms}}}'


    def partitions_of(self, ids: list[int]) -> list[int]:
        partitions, keys = self.partitions, self.keys
        return [partitions[(i - 1) % keys] for i in ids]

    @staticmethod
    def id_of(value: bytes, _headers: list[tuple[str, bytes]] | None) -> int:
        """The id of a record of the contract: its value's ``id``."""
        return json.loads(value)["id"]


def records_for(spec: LoadSpec, partitions: int) -> Records | encodings.ProfileRecords:
    """The run's records: the profile input's own format if the spec has one, else the contract's."""
    payload = "".join(random.Random(spec.seed).choices(string.ascii_letters, k=spec.payload_bytes))
    if spec.value is None or spec.value["encoding"] == encodings.SOAK:
        return Records(spec.keys, partitions, payload)
    return encodings.ProfileRecords(spec.key_template, spec.value, spec.keys,
                                    partial(partition_of, partitions=partitions), payload, spec.seed)


def resume_point(last_ids: dict[int, int | None], partitions_of: Callable[[list[int]], list[int]],
                 records: int) -> list[int]:
    """The ids still to produce, given the newest id already in each partition (``None`` = empty) and the partition
    of each id."""
    if all(v is None for v in last_ids.values()):
        return list(range(1, records + 1))
    floor = min((v or 0) for v in last_ids.values())
    ids = list(range(floor + 1, records + 1))
    return [i for i, partition in zip(ids, partitions_of(ids), strict=True) if i > (last_ids.get(partition) or 0)]


class Progress:
    """Writes the generator's progress where the waiting task and a person can read it."""

    def __init__(self, path: Path | None, spec: LoadSpec, resumed_from: int) -> None:
        self.path, self.spec, self.resumed_from = path, spec, resumed_from
        self.started = time.time()
        self.next_report = self.started + PROGRESS_EVERY_S

    def report(self, produced: int, done: bool = False) -> None:
        now = time.time()
        if not done and now < self.next_report:
            return
        self.next_report = now + PROGRESS_EVERY_S
        elapsed = max(now - self.started, 1e-6)
        sent = produced - self.resumed_from
        state = {"produced": produced, "records": self.spec.records, "rate_per_s": round(sent / elapsed, 1),
                 "elapsed_s": round(elapsed, 2), "resumed_from": self.resumed_from, "done": done,
                 "updated_at": now}
        log.info("generator: %d/%d records (%.0f%%), %.0f records/s%s", produced, self.spec.records,
                 100.0 * produced / self.spec.records, state["rate_per_s"], ", done" if done else "")
        if self.path:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state))
            tmp.replace(self.path)


def wait_for(phase: Phase, t0: float, steps_dir: Path | None, report_every_s: float = 5.0) -> None:
    """Block until ``phase`` is due: its moment after T0, or the result file of the step it follows."""
    if phase.after_step is None:
        delay = t0 + (phase.at_s or 0) - time.time()
        if delay > 0:
            log.info("generator: %s, in %.1f s", phase.describe(), delay)
            time.sleep(delay)
        return
    if steps_dir is None:
        raise ValueError(f"phase {phase.describe()} needs --steps-dir to see when step {phase.after_step} ran")
    marker, next_report = steps_dir / f"step-{phase.after_step}.json", 0.0
    while not marker.exists():
        if time.monotonic() >= next_report:
            log.info("generator: waiting for step %d before producing %s", phase.after_step, phase.describe())
            next_report = time.monotonic() + report_every_s
        time.sleep(0.05)


def produce(spec: LoadSpec, progress_file: Path | None = None, t0: float | None = None,
            steps_dir: Path | None = None) -> int:
    """Produce the missing part of the run's input, phase by phase; returns how many records this call sent."""
    records = records_for(spec, kafka_io.partition_count(spec.bootstrap, spec.topic))
    last_ids = {p: (records.id_of(*last) if last else None)
                for p, last in kafka_io.last_records(spec.bootstrap, spec.topic).items()}
    todo = resume_point(last_ids, records.partitions_of, spec.records)
    resumed_from = spec.records - len(todo)
    if resumed_from:
        log.info("generator: resuming, %d of %d ids already in %s", resumed_from, spec.records, spec.topic)

    errors: list[str] = []

    def on_delivery(err, _msg) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer(kafka_io.client_config(spec.bootstrap, {
        **PRODUCER_SETTINGS, "delivery.report.only.error": True, "on_delivery": on_delivery}))
    progress = Progress(progress_file, spec, resumed_from)
    t0 = time.time() if t0 is None else t0
    sent = 0
    for phase in spec.plan():
        ids = phase.select(todo)
        if not ids:
            continue
        wait_for(phase, t0, steps_dir)
        log.info("generator: producing %s", phase.describe())
        start, size = time.monotonic(), phase.chunk_size()
        for n in range(0, len(ids), size):
            if phase.rate > 0:
                ahead = start + n / phase.rate - time.monotonic()
                if ahead > 0:
                    producer.poll(0)
                    time.sleep(ahead)
            chunk = ids[n:n + size]
            for key, partition, value, headers in records.chunk(chunk, int(time.time() * 1000)):
                while True:
                    try:  # all positional: keywords cost a dict per call, a tenth of a record's time
                        producer.produce(spec.topic, value, key, partition, NO_CALLBACK, NO_CALLBACK, NOW, headers)
                        break
                    except BufferError:
                        producer.poll(0.001)  # only failures are reported: nothing to wait for but space
            if errors:
                break
            sent += len(chunk)
            progress.report(resumed_from + sent)
    remaining = producer.flush(60)
    if errors or remaining:
        raise RuntimeError(f"generator: {len(errors)} records failed ({errors[:3]}), {remaining} undelivered; "
                           "rerun to resume")
    progress.report(spec.records, done=True)
    return len(todo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("bootstrap", "topic"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--keys", type=int, required=True)
    parser.add_argument("--rate", type=float, default=0.0, help="records/s of a run without --phases")
    parser.add_argument("--phases", type=json.loads, default=[],
                        help='JSON list of {"records", "first_id", "rate", "at_s" | "after_step"}')
    parser.add_argument("--payload-bytes", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--key-template", help='a profile input\'s key template, with --value (default "{key}")')
    parser.add_argument("--value", type=json.loads, default=None,
                        help='a profile input\'s value encoding, JSON: {"encoding": "json", "template": {...}}; without '
                             "it, records follow the reference apps' contract")
    parser.add_argument("--start-at", type=float, default=None, help="T0, epoch seconds: phases count from it")
    parser.add_argument("--steps-dir", type=Path, help="where the program's step results appear (after_step)")
    parser.add_argument("--progress-file", type=Path)
    args = parser.parse_args(argv)
    key_template = "{key}" if args.key_template is None else args.key_template
    if args.value is None and args.key_template is not None:
        parser.error("--key-template: takes --value (a profile input's value encoding)")
    if args.value is not None:
        errors = encodings.key_problems(key_template, "--key-template") + encodings.problems(args.value, "--value")
        if errors:
            parser.error("; ".join(errors))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    phases = tuple(Phase(**p) for p in args.phases)
    spec = LoadSpec(args.bootstrap, args.topic, args.records, args.keys, args.rate, args.payload_bytes, args.seed,
                    phases, key_template, args.value)
    produce(spec, args.progress_file, args.start_at, args.steps_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
