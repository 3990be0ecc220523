"""Generator: records/s at full speed and rate accuracy, against a bare confluent-kafka loop, one broker.

Every round produces into a fresh topic of the same embedded broker. Full speed: the generator
(``kafka_soak.generator.produce``) and a bare ``produce()`` loop with the same producer settings and
values of the same size, alternating, so both see the same machine moment. Rate: the generator at a
fixed rate, and the simplest rate limiter (``time.sleep(1 / rate)`` after each record); the rate is
read from the produced records' timestamps by a consumer that follows the topic.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

from common import figure, parse_size, runs_dir, write_results
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_soak import generator, kafka_io
from kafka_soak.backends.embedded import EmbeddedBackend

PAYLOAD_BYTES, KEYS, PARTITIONS = 100, 500, 4
SIZES = {"quick": {"records": 1_000_000, "rounds": 2, "rate_seconds": 10},
         "large": {"records": 1_000_000, "rounds": 5, "rate_seconds": 60}}
RATES = (1000, 20000)
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


def full_speed(cluster: Any, records: int, rounds: int) -> dict[str, list[float]]:
    """records/s of both producers, alternating rounds, each into its own topic."""
    speeds: dict[str, list[float]] = {"generator": [], "bare loop": []}
    for r in range(rounds):
        for name, produce in (("generator", run_generator), ("bare loop", bare_loop)):
            topic = cluster.topics[f"{name.split()[0]}-{r}"]
            started = time.perf_counter()
            produce(cluster.bootstrap_servers, topic, records)
            speeds[name].append(records / (time.perf_counter() - started))
            print(f"full speed, round {r}: {name} {speeds[name][-1]:,.0f} records/s", flush=True)
    return speeds


def rate_accuracy(cluster: Any, rate: int, seconds: int) -> dict[str, float]:
    """Achieved records/s of both producers asked for ``rate``, as the records' timestamps show."""
    achieved = {}
    for name, produce in (("generator", run_generator), ("bare loop", bare_loop)):
        topic = cluster.topics[f"{name.split()[0]}-rate-{rate}"]
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
    topics = {f"{who}-{r}": PARTITIONS for who in ("generator", "bare") for r in range(plan["rounds"])}
    topics |= {f"{who}-rate-{rate}": PARTITIONS for who in ("generator", "bare") for rate in RATES}
    backend = EmbeddedBackend(work_dir)
    try:
        cluster = backend.provision(topics, "bench")
        speeds = full_speed(cluster, plan["records"], plan["rounds"])
        rates = {rate: rate_accuracy(cluster, rate, plan["rate_seconds"]) for rate in RATES}
    finally:
        backend.release()
    gen, bare = statistics.median(speeds["generator"]), statistics.median(speeds["bare loop"])
    figures = [figure("full speed", gen, "records/s", bare, f"≥ {SPEED_TARGET:g}× baseline",
                      gen >= SPEED_TARGET * bare)]
    for rate, achieved in rates.items():
        error = {name: 100 * (value / rate - 1) for name, value in achieved.items()}
        figures.append(figure(f"rate error at {rate:,}/s", error["generator"], "%", error["bare loop"],
                              f"within ±{RATE_TARGET_PCT:g} %", abs(error["generator"]) <= RATE_TARGET_PCT))
    value_len = len(sample_value(plan["records"]))
    body = f"""
One embedded broker (librdkafka mock cluster, {PARTITIONS} partitions per topic), a fresh topic per round.
Full speed: {plan['records']:,} records of {PAYLOAD_BYTES}-byte payloads ({value_len}-byte JSON values,
{KEYS} keys) through `kafka_soak.generator.produce`, and a bare `Producer.produce()` loop with the same
producer settings (`{generator.PRODUCER_SETTINGS}`) and {value_len}-byte values, {plan['rounds']} rounds each,
alternating; the figure is the median round (records / wall time of the call, producer creation to flush).
Rounds (records/s): generator {', '.join(f'{v:,.0f}' for v in speeds['generator'])}; bare loop
{', '.join(f'{v:,.0f}' for v in speeds['bare loop'])}.

Rate: {plan['rate_seconds']} s of records at each rate; the baseline sleeps `1 / rate` after each record.
The achieved rate is (records − 1) / (last − first produce timestamp), read by a consumer following the topic.
Achieved (records/s): {'; '.join(f"{rate:,}/s: generator {a['generator']:,.1f}, bare loop {a['bare loop']:,.1f}"
                                 for rate, a in rates.items())}.
"""
    write_results("generator", "Generator", size, figures, body,
                  {"records": plan["records"], "rounds": speeds, "rates": {str(k): v for k, v in rates.items()},
                   "work_dir": str(work_dir)})


if __name__ == "__main__":
    main()
