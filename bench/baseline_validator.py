"""The baseline checker: one Python process, confluent-kafka and dicts/sets, as the kube-kafka controller did it.

    python bench/baseline_validator.py --bootstrap B --input-topic I --output-topic O --assertions-topic A

Reads every partition from its low to its high watermark, in partition order (so outputs are seen in the
order the Spark checker sorts them: topic partition, then offset), and prints one JSON line with the record
counts and the count of each anomaly, defined exactly as the GX expectations count them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterator

from confluent_kafka import Consumer, TopicPartition

BATCH = 10_000


def values(bootstrap: str, topic: str) -> Iterator[bytes]:
    """Every record value of ``topic``, partition by partition, each from its low to its high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafka-soak-baseline", "log_level": 3,
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 52_428_800,
                         "fetch.wait.max.ms": 10})  # as the Spark reader: a bounded read needs no long poll
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        for p in sorted(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, p, low)])
            position = low
            while position < high:  # as the Spark reader: never ask for more than the offsets left
                for m in consumer.consume(min(BATCH, high - position), timeout=1.0):
                    if m.error() is None and m.offset() < high:
                        yield m.value()
                position = consumer.position([TopicPartition(topic, p)])[0].offset
    finally:
        consumer.close()


def check(bootstrap: str, topics: dict[str, str]) -> dict[str, object]:
    """Record counts and anomaly counts of the run's history."""
    inputs: set[int] = set()
    input_rows = 0
    for value in values(bootstrap, topics["input"]):
        inputs.add(json.loads(value)["id"])
        input_rows += 1

    copies: dict[int, int] = defaultdict(int)
    key_ids: dict[str, set[int]] = defaultdict(set)
    id_keys: dict[int, set[str]] = defaultdict(set)
    max_seq: dict[str, int] = {}
    output_rows = unexpected = reordered = 0
    for value in values(bootstrap, topics["output"]):
        out = json.loads(value)
        rid, key, seq = out["id"], out["key"], out["seq"]
        output_rows += 1
        copies[rid] += 1
        key_ids[key].add(out["assigned_id"])
        id_keys[out["assigned_id"]].add(key)
        if rid not in inputs:
            unexpected += 1
        if copies[rid] == 1:  # only an id's first output counts for ordering
            previous = max_seq.get(key)
            if previous is not None and seq < previous:
                reordered += 1
            max_seq[key] = seq if previous is None else max(previous, seq)
    assertions = sum(1 for _ in values(bootstrap, topics["assertions"]))
    return {
        "records": {"input": input_rows, "output": output_rows, "assertions": assertions,
                    "distinct_input_ids": len(inputs)},
        "anomalies": {
            "lost": sum(1 for i in inputs if i not in copies),
            "duplicated": sum(1 for i in inputs if copies.get(i, 0) > 1),
            "unexpected": unexpected,
            "id_reuse": sum(1 for ids in key_ids.values() if len(ids) > 1)
            + sum(1 for keys in id_keys.values() if len(keys) > 1),
            "stale_state": assertions,
            "reordered": reordered,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("bootstrap", "input-topic", "output-topic", "assertions-topic"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    started = time.monotonic()
    result = check(args.bootstrap, {"input": args.input_topic, "output": args.output_topic,
                                    "assertions": args.assertions_topic})
    result["seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
