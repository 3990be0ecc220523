"""The reference app's state replicated through a real Apache Kafka broker: restoration and standby replicas of the
changelog (the store's logic is in unit/clients/test_app_state.py)."""

import json
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_soak.clients.reference.changelog import ChangelogReader
from kafka_soak.clients.reference.store import PartitionStore
from kafka_soak.clients.reference.worker import Worker, WorkerConfig
from kafka_soak.infra import kafka_io


def test_standby_follows_the_changelog_and_catches_up_on_assignment(broker):
    """Restore from the beginning, tail as a standby, catch up to the end: against a real broker."""
    topic = broker.topics["changelog"]
    producer = Producer(kafka_io.client_config(broker.bootstrap_servers))

    def write(partition: int, key: str, seq: int) -> None:
        producer.produce(topic, key=key, value=json.dumps({"assigned_id": 1, "seq": seq}), partition=partition)
        producer.flush(10)

    write(2, "a", 1)
    write(2, "b", 1)
    reader = ChangelogReader(broker.bootstrap_servers, "test-app", topic)
    try:
        restored = PartitionStore(partition=2, partition_count=4)
        reader.follow(restored, from_start=True)
        assert reader.catch_up([2]) == 2
        assert restored.entries == {"a": {"assigned_id": 1, "seq": 1}, "b": {"assigned_id": 1, "seq": 1}}

        write(2, "a", 2)  # another instance keeps writing while this one is a standby
        write(2, "a", 3)
        assert reader.catch_up([2]) == 2
        assert restored.get("a") == {"assigned_id": 1, "seq": 3}
        assert restored.changelog_position == reader.end_offset(2)
        reader.unfollow(2)
        write(2, "a", 4)
        assert reader.poll(timeout=1.0) == 0, "an unfollowed partition is not applied"
    finally:
        reader.close()


def test_a_restore_waits_for_a_transaction_that_is_not_decided_yet(broker):
    """The end a restore reads to is the high watermark, not the last stable offset: a store restored while the
    transaction with its latest writes is still being decided (commit returned, markers not yet written; here: not
    yet committed) gets those writes once it is, instead of stopping short of them."""
    topic = broker.topics["changelog"]
    producer = Producer(kafka_io.client_config(broker.bootstrap_servers, {"transactional.id": f"{topic}-txn"}))
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic, key="a", value=json.dumps({"assigned_id": 1, "seq": 1}), partition=1)
    producer.flush(10)
    reader = ChangelogReader(broker.bootstrap_servers, "test-app", topic)
    try:
        assert reader.end_offset(1) == 1, "the undecided record is below the end"
        restored = PartitionStore(partition=1, partition_count=4)
        reader.follow(restored, from_start=True)
        assert reader.poll(timeout=1.0) == 0, "read_committed: nothing to apply while the transaction is open"
        producer.commit_transaction(10)
        assert reader.catch_up([1]) == 1
        assert restored.get("a") == {"assigned_id": 1, "seq": 1}
    finally:
        reader.close()


def test_a_new_owner_restores_only_once_the_previous_owners_offsets_are_decided(broker):
    """A previous owner sent its offsets in a transaction, then lost its network before it wrote the rest and
    committed (``n1-``). The new owner's assignment waits for that transaction to be decided before it restores, so
    the writes the old owner delivers and commits once healed are in the store the new owner starts from: restored
    at once, it stopped short of them while the committed offsets moved past their inputs (stale_state)."""
    topics, group = broker.topics, "app-handover"
    config = WorkerConfig(broker.bootstrap_servers, group, 2, topics["input"], topics["output"], topics["changelog"],
                          topics["assertions"])
    old_member = Consumer(kafka_io.client_config(broker.bootstrap_servers, {"group.id": group}))
    old_producer = Producer(kafka_io.client_config(broker.bootstrap_servers, {"transactional.id": f"{group}-1"}))
    new_owner = Worker(config)
    try:
        old_member.subscribe([topics["input"]])
        deadline = time.monotonic() + 60
        while not old_member.assignment():  # the generation its offsets are sent with
            assert time.monotonic() < deadline, "the old member never got its partitions"
            old_member.poll(0.5)
        old_producer.init_transactions(30)
        old_producer.begin_transaction()
        old_producer.send_offsets_to_transaction([TopicPartition(topics["input"], 0, 1)],
                                                 old_member.consumer_group_metadata(), 30)

        taken: list[list[TopicPartition]] = []
        handover = threading.Thread(target=lambda: taken.append(new_owner.take([0])), daemon=True)
        handover.start()
        handover.join(5)  # long enough for a restore of an empty changelog; not needed for the outcome below
        assert handover.is_alive(), "the new owner restored while the old owner's offsets were not decided"
        old_producer.produce(topics["changelog"], key="k", partition=0,
                             value=json.dumps({"assigned_id": 0, "seq": 1}))
        old_producer.commit_transaction(30)
        handover.join(90)
        assert not handover.is_alive(), "the new owner never took the partition"
        assert [tp.offset for tp in taken[0]] == [1]
        assert new_owner.active[0].get("k") == {"assigned_id": 0, "seq": 1}
    finally:
        old_member.close()
        new_owner.consumer.close()
        new_owner.changelog.close()
