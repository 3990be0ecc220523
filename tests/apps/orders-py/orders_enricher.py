"""orders-enricher: a team's Python app that enriches every order exactly once with Kafka transactions.

It knows nothing of any test harness: it reads its client settings from a Java-style properties file, its topic
names from its arguments, its own JSON orders, and writes each order enriched (the order id stays in the value).

    python orders_enricher.py --config app.properties --input orders --output orders-enriched [--hang-at ID]

``--hang-at ID`` plants a stall: on reading order ID it waits forever before processing its batch, as an app stuck on a
call that never returns. Its consumer stays in the group (librdkafka heartbeats from a thread of its own) and holds
its partitions; SIGTERM still ends it. It logs as most Python services do (``logging``, a line a record, each with its
time), and says when it got partitions to work on.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

# Settings this app passes on from its properties file to both of its clients, when present.
PASSED_ON = ("bootstrap.servers", "client.id", "security.protocol")
log = logging.getLogger("orders-enricher")


def load_properties(path: str) -> dict[str, str]:
    """``key=value`` lines of a Java properties file (comments and blank lines skipped)."""
    props = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith(("#", "!")):
                key, _, value = line.partition("=")
                props[key.strip()] = value.strip()
    return props


def enrich(order: dict) -> dict:
    return {**order, "amountCents": order["amount"] * 100, "enrichedBy": "orders-enricher"}


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("config", "input", "output"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--hang-at", type=int)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    props = load_properties(args.config)
    common = {k: props[k] for k in PASSED_ON if k in props}
    consumer = Consumer({**common, "group.id": props["group.id"], "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "session.timeout.ms": int(props.get("session.timeout.ms", 45000))})
    producer = Producer({**common, "transactional.id": f"{props['group.id']}-{props['client.id']}",
                         "transaction.timeout.ms": int(props.get("transaction.timeout.ms", 60000))})
    producer.init_transactions()
    consumer.subscribe([args.input], on_assign=lambda _consumer, partitions: log.info(
        "partitions assigned: %s", [p.partition for p in partitions]))
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.clear())
    log.info("orders-enricher %s: %s -> %s", props["client.id"], args.input, args.output)
    while running:
        batch = [m for m in consumer.consume(500, 0.2) if m.error() is None]
        if not batch:
            continue
        if any(json.loads(m.value())["orderId"] == args.hang_at for m in batch):
            log.info("order %d read; waiting forever", args.hang_at)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            threading.Event().wait()
        producer.begin_transaction()
        ends: dict[int, int] = {}
        for message in batch:
            producer.produce(args.output, json.dumps(enrich(json.loads(message.value()))), message.key())
            ends[message.partition()] = message.offset() + 1
        producer.send_offsets_to_transaction([TopicPartition(args.input, p, o) for p, o in ends.items()],
                                             consumer.consumer_group_metadata())
        try:
            producer.commit_transaction()
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction()
            committed = consumer.committed([TopicPartition(args.input, p) for p in ends])
            for tp in committed:
                consumer.seek(TopicPartition(args.input, tp.partition, max(tp.offset, 0)))
    consumer.close()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
