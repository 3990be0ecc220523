"""A killed broker's restart with a soak's data on it: the run's segments against Kafka's default.

A broker killed by a fault (``bN-``: SIGKILL, no controlled shutdown) recovers at its next start every segment of each
partition past its last flushed point, which advances when a segment rolls. The figure: ``set_broker(1, True)``, from
the start of the killed node until it serves again, on the run's brokers (``local_kafka.SEGMENT_BYTES``); the
baseline: the same with Kafka's default segment (1 GiB), where nothing of a soak rolls. Same data written the same way
to a one-node cluster (12 partitions, as soak_nightly's input; in transactions, as an exactly-once app writes), killed
once its recovery points were last checkpointed (``recovery-point-offset-checkpoint`` rewritten after the writes
ended), then started again; rounds alternate between the two.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from common import figure, parse_size, runs_dir, write_results
from confluent_kafka import Producer

from kafka_soak.backends import local_kafka
from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.infra import kafka_io

SIZES = {"quick": {"mb": 300, "rounds": 1}, "large": {"mb": 1800, "rounds": 1}}
PARTITIONS = 12
KAFKA_DEFAULT_SEGMENT = 2**30
VALUE = b"x" * 300  # a soak's record: its JSON and payload (the cost of recovery goes with the batches, not the bytes)
TRANSACTION = 1000  # records per transaction, written as an EOS app writes its outputs
CHECKPOINT_WAIT_S = 120.0  # Kafka rewrites its recovery points every 60 s (log.flush.offset.checkpoint.interval.ms)


def restart_after_kill(work: Path, megabytes: int, segment_bytes: int) -> float:
    """Seconds from the restart of a node killed with ``megabytes`` of log on it until it serves again."""
    local_kafka.SEGMENT_BYTES = segment_bytes  # what Layout.server_properties gives the node
    backend = LocalKafkaBackend(work, 1)
    try:
        cluster = backend.provision({"input": PARTITIONS}, "bench")
        producer = Producer(kafka_io.client_config(cluster.bootstrap_servers,
                                                   {"linger.ms": 5, "transactional.id": f"bench-{work.name}"}))
        producer.init_transactions(60)
        for i in range(megabytes * 2**20 // len(VALUE)):
            if i % TRANSACTION == 0:
                producer.begin_transaction()
            producer.produce(cluster.topics["input"], VALUE, key=str(i % 1000))
            producer.poll(0)
            if i % TRANSACTION == TRANSACTION - 1:
                producer.commit_transaction(60)
        producer.commit_transaction(60)
        del producer  # destroyed now: a client left alive would retry the killed node through the restart
        written = time.time()
        checkpoint = backend.home / "node-1" / "data" / "recovery-point-offset-checkpoint"
        deadline = time.monotonic() + CHECKPOINT_WAIT_S
        while checkpoint.stat().st_mtime <= written:
            assert time.monotonic() < deadline, f"{checkpoint} was not rewritten within {CHECKPOINT_WAIT_S:.0f} s"
            time.sleep(1)
        backend.set_broker(1, False)
        started = time.monotonic()
        backend.set_broker(1, True, timeout=900)
        return time.monotonic() - started
    finally:
        backend.release(None)


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    megabytes, rounds = SIZES[size]["mb"], SIZES[size]["rounds"]
    work = runs_dir("broker-recovery")
    times: dict[str, list[float]] = {"run's": [], "default": []}
    run_segment = local_kafka.SEGMENT_BYTES
    for r in range(rounds):
        for name, segment in (("default", KAFKA_DEFAULT_SEGMENT), ("run's", run_segment)):
            times[name].append(restart_after_kill(work / f"{name[:3]}-{r}", megabytes, segment))
            print(f"round {r + 1}: {name} segments, restart after kill {times[name][-1]:.1f} s", flush=True)
    mine, base = statistics.median(times["run's"]), statistics.median(times["default"])
    figures = [figure(f"restart of a killed broker holding {megabytes} MB", mine, "s", base,
                      "< 120 s (what a bN+ step waits) and < 1× baseline", mine < 120 and mine < base)]
    rows = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(times["run's"], times["default"], strict=True))
    body = f"""
One node of Apache Kafka (the `local` backend), {megabytes} MB written to a topic of {PARTITIONS} partitions in
records of {len(VALUE)} B, {TRANSACTION} records a transaction, then SIGKILL (`set_broker(1, False)`,
what `bN-` does) once the node had checkpointed its recovery points, then `set_broker(1, True)` (what `bN+` does:
start it on its data and wait until it serves). Value: segments of {run_segment // 2**20} MiB
(`local_kafka.SEGMENT_BYTES`); baseline: Kafka's default of {KAFKA_DEFAULT_SEGMENT // 2**30} GiB. Rounds (s),
run's / default: {rows}. What a restart is made of: the JVM's start, the recovery of each partition's unflushed
segments (CRC checks, indexes and producer state rebuilt from every batch), the node's registration and unfencing.
On an idle machine the recovery is a few seconds of it; in a night at a load average near 15, a killed broker spent
98 s of its 160 s restart recovering 1.8 GB from offset 0 (bench/notes.md), which the run's segments bound to about
one segment per partition.
"""
    write_results("broker_recovery", "A killed broker's restart", size, figures, body,
                  {"rounds": times, "work_dir": str(work)})


if __name__ == "__main__":
    main()
