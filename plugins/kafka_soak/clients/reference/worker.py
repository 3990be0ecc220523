"""The reference app under test: an exactly-once consume-transform-produce worker that assigns ids.

Each key gets a stable id the first time it is seen (``counter * partitions + partition``) from a
per-partition store (with a write-back cache) backed by a changelog topic, restored when the partition
is assigned, once the group's committed offsets of it are stable (a previous owner's transaction decided).
With ``--standbys 1`` an instance keeps a standby replica of every partition it loses, tailing its
changelog, and resumes from it when the partition comes back. A Kafka transaction stays open
across polls and is committed every ``--commit-interval-ms`` (as Kafka Streams' commit.interval.ms), when
partitions are revoked (the ``on_revoke`` commit of the crashing-workers reproduction) and at a graceful
stop; it holds the outputs, the changelog writes, the self-check assertions and the consumed offsets
(``send_offsets_to_transaction``). SIGTERM is a graceful stop: the open transaction is committed and the
consumer leaves the group. A transaction the broker makes abortable is aborted and the instance rewinds to
its committed offsets and rebuilds its state, as Kafka Streams does with a corrupted task; aborts that follow one
another for ``ABORT_STREAK_S`` without a commit are logged once at ERROR, a liveness signal the app's health counts. With
``--crash-probability P`` an instance exits ungracefully (exit code ``CRASH_EXIT_CODE``, its transaction
left open for the broker to time out) after any input record with probability P, as the workers of the
kube-kafka consistency checks do; the runtime's restart policy brings it back. The draws are seeded from
``--seed``, the instance, its step and its restart count (``SOAK_RESTART``): a process of a run replayed with the
same seed crashes after as many records as before, and a restarted instance draws anew rather than crashing
after the same count again.

``--style example`` is what confluent-kafka's own ``examples/eos_transactions.py`` does (``ExampleWorker``): partition
EOF on, and each transaction commits the consumer's ``position()`` rather than the offsets it processed. Run on a
released confluent-kafka (``--client-release``, param ``worker_versions``), the worker refuses to start on any other.

Bug switches prove that the checker catches what it must: ``skip-restore`` (state is not restored on
assignment -> ids reused), ``stale-cache`` (restoration does not invalidate the cache -> stale reads
after standby -> active, KAFKA-14624), ``drop`` (the output of every Nth input id is not written -> lost),
``duplicate`` (the output of every Nth input id is written again in a second transaction -> duplicated),
``revoke-no-offsets`` (the ``on_revoke`` commit leaves the consumed offsets out of the transaction, so the
partitions' next owner processes those records again -> duplicated), ``leak`` (every record processed leaves
``LEAK_BYTES`` behind that nothing frees -> resource_growth).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from kafka_soak.clients.reference.changelog import ChangelogReader
from kafka_soak.clients.reference.store import PartitionStore
from kafka_soak.infra import kafka_io
from kafka_soak.params import BUGS, WORKER_STYLES
from kafka_soak.shared.contracts import RESTART_ENV
from kafka_soak.shared.stalls import Stalls

log = logging.getLogger("kafka_soak.worker")

BATCH = 500
CRASH_EXIT_CODE = 86  # an injected crash (--crash-probability), told apart from a real failure by the health check
REPORT_EVERY_S = 5.0
LEAK_BYTES = 16 * 1024  # bug leak: left behind per record (at 100 records/s, about 5.6 GB an hour)
# Transactional calls block until they succeed by default; a broker outage can leave one waiting forever.
# Each call gets a deadline and is retried while the error is retriable. librdkafka's
# send_offsets_to_transaction can ignore its deadline when the group coordinator was down
# (confluentinc/librdkafka#5456): a call stuck past STUCK_AFTER_S ends the process, so that the group
# hands its partitions to an instance that works, as a liveness probe would.
TXN_TIMEOUT_S = 10.0
TXN_ATTEMPTS = 6
STUCK_AFTER_S = 60.0
# Transactions that abort one after another for this long, at least this many, without a commit in between (a broker
# refusing every one of them: KAFKA-16692 in a rolling upgrade from 3.5) are a liveness failure: logged once per streak
# at ERROR, an incident of the app's health, as a liveness probe would report it; the worker goes on trying.
ABORT_STREAK_S = 15.0
ABORT_STREAK_MIN = 5
# A committed-offsets fetch waits out an open transaction that holds offsets: at worst until the coordinator aborts it
# (transaction.timeout.ms, 30 s, plus the broker's 10 s check interval).
COMMITTED_TIMEOUT_S = 60.0
STUCK_EXIT_CODE = 70
WRONG_RELEASE_EXIT_CODE = 78  # started on another confluent-kafka than --client-release


@dataclass(frozen=True)
class WorkerConfig:
    bootstrap: str
    app_id: str
    instance: int
    input_topic: str
    output_topic: str
    changelog_topic: str
    assertions_topic: str
    step: str = "0"  # the program step that started this instance (evidence in assertions)
    standbys: int = 0
    cache_entries: int = 0
    bug: str = "none"
    bug_every: int = 1000
    commit_interval_ms: int = 100
    crash_probability: float = 0.0
    session_timeout_ms: int = 45_000
    group_protocol: str = "classic"  # consumer: KIP-848, the brokers assign and keep the session
    seed: int = 0
    restart: int = 0  # how often the runtime restarted this instance since its step started it
    style: str = "reference"  # example: confluent-kafka's examples/eos_transactions.py (ExampleWorker)


def stuck(what: str) -> None:
    log.error("transaction %s did not return within %.0f s although its timeout is %.0f s (librdkafka#5456 after a "
              "coordinator outage): exiting with code %d so that another instance takes over", what, STUCK_AFTER_S,
              TXN_TIMEOUT_S, STUCK_EXIT_CODE)
    logging.shutdown()
    os._exit(STUCK_EXIT_CODE)


def crash(record_id: int, probability: float) -> None:
    """Exit now, as an unhandled failure would: no commit, no abort, no leave-group."""
    log.warning("crashing on purpose after input id %d (crash_probability %g): exit code %d, the open transaction "
                "left to time out", record_id, probability, CRASH_EXIT_CODE)
    logging.shutdown()
    os._exit(CRASH_EXIT_CODE)


def chaos(seed: int, instance: int, step: str, restart: int) -> random.Random:
    """The crash draws of one process: the same for the same run seed, instance, step and restart, new for each."""
    return random.Random(f"{seed}/{instance}/{step}/{restart}")


@dataclass
class AbortStreak:
    """The transactions aborted since the last commit: ``at`` when each aborted, and whether the streak was told."""

    at: list[float] = field(default_factory=list)
    told: bool = False

    @property
    def lasted(self) -> float:
        return self.at[-1] - self.at[0] if self.at else 0.0

    def note(self, now: float) -> bool:
        """Add an abort at ``now``; True once, when the streak first is ``ABORT_STREAK_MIN`` aborts over
        ``ABORT_STREAK_S`` or more."""
        self.at.append(now)
        long = len(self.at) >= ABORT_STREAK_MIN and self.lasted >= ABORT_STREAK_S
        tell, self.told = long and not self.told, self.told or long
        return tell


def bug_hits(config: WorkerConfig, record_id: int, bug: str) -> bool:
    """Whether a bug switch acts on this input id (deterministic, so the checker's count is exact)."""
    return config.bug == bug and record_id % config.bug_every == 0


class Worker:
    """The suite's worker: commits the offsets it processed, every ``commit_interval_ms`` or ``COMMIT_EVERY`` records."""

    COMMIT_EVERY = BATCH
    CONSUMER_SETTINGS: dict[str, Any] = {}

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.stopping = False
        self.active: dict[int, PartitionStore] = {}
        self.standby: dict[int, PartitionStore] = {}
        self.processed = self.transactions = self.assertions = self.aborts = 0
        self.pending: dict[int, int] = {}  # the open transaction's next offset per input partition
        self.pending_records = 0
        self.duplicates: list[tuple[str, bytes, int]] = []  # bug duplicate: outputs to write again after the commit
        self.leaked: list[bytes] = []  # bug leak: what every record leaves behind
        self.txn_began: float | None = None
        self.abort_streak = AbortStreak()
        self.chaos = chaos(config.seed, config.instance, config.step, config.restart)
        self.stalls = Stalls()  # the program's stalls of this instance, at the points named in process and commit
        common = kafka_io.client_config(config.bootstrap)
        session = {"group.protocol": "consumer"} if config.group_protocol == "consumer" else \
            {"session.timeout.ms": config.session_timeout_ms}  # KIP-848: the brokers set the session
        self.consumer = Consumer({
            **common, "group.id": config.app_id,
            "client.id": f"{config.app_id}-{config.instance}", "isolation.level": "read_committed", **session,
            "enable.auto.commit": False, "auto.offset.reset": "earliest", **self.CONSUMER_SETTINGS})
        self.producer = Producer({
            **common, "transactional.id": f"{config.app_id}-{config.instance}",
            "client.id": f"{config.app_id}-{config.instance}-producer", "linger.ms": 5,
            "transaction.timeout.ms": 30000})
        self.changelog = ChangelogReader(config.bootstrap, config.app_id, config.changelog_topic)
        self.partitions = kafka_io.partition_count(config.bootstrap, config.input_topic)

    def new_store(self, partition: int) -> PartitionStore:
        return PartitionStore(partition, self.partitions, self.config.cache_entries,
                              invalidate_on_restore=self.config.bug != "stale-cache")

    # -- rebalance -------------------------------------------------------------------------------
    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        if numbers:
            self.take(numbers)

    def take(self, numbers: list[int]) -> list[TopicPartition]:
        """Become active for ``numbers``: from a standby replica when there is one, else by a full restore. Returns the
        group's committed offsets of ``numbers``, fetched before any state is read (``committed``)."""
        committed = self.committed(numbers)
        warm, cold = [], []
        for p in numbers:
            store = self.standby.pop(p, None)
            if self.config.bug == "skip-restore":
                self.changelog.unfollow(p)
                store = self.new_store(p)
            elif store is None:
                store = self.new_store(p)
                self.changelog.follow(store, from_start=True)
                cold.append(p)
            else:
                warm.append(p)
            self.active[p] = store
        if self.config.bug == "skip-restore":
            log.warning("assigned partitions %s; bug skip-restore: starting from empty state", numbers)
            return committed
        started = time.monotonic()
        applied = self.changelog.catch_up(warm + cold)
        for p in warm + cold:
            self.changelog.unfollow(p)
        log.info("assigned partitions %s: %s from standby replicas, %s restored from the changelog; %d changelog "
                 "records applied in %.1f s", numbers, warm or "none", cold or "none", applied,
                 time.monotonic() - started)
        return committed

    def committed(self, numbers: list[int]) -> list[TopicPartition]:
        """The group's committed offsets of ``numbers``. A read_committed consumer's fetch waits while a transaction
        holds offsets of these partitions (KIP-447's require_stable), so a previous owner that sent its offsets and
        lost its network before its commit is decided (committed, or aborted by its timeout) before the restore reads
        the changelog. Restored first, the store missed the writes that owner delivered and committed once healed,
        while its offsets moved past their inputs (stale_state after ``n1-``)."""
        started = time.monotonic()
        offsets = kafka_io.retry_transient(self.consumer.committed)(
            [TopicPartition(self.config.input_topic, p) for p in numbers], timeout=COMMITTED_TIMEOUT_S)
        if time.monotonic() - started > 1.0:
            log.info("partitions %s: waited %.1f s for the group's committed offsets (a transaction holding some was "
                     "still open, or the group coordinator was slow)", numbers, time.monotonic() - started)
        return offsets

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Commit the open transaction before the partitions move on (their next owner starts from the committed
        offsets), then keep standby replicas of them. A commit that fails is aborted: the next owner processes those
        records again, and no replica keeps the aborted writes."""
        numbers = sorted(tp.partition for tp in partitions)
        committed = True
        if self.txn_began is not None:
            try:
                self.commit(with_offsets=self.config.bug != "revoke-no-offsets")
            except KafkaException as exc:
                log.warning("commit on revoke failed (%s): aborting; the partitions' next owner processes the records "
                            "again", exc.args[0])
                self.abort()
                committed = False
        for p in numbers:
            store = self.active.pop(p, None)
            if store is not None and self.config.standbys and committed:
                store.changelog_position = self.changelog.end_offset(p)
                self.standby[p] = store
                self.changelog.follow(store)
        log.info("revoked partitions %s%s", numbers,
                 f"; keeping standby replicas of {numbers}" if self.config.standbys and numbers else "")

    # -- processing ------------------------------------------------------------------------------
    def process(self, msg: Message) -> None:
        cfg = self.config
        record = json.loads(msg.value())
        key, p = record["key"], msg.partition()
        store = self.active[p]
        assigned, stored_seq, writes = store.assign(key)
        if record["seq"] != stored_seq + 1:
            self.assertions += 1
            assertion = {"kind": "stale_state", "key": key, "expected": stored_seq + 1, "found": record["seq"],
                         "partition": p, "instance": cfg.instance, "step": cfg.step, "ts": int(time.time() * 1000)}
            log.error("!!! BROKEN !!! Expected %d but found %d partition: %d key: %s", stored_seq + 1,
                      record["seq"], p, key)
            self.producer.produce(cfg.assertions_topic, key=key, value=json.dumps(assertion))
        writes += store.record(key, assigned, record["seq"])
        self.write_changelog(p, writes)
        output = json.dumps({"id": record["id"], "key": key, "seq": record["seq"], "assigned_id": assigned,
                             "instance": cfg.instance, "in_partition": p, "in_offset": msg.offset()}).encode()
        if bug_hits(cfg, record["id"], "drop"):
            log.warning("bug drop: not writing the output of id %d", record["id"])
            return
        if self.pending_records:  # point "process": the open transaction holds this batch's earlier records
            self.stalls.at("process")
        self.producer.produce(cfg.output_topic, key=key, value=output, partition=p)
        if bug_hits(cfg, record["id"], "duplicate"):
            self.duplicates.append((key, output, p))
        if cfg.bug == "leak":  # filled, not zeroed: memory the process really holds
            self.leaked.append(record["id"].to_bytes(8, "big") * (LEAK_BYTES // 8))
        if cfg.crash_probability and self.chaos.random() < cfg.crash_probability:
            crash(record["id"], cfg.crash_probability)

    def write_changelog(self, partition: int, records: list[tuple[str, bytes]]) -> None:
        for key, value in records:
            self.producer.produce(self.config.changelog_topic, key=key, value=value, partition=partition)

    def commit(self, with_offsets: bool = True) -> None:
        """Commit the open transaction: the stores' cached writes, then the consumed offsets (left out by bug
        revoke-no-offsets, at a revoke), then the outputs written again by bug duplicate in a transaction of their
        own."""
        for p, store in self.active.items():
            self.write_changelog(p, store.flush())
        if with_offsets:
            self.txn_call("send offsets", self.producer.send_offsets_to_transaction, self.offsets(),
                          self.consumer.consumer_group_metadata())
        else:
            log.warning("bug revoke-no-offsets: committing the transaction of %d records without their offsets %s",
                        self.pending_records, self.pending)
        self.stalls.at("commit")  # point "commit": between the transaction's offsets and its commit
        self.txn_call("commit", self.producer.commit_transaction)
        self.transactions += 1
        self.abort_streak = AbortStreak()
        self.processed += self.pending_records
        duplicates = self.duplicates
        self.forget_transaction()
        if duplicates:
            self.write_duplicates(duplicates)

    def offsets(self) -> list[TopicPartition]:
        """The input offsets a commit sends: the next offset of each partition the transaction processed."""
        return [TopicPartition(self.config.input_topic, p, o) for p, o in self.pending.items()]

    def forget_transaction(self) -> None:
        self.pending, self.pending_records, self.duplicates, self.txn_began = {}, 0, [], None

    def abort(self) -> None:
        self.aborts += 1
        self.txn_call("abort", self.producer.abort_transaction)
        self.forget_transaction()

    @staticmethod
    def txn_call(what: str, call, *args) -> None:
        """A transactional producer call with a deadline, retried while its error is retriable."""
        for attempt in range(1, TXN_ATTEMPTS + 1):
            watchdog = threading.Timer(STUCK_AFTER_S, stuck, args=(what,))
            watchdog.daemon = True
            watchdog.start()
            try:
                call(*args, TXN_TIMEOUT_S)
                return
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if not error.retriable() or error.txn_requires_abort() or attempt == TXN_ATTEMPTS:
                    raise
                log.warning("%s: %s; retrying (%d/%d)", what, error, attempt, TXN_ATTEMPTS)
            finally:
                watchdog.cancel()

    def write_duplicates(self, duplicates: list[tuple[str, bytes, int]]) -> None:
        """Bug ``duplicate``: the same outputs again, in a transaction of their own."""
        self.producer.begin_transaction()
        for key, value, p in duplicates:
            self.producer.produce(self.config.output_topic, key=key, value=value, partition=p)
        self.producer.commit_transaction()
        log.warning("bug duplicate: wrote %d outputs a second time", len(duplicates))

    def run_batch(self, messages: list[Message], commit_due: bool) -> None:
        """Process ``messages`` in the open transaction (begun by the first of them) and commit it when due: asked to
        (``commit_due``), ``COMMIT_EVERY`` records, or the commit interval passed. Never within a batch: the consumer's
        position is past every record of the batch it handed over (``ExampleWorker`` commits the position)."""
        try:
            if messages and self.txn_began is None:
                self.producer.begin_transaction()
                self.txn_began = time.monotonic()
            for msg in messages:
                self.process(msg)
                self.pending[msg.partition()] = msg.offset() + 1
                self.pending_records += 1
            if self.txn_began is not None and (commit_due or self.pending_records >= self.COMMIT_EVERY or
                                               self.interval_passed()):
                self.commit()
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.fatal() or not (error.txn_requires_abort() or error.retriable()):
                raise
            self.recover(error)

    def interval_passed(self) -> bool:
        return time.monotonic() - (self.txn_began or 0.0) >= self.config.commit_interval_ms / 1000

    def recover(self, error: KafkaError) -> None:
        """Abort the transaction, rewind to the committed offsets and rebuild the state it touched."""
        log.warning("transaction aborted (%s): rewinding to the committed offsets and restoring state", error)
        self.abort()
        self.note_abort(error)
        numbers = sorted(self.active)
        self.active.clear()
        for tp in self.take(numbers):
            self.consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))

    def note_abort(self, error: KafkaError) -> None:
        """Count an aborted transaction into the streak since the last commit; report the streak once it is long."""
        if self.abort_streak.note(time.monotonic()):
            log.error("no transaction committed for %.0f s: %d aborted in a row, the last by %s",
                      self.abort_streak.lasted, len(self.abort_streak.at), error)

    def run(self) -> None:
        cfg = self.config
        self.producer.init_transactions()
        self.consumer.subscribe([cfg.input_topic], on_assign=self.on_assign, on_revoke=self.on_revoke)
        log.info("instance %d of %s started at step %s, restart %d (style=%s, confluent-kafka %s, librdkafka %s, "
                 "standbys=%d, cache_entries=%d, commit_interval_ms=%d, crash_probability=%g, seed=%d, bug=%s, "
                 "group_protocol=%s)", cfg.instance, cfg.app_id, cfg.step, cfg.restart, cfg.style,
                 confluent_kafka.__version__, confluent_kafka.libversion()[0], cfg.standbys, cfg.cache_entries,
                 cfg.commit_interval_ms, cfg.crash_probability, cfg.seed, cfg.bug, cfg.group_protocol)
        last_report, last_processed = time.monotonic(), 0
        while not self.stopping:
            self.step()
            self.changelog.poll()
            now = time.monotonic()
            if now - last_report >= REPORT_EVERY_S:
                rate = (self.processed - last_processed) / (now - last_report)
                log.info("processed %d records (%.0f records/s), %d transactions, active %s, standby %s",
                         self.processed, rate, self.transactions, sorted(self.active), sorted(self.standby))
                last_report, last_processed = now, self.processed
        self.run_batch([], commit_due=True)
        log.info("stopping gracefully: processed %d records in %d transactions (%d aborted), %d assertions",
                 self.processed, self.transactions, self.aborts, self.assertions)
        self.consumer.close()
        self.changelog.close()
        self.producer.flush(10)

    def step(self) -> None:
        """One turn of the loop: a batch of records processed in the open transaction."""
        self.run_batch([m for m in self.consumer.consume(BATCH, timeout=0.1) if not self._error(m)], commit_due=False)

    @staticmethod
    def _error(msg: Message) -> bool:
        if msg.error() is None:
            return False
        if msg.error().fatal():
            raise KafkaException(msg.error())
        log.warning("consumer: %s", msg.error())
        return True


class ExampleWorker(Worker):
    """What confluent-kafka's ``examples/eos_transactions.py`` does, on the suite's data contract: partition EOF on;
    the transaction commits the consumer's ``position()`` of its whole assignment once ``COMMIT_EVERY`` records are
    in it and when every assigned partition reached its end (where the example stops, this worker commits and reads
    on); no clock. It reads in batches (``Consumer.consume``, as the suite's worker and most ports of the example do;
    the example's ``poll`` is its one-record form), so it commits at a batch's end, where the position is what it
    processed."""

    COMMIT_EVERY = 100  # the example's msg_cnt % 100
    CONSUMER_SETTINGS = {"enable.partition.eof": True}

    def __init__(self, config: WorkerConfig) -> None:
        super().__init__(config)
        self.at_end: set[int] = set()  # partitions whose end the consumer reached since their last record

    def offsets(self) -> list[TopicPartition]:
        return self.consumer.position(self.consumer.assignment())

    def interval_passed(self) -> bool:
        return False

    def step(self) -> None:
        self.producer.poll(0)  # delivery reports, as the example serves them
        messages = []
        for msg in self.consumer.consume(BATCH, timeout=0.1):
            if msg.error() is not None and msg.error().code() == KafkaError._PARTITION_EOF:
                self.at_end.add(msg.partition())
            elif not self._error(msg):
                self.at_end.discard(msg.partition())
                messages.append(msg)
        assigned = {tp.partition for tp in self.consumer.assignment()}
        self.at_end &= assigned
        self.run_batch(messages, commit_due=bool(assigned) and self.at_end == assigned)


STYLES = {"reference": Worker, "example": ExampleWorker}


def check_release(expected: str) -> None:
    """Exit when the confluent-kafka imported is not the release the run asked for (``worker_versions``): another
    one on the path would judge the wrong client."""
    if confluent_kafka.__version__ != expected:
        log.error("confluent-kafka %s was imported (from %s), not %s: the instance's interpreter must be the "
                  "virtualenv of %s", confluent_kafka.__version__, confluent_kafka.__file__, expected, expected)
        sys.exit(WRONG_RELEASE_EXIT_CODE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("bootstrap", "app-id", "input-topic", "output-topic", "changelog-topic", "assertions-topic"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--instance", type=int, required=True)
    parser.add_argument("--step", default="0", help="the program step that started this instance")
    parser.add_argument("--standbys", type=int, choices=(0, 1), default=0)
    parser.add_argument("--cache-entries", type=int, default=0)
    parser.add_argument("--bug", choices=BUGS, default="none")
    parser.add_argument("--bug-every", type=int, default=1000)
    parser.add_argument("--commit-interval-ms", type=int, default=100)
    parser.add_argument("--crash-probability", type=float, default=0.0)
    parser.add_argument("--session-timeout-ms", type=int, default=45_000)
    parser.add_argument("--seed", type=int, default=0, help="seeds the crash draws (with instance, step, restart)")
    parser.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    parser.add_argument("--style", choices=WORKER_STYLES, default="reference")
    parser.add_argument("--client-release", default="", help="the confluent-kafka release this must run on")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)s [instance {args.instance}] %(message)s")
    if args.client_release:
        check_release(args.client_release)
    worker = STYLES[args.style](WorkerConfig(args.bootstrap, args.app_id, args.instance, args.input_topic, args.output_topic,
                                 args.changelog_topic, args.assertions_topic, args.step, args.standbys,
                                 args.cache_entries, args.bug, args.bug_every, args.commit_interval_ms,
                                 args.crash_probability, args.session_timeout_ms, args.group_protocol, args.seed,
                                 int(os.environ.get(RESTART_ENV, "0")), args.style))

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
