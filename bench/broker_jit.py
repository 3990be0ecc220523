"""The broker's JIT: a local Apache Kafka broker with C1 alone (``short_lived``, as a short run starts it) against the
JVM's default tiered compilation, side by side over the life of a short run.

    python bench/broker_jit.py --size quick   # 20 000 records a topic (the make soak default's load), 3 pairs
    python bench/broker_jit.py --size large   # also 1 000 000 records a topic

Per pair and variant: one broker (backend local) started, a soak history written to it (``soak_history``: input,
output and assertions) and read back whole (as the baseline checker reads it), then ``IDLE_S`` seconds of an idle
broker (a run's program, drain and checker mostly wait on it), then released. Measured: the broker JVM's CPU seconds
over its whole life, start included, and how fast the history went in. Writes ``bench/results/broker_jit.{json,md}``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import baseline_validator
import common
import soak_history

from kafka_soak.backends.local_kafka import SHORT_RUN_S, LocalKafkaBackend

SIZES = {"quick": (20_000,), "large": (20_000, 1_000_000)}
PAIRS = 3
IDLE_S = 30
VARIANTS = {"tiered": False, "c1": True}  # name: short_lived


def one(records: int, name: str, pair: int) -> dict[str, float]:
    work = common.runs_dir(f"broker-jit-{records}-{name}-{pair}")
    history = soak_history.History.of(records)
    backend = LocalKafkaBackend(work, short_lived=VARIANTS[name])
    try:
        cluster = backend.provision(history.topics(), prefix=f"jit-{records}")
        [broker] = [backend.processes.process(n) for n in backend.processes.names()]
        started = time.monotonic()
        sent = sum(soak_history.write(cluster.bootstrap_servers, cluster.topics, history).values())
        write_s = time.monotonic() - started
        bootstrap = cluster.bootstrap_servers
        read = sum(1 for topic in cluster.topics.values() for _ in baseline_validator.values(bootstrap, topic))
        if read != sent:
            raise RuntimeError(f"{name}: read back {read} records of the {sent} written")
        time.sleep(IDLE_S)
        cpu = broker.cpu_times()
    finally:
        backend.release(None)
    result = {"cpu_s": cpu.user + cpu.system, "write_records_per_s": sent / write_s}
    print(f"{records} records, pair {pair + 1}, {name}: {result['cpu_s']:.1f} CPU-s, "
          f"{result['write_records_per_s']:.0f} records/s in", flush=True)
    return result


def measure(records: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for pair in range(PAIRS):
        for name in VARIANTS:
            runs[name].append(one(records, name, pair))
    return {"records": records, "runs": runs,
            **{name: {key: statistics.median(r[key] for r in rs) for key in ("cpu_s", "write_records_per_s")}
               for name, rs in runs.items()}}


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    n, c1, tiered = f"{run['records']:,} records a topic", run["c1"], run["tiered"]
    return [common.figure(f"broker CPU seconds over a short run's life, {n}", c1["cpu_s"], "s", tiered["cpu_s"],
                          "< 1× (less CPU)", c1["cpu_s"] < tiered["cpu_s"]),
            common.figure(f"records/s written, {n}", c1["write_records_per_s"], "records/s",
                          tiered["write_records_per_s"], "", None, "what C1 alone costs in throughput")]


BODY = (f"Medians of {PAIRS} pairs, alternating. Value: the broker with C1 alone (`-XX:TieredStopAtLevel=1`), as a "
        f"run whose program lasts up to {SHORT_RUN_S} s starts its local brokers (`backends.local_kafka.SHORT_RUN_S`); baseline: "
        f"the JVM's default tiered compilation, as a longer soak keeps. Each broker: started, the history written and "
        f"read back, then {IDLE_S} s idle; CPU over its whole life.")


def main() -> None:
    common.run_sizes("broker_jit", "The broker's JIT over a short run", __doc__, SIZES, measure, figures, BODY)


if __name__ == "__main__":
    main()
