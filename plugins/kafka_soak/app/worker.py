"""The reference app under test: an exactly-once consume-transform-produce worker that assigns ids.

Each key gets a stable id the first time it is seen (``counter * partitions + partition``) from a
per-partition store backed by a changelog topic, restored when the partition is assigned. Every batch
is one Kafka transaction holding the outputs, the changelog writes, the self-check assertions and the
consumed offsets (``send_offsets_to_transaction``). SIGTERM is a graceful stop: the open batch is
committed and the consumer leaves the group.

Bug switches prove that the checker catches what it must: ``skip-restore`` (state is not restored on
assignment -> ids reused), ``drop`` (the output of every Nth input id is not written -> lost),
``duplicate`` (the output of every Nth input id is written again in a second transaction -> duplicated).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition

from kafka_soak import kafka_io
from kafka_soak.app.store import PartitionStore

log = logging.getLogger("kafka_soak.worker")

BUGS = ("none", "skip-restore", "drop", "duplicate")
BATCH = 500
REPORT_EVERY_S = 5.0


@dataclass(frozen=True)
class WorkerConfig:
    bootstrap: str
    app_id: str
    instance: int
    input_topic: str
    output_topic: str
    changelog_topic: str
    assertions_topic: str
    bug: str = "none"
    bug_every: int = 1000
    # The embedded broker acknowledges offsets sent to a transaction but does not store them; on it the
    # committed offsets are repeated with a plain commit after each transaction.
    mirror_offsets: bool = False


def bug_hits(config: WorkerConfig, record_id: int, bug: str) -> bool:
    """Whether a bug switch acts on this input id (deterministic, so the checker's count is exact)."""
    return config.bug == bug and record_id % config.bug_every == 0


class Worker:
    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.stopping = False
        self.stores: dict[int, PartitionStore] = {}
        self.processed = self.transactions = self.assertions = 0
        common = kafka_io.client_config(config.bootstrap)
        self.consumer = Consumer({
            **common, **kafka_io.GROUP_SETTINGS, "group.id": config.app_id,
            "client.id": f"{config.app_id}-{config.instance}", "isolation.level": "read_committed",
            "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self.producer = Producer({
            **common, "transactional.id": f"{config.app_id}-{config.instance}",
            "client.id": f"{config.app_id}-{config.instance}-producer", "linger.ms": 5,
            "transaction.timeout.ms": 30000})
        self.partitions = kafka_io.partition_count(config.bootstrap, config.input_topic)
        self.unmirrored: dict[int, int] = {}

    # -- rebalance -------------------------------------------------------------------------------
    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        if not numbers:
            return
        for p in numbers:
            self.stores[p] = PartitionStore(p, self.partitions)
        if self.config.bug == "skip-restore":
            log.warning("assigned partitions %s; bug skip-restore: starting from empty state", numbers)
            return
        restored = self.restore(numbers)
        log.info("assigned partitions %s; restored %d changelog records from %s", numbers, restored, self.config.changelog_topic)

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Every batch is committed before the next poll, so no transaction is open here.
        self.mirror_offsets()
        numbers = sorted(tp.partition for tp in partitions)
        for p in numbers:
            self.stores.pop(p, None)
        log.info("revoked partitions %s", numbers)

    def restore(self, partitions: list[int]) -> int:
        """Rebuild the stores of ``partitions`` from the changelog, up to its end."""
        marks = kafka_io.watermarks(self.config.bootstrap, self.config.changelog_topic)
        pending = {p: marks[p][1] for p in partitions if marks[p][1] > marks[p][0]}
        if not pending:
            return 0
        reader = Consumer(kafka_io.client_config(self.config.bootstrap, {
            "group.id": f"{self.config.app_id}-restore", "enable.auto.commit": False,
            "isolation.level": "read_committed"}))
        restored = 0
        try:
            reader.assign([TopicPartition(self.config.changelog_topic, p, marks[p][0]) for p in pending])
            while pending:
                for msg in reader.consume(BATCH, timeout=1.0):
                    if msg.error():
                        raise KafkaException(msg.error())
                    self.stores[msg.partition()].restore(msg.key().decode(), msg.value())
                    restored += 1
                # Positions, not record offsets: transaction markers occupy offsets after the last record.
                for tp in reader.position([TopicPartition(self.config.changelog_topic, p) for p in pending]):
                    if tp.offset >= pending[tp.partition]:
                        del pending[tp.partition]
        finally:
            reader.close()
        return restored

    # -- processing ------------------------------------------------------------------------------
    def process(self, msg: Message, duplicates: list[tuple[str, bytes, int]]) -> None:
        cfg = self.config
        record = json.loads(msg.value())
        key, p = record["key"], msg.partition()
        store = self.stores[p]
        assigned, stored_seq = store.assign(key)
        if record["seq"] != stored_seq + 1:
            self.assertions += 1
            assertion = {"kind": "stale_state", "key": key, "expected": stored_seq + 1, "found": record["seq"],
                         "partition": p, "instance": cfg.instance, "ts": int(time.time() * 1000)}
            log.error("!!! BROKEN !!! Expected %d but found %d partition: %d key: %s", stored_seq + 1,
                      record["seq"], p, key)
            self.producer.produce(cfg.assertions_topic, key=key, value=json.dumps(assertion))
        self.producer.produce(cfg.changelog_topic, key=key, value=store.put(key, assigned, record["seq"]), partition=p)
        output = json.dumps({"id": record["id"], "key": key, "seq": record["seq"], "assigned_id": assigned,
                             "instance": cfg.instance, "in_partition": p, "in_offset": msg.offset()}).encode()
        if bug_hits(cfg, record["id"], "drop"):
            log.warning("bug drop: not writing the output of id %d", record["id"])
            return
        self.producer.produce(cfg.output_topic, key=key, value=output, partition=p)
        if bug_hits(cfg, record["id"], "duplicate"):
            duplicates.append((key, output, p))

    def commit_batch(self, messages: list[Message]) -> None:
        offsets: dict[int, int] = {}
        for msg in messages:
            offsets[msg.partition()] = msg.offset() + 1
        self.producer.send_offsets_to_transaction(
            [TopicPartition(self.config.input_topic, p, o) for p, o in offsets.items()],
            self.consumer.consumer_group_metadata())
        self.producer.commit_transaction()
        self.transactions += 1
        if self.config.mirror_offsets:
            self.unmirrored.update(offsets)
            self.mirror_offsets()

    def mirror_offsets(self) -> None:
        """Repeat the transaction's offsets as a plain commit (embedded broker only); retried on revoke."""
        if not self.unmirrored:
            return
        try:
            self.consumer.commit(offsets=[TopicPartition(self.config.input_topic, p, o)
                                          for p, o in self.unmirrored.items()], asynchronous=False)
            self.unmirrored.clear()
        except KafkaException as exc:
            log.warning("mirroring committed offsets failed (%s); retrying at the next commit or revoke", exc)

    def write_duplicates(self, duplicates: list[tuple[str, bytes, int]]) -> None:
        """Bug ``duplicate``: the same outputs again, in a transaction of their own."""
        self.producer.begin_transaction()
        for key, value, p in duplicates:
            self.producer.produce(self.config.output_topic, key=key, value=value, partition=p)
        self.producer.commit_transaction()
        log.warning("bug duplicate: wrote %d outputs a second time", len(duplicates))

    def run(self) -> None:
        cfg = self.config
        self.producer.init_transactions()
        self.consumer.subscribe([cfg.input_topic], on_assign=self.on_assign, on_revoke=self.on_revoke)
        log.info("instance %d of %s started (bug=%s)", cfg.instance, cfg.app_id, cfg.bug)
        last_report, last_processed = time.monotonic(), 0
        while not self.stopping:
            messages = [m for m in self.consumer.consume(BATCH, timeout=0.2) if not self._error(m)]
            if messages:
                duplicates: list[tuple[str, bytes, int]] = []
                self.producer.begin_transaction()
                for msg in messages:
                    self.process(msg, duplicates)
                self.commit_batch(messages)
                self.processed += len(messages)
                if duplicates:
                    self.write_duplicates(duplicates)
            now = time.monotonic()
            if now - last_report >= REPORT_EVERY_S:
                rate = (self.processed - last_processed) / (now - last_report)
                log.info("processed %d records (%.0f records/s), %d transactions, partitions %s",
                         self.processed, rate, self.transactions, sorted(self.stores))
                last_report, last_processed = now, self.processed
        log.info("stopping gracefully: processed %d records in %d transactions, %d assertions",
                 self.processed, self.transactions, self.assertions)
        self.mirror_offsets()
        self.consumer.close()
        self.producer.flush(10)

    @staticmethod
    def _error(msg: Message) -> bool:
        if msg.error() is None:
            return False
        if msg.error().fatal():
            raise KafkaException(msg.error())
        log.warning("consumer: %s", msg.error())
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("bootstrap", "app-id", "input-topic", "output-topic", "changelog-topic", "assertions-topic"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--instance", type=int, required=True)
    parser.add_argument("--bug", choices=BUGS, default="none")
    parser.add_argument("--bug-every", type=int, default=1000)
    parser.add_argument("--mirror-offsets", action="store_true",
                        help="repeat transactional offsets with a plain commit (for the embedded broker)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)s [instance {args.instance}] %(message)s")
    worker = Worker(WorkerConfig(args.bootstrap, args.app_id, args.instance, args.input_topic, args.output_topic,
                                 args.changelog_topic, args.assertions_topic, args.bug, args.bug_every,
                                 args.mirror_offsets))

    def stop(signum: int, _frame) -> None:
        log.info("received %s", signal.Signals(signum).name)
        worker.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        worker.run()
    except KafkaException as exc:
        log.error("fatal: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
