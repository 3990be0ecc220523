"""Generator: records/s at full speed and rate accuracy, against a bare confluent-kafka loop, one broker.

Every round produces into a fresh topic of the same Apache Kafka broker (backend local). Full speed: the generator
(``kafka_soak.load.generator.produce``) and a bare ``produce()`` loop with the same producer settings and
values of the same size, alternating, so both see the same machine moment; then the same for a profile input (the
app's own JSON format from a template, with the ``soak.id``/``soak.seq`` headers) against a bare loop writing the
same records by hand. Rate: the generator at a fixed rate, and the simplest rate limiter (``time.sleep(1 / rate)``
after each record); the rate is read from the produced records' timestamps by a consumer that follows the topic.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

from common import figure, parse_size, runs_dir, write_results
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.clients import encodings
from kafka_soak.infra import kafka_io
from kafka_soak.load import generator
from kafka_soak.params import KAFKA_VERSION
from kafka_soak.shared.contracts import ID_HEADER, SEQ_HEADER

PAYLOAD_BYTES, KEYS, PARTITIONS = 100, 500, 4
SIZES = {"quick": {"records": 1_000_000, "rounds": 3, "rate_seconds": 10},
         "large": {"records": 1_000_000, "rounds": 5, "rate_seconds": 60}}
RATES = (1000, 20000)
# A profile input, the orders: the generator compiles it, the profile's bare loop writes the same by hand.
PROFILE_KEY = "customer-{key}"
PROFILE_VALUE = {"encoding": "json", "template": {"orderId": "{id}", "customer": "customer-{key}",
                                                  "amount": "{random_int:1:100}", "seq": "{seq}"}}
COMPARED = 1000  # records of each partition read back from both profile topics: they must be the same
SPEED_TARGET = 0.9  # of the bare loop's records/s
RATE_TARGET_PCT = 2.0


def bare_loop(bootstrap: str, topic: str, records: int, rate: float = 0.0) -> None:
    """What a user would write instead: one value, keys cycling, ``sleep(1 / rate)`` when rate-limited."""
    producer = Producer(kafka_io.client_config(bootstrap, generator.PRODUCER_SETTINGS))
    value = sample_value(records).encode()
    keys = [generator.key_of(i, KEYS) for i in range(1, KEYS + 1)]
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, keys[i % KEYS])
                break
            except BufferError:
                producer.poll(0.05)
        if rate:
            time.sleep(1 / rate)
    producer.flush(60)


def sample_value(records: int) -> str:
    """The generator's value for a record halfway through: the baseline's values have its size."""
    return generator.Records(KEYS, PARTITIONS, "x" * PAYLOAD_BYTES).chunk([records // 2], int(time.time() * 1000))[0][2]


def run_generator(bootstrap: str, topic: str, records: int, rate: float = 0.0) -> None:
    generator.produce(generator.LoadSpec(bootstrap, topic, records, KEYS, rate, PAYLOAD_BYTES))


def bare_profile_loop(bootstrap: str, topic: str, records: int) -> None:
    """What a team would write for the profile's records: the order's JSON by an f-string per record, the amounts
    from the same draws (``encodings.random_ints``, a chunk of ids at a time), the headers as a list, the partition
    left to librdkafka (-1: its default partitioner is the generator's CRC32 of the key); ``produce`` called with
    every argument positional as the generator calls it (keywords would cost the loop a dict per record)."""
    producer = Producer(kafka_io.client_config(bootstrap, generator.PRODUCER_SETTINGS))
    keys = [f"customer-{k}" for k in range(KEYS)]
    for start in range(1, records + 1, generator.FULL_SPEED_CHUNK):
        ids = range(start, min(start + generator.FULL_SPEED_CHUNK, records + 1))
        for i, amount in zip(ids, encodings.random_ints(ids, 0, 0, 1, 100), strict=True):
            k, s = (i - 1) % KEYS, (i - 1) // KEYS + 1
            value = f'{{"orderId":{i},"customer":"customer-{k}","amount":{amount},"seq":{s}}}'
            while True:
                try:
                    producer.produce(topic, value, keys[k], -1, None, None, 0, [(ID_HEADER, str(i)), (SEQ_HEADER, str(s))])
                    break
                except BufferError:
                    producer.poll(0.05)
    producer.flush(60)


def run_profile_generator(bootstrap: str, topic: str, records: int) -> None:
    generator.produce(generator.LoadSpec(bootstrap, topic, records, KEYS, key_template=PROFILE_KEY, value=PROFILE_VALUE))


# Who produces at full speed, in the order each round runs them.
CONTENDERS = {"generator": run_generator, "bare loop": bare_loop, "profile generator": run_profile_generator,
              "profile bare loop": bare_profile_loop}


def topic_of(name: str, suffix: str) -> str:
    return f"{name.replace(' ', '-')}-{suffix}"


def first_records(bootstrap: str, topic: str, count: int) -> dict[int, list[tuple]]:
    """The first ``count`` records of every partition: key, value and headers."""
    consumer = Consumer(kafka_io.client_config(bootstrap, {"group.id": "bench-compare"}))
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    found: dict[int, list[tuple]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    while any(len(v) < count for v in found.values()) and time.monotonic() < deadline:
        for msg in consumer.consume(10000, 0.2):
            if msg.error() is None and len(found[msg.partition()]) < count:
                found[msg.partition()].append((msg.key(), msg.value(), msg.headers()))
    consumer.close()
    return found


class Follower(threading.Thread):
    """Reads a topic as it fills: how many records, and the first and last produce timestamps (ms)."""

    def __init__(self, bootstrap: str, topic: str, records: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.records = bootstrap, topic, records
        self.count, self.first_ms, self.last_ms = 0, float("inf"), 0.0

    def run(self) -> None:
        consumer = Consumer(kafka_io.client_config(self.bootstrap, {"group.id": "bench-follower"}))
        consumer.assign([TopicPartition(self.topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 600
        while self.count < self.records and time.monotonic() < deadline:
            for msg in consumer.consume(10000, 0.2):
                if msg.error() is None:
                    ts = msg.timestamp()[1]
                    self.count += 1
                    self.first_ms, self.last_ms = min(self.first_ms, ts), max(self.last_ms, ts)
        consumer.close()

    def rate(self) -> float:
        return (self.count - 1) / ((self.last_ms - self.first_ms) / 1000)


def full_speed(cluster: Any, records: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    """records per wall second and per CPU second of this process (all its threads, librdkafka's too) of
    both producers, alternating rounds, each into its own topic. CPU seconds barely move with the load
    other work puts on the machine; wall seconds do."""
    speeds: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in CONTENDERS}
    for r in range(rounds):
        for name, produce in CONTENDERS.items():
            topic = cluster.topics[topic_of(name, str(r))]
            wall, cpu = time.perf_counter(), time.process_time()
            produce(cluster.bootstrap_servers, topic, records)
            speeds[name]["wall"].append(records / (time.perf_counter() - wall))
            speeds[name]["cpu"].append(records / (time.process_time() - cpu))
            print(f"full speed, round {r}: {name} {speeds[name]['wall'][-1]:,.0f} records/s, "
                  f"{speeds[name]['cpu'][-1]:,.0f} records per CPU second", flush=True)
    return speeds


def rate_accuracy(cluster: Any, rate: int, seconds: int) -> dict[str, float]:
    """Achieved records/s of both producers asked for ``rate``, as the records' timestamps show."""
    achieved = {}
    for name, produce in (("generator", run_generator), ("bare loop", bare_loop)):
        topic = cluster.topics[topic_of(name, f"rate-{rate}")]
        follower = Follower(cluster.bootstrap_servers, topic, rate * seconds)
        follower.start()
        produce(cluster.bootstrap_servers, topic, rate * seconds, rate)
        follower.join(120)
        achieved[name] = follower.rate()
        print(f"rate {rate}/s: {name} achieved {achieved[name]:,.1f} records/s ({follower.count} records)", flush=True)
    return achieved


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    plan = SIZES[size]
    work_dir = runs_dir("generator")
    topics = {topic_of(name, str(r)): PARTITIONS for name in CONTENDERS for r in range(plan["rounds"])}
    topics |= {topic_of(name, f"rate-{rate}"): PARTITIONS for name in ("generator", "bare loop") for rate in RATES}
    backend = LocalKafkaBackend(work_dir)
    try:
        cluster = backend.provision(topics, "bench")
        speeds = full_speed(cluster, plan["records"], plan["rounds"])
        written = [first_records(cluster.bootstrap_servers, cluster.topics[topic_of(name, "0")], COMPARED)
                   for name in ("profile generator", "profile bare loop")]
        if written[0] != written[1]:
            raise AssertionError("the profile's generator and bare loop wrote different records: the comparison "
                                 "means nothing")
        rates = {rate: rate_accuracy(cluster, rate, plan["rate_seconds"]) for rate in RATES}
    finally:
        backend.release(None)
    median = {name: {how: statistics.median(speeds[name][how]) for how in ("wall", "cpu")} for name in CONTENDERS}
    gen, bare = median["generator"], median["bare loop"]
    profile, profile_bare = median["profile generator"], median["profile bare loop"]
    figures = [figure("full speed", gen["wall"], "records/s", bare["wall"], f"≥ {SPEED_TARGET:g}× baseline",
                      gen["wall"] >= SPEED_TARGET * bare["wall"]),
               figure("full speed per CPU second", gen["cpu"], "records/s", bare["cpu"],
                      f"≥ {SPEED_TARGET:g}× baseline", gen["cpu"] >= SPEED_TARGET * bare["cpu"]),
               figure("profile JSON template, full speed", profile["wall"], "records/s", profile_bare["wall"],
                      f"≥ {SPEED_TARGET:g}× baseline", profile["wall"] >= SPEED_TARGET * profile_bare["wall"]),
               figure("profile JSON template, per CPU second", profile["cpu"], "records/s", profile_bare["cpu"],
                      f"≥ {SPEED_TARGET:g}× baseline", profile["cpu"] >= SPEED_TARGET * profile_bare["cpu"])]
    for rate, achieved in rates.items():
        figures.append(figure(f"achieved rate, {rate:,}/s asked", achieved["generator"], "records/s",
                              achieved["bare loop"], f"within ±{RATE_TARGET_PCT:g} % of {rate:,}",
                              abs(achieved["generator"] / rate - 1) * 100 <= RATE_TARGET_PCT))
    value_len = len(sample_value(plan["records"]))
    profile_records = generator.records_for(generator.LoadSpec("", "", plan["records"], KEYS, key_template=PROFILE_KEY,
                                                               value=PROFILE_VALUE), PARTITIONS)
    profile_len = len(profile_records.chunk([plan["records"] // 2], 0)[0][2])
    body = f"""
One Apache Kafka broker (backend `local`, Kafka {KAFKA_VERSION}, {PARTITIONS} partitions per topic),
a fresh topic per round.
Full speed: {plan['records']:,} records of {PAYLOAD_BYTES}-byte payloads ({value_len}-byte JSON values,
{KEYS} keys) through `kafka_soak.load.generator.produce`, and a bare `Producer.produce()` loop with the same
producer settings (`{generator.PRODUCER_SETTINGS}`) and {value_len}-byte values, {plan['rounds']} rounds each,
alternating; the figures are the median round: records / wall time of the call (producer creation to
flush), and records / CPU time of this process over the same call (all its threads, so librdkafka's too;
not the broker's process; less sensitive than wall time to other load, not immune to it).
Rounds, records/s wall (per CPU second): {'; '.join(
    f"{name} " + ", ".join(f"{w:,.0f} ({c:,.0f})" for w, c in zip(v['wall'], v['cpu'], strict=True))
    for name, v in speeds.items() if name in ("generator", "bare loop"))}.
CPU per record (median rounds): generator {1e6 / gen["cpu"]:.2f} µs, bare loop {1e6 / bare["cpu"]:.2f} µs. What limits
the generator: the Python work of a distinct JSON value per record (id, seq, ts); unlike the bare loop it
asks librdkafka to report failed deliveries only and names each record's partition. Both share the 2 cores
with the broker process and with whatever else runs, so rounds vary (the CPU figures too).

Profile input: the same {plan['records']:,} records, {KEYS} keys, as a team's own format: key `{PROFILE_KEY}`, value
`{PROFILE_VALUE}` (about {profile_len}-byte JSON values), headers `soak.id` and `soak.seq`, through
`kafka_soak.load.generator.produce` with the profile input, and a bare loop that writes the same records by hand (an
f-string per value, the amounts from the same `encodings.random_ints` a chunk of ids at a time, a header list per
record, librdkafka's partitioner; both call `produce()` with every argument positional, as a keyword costs a
dict per call), interleaved with the rounds above. The first {COMPARED:,} records of every
partition are read back from both topics of round 0 and checked equal (key, value, headers). Rounds, records/s wall
(per CPU second): {'; '.join(
    f"{name} " + ", ".join(f"{w:,.0f} ({c:,.0f})" for w, c in zip(speeds[name]['wall'], speeds[name]['cpu'], strict=True))
    for name in ("profile generator", "profile bare loop"))}. CPU per record (median rounds): generator
{1e6 / profile["cpu"]:.2f} µs, bare loop {1e6 / profile_bare["cpu"]:.2f} µs. The template is compiled once into
`str.format` text and a chunk formatted in one comprehension; what the generator adds over the hand-written loop is
the generic call per value (`str.format` with positional fields) and the draw columns zipped in.

Rate: {plan['rate_seconds']} s of records at each rate; the baseline sleeps `1 / rate` after each record.
The achieved rate is (records − 1) / (last − first produce timestamp), read by a consumer following the topic.
Error against the rate asked: {'; '.join(
    f"{rate:,}/s: generator {100 * (a['generator'] / rate - 1):+.2f} %, bare loop {100 * (a['bare loop'] / rate - 1):+.1f} %"
    for rate, a in rates.items())}. The bare loop falls behind by what each `produce()` and each sleep's
overshoot add to `1 / rate`; the generator releases chunks of at most 1 ms of records on the schedule
`start + n / rate`, so a late chunk is made up by the next ones and the error does not accumulate.
"""
    write_results("generator", "Generator", size, figures, body,
                  {"records": plan["records"], "rounds": speeds, "rates": {str(k): v for k, v in rates.items()},
                   "work_dir": str(work_dir)})


if __name__ == "__main__":
    main()
