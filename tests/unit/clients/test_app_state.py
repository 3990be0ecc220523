"""The reference app's state: write-back cache, changelog, restoration and standby replicas.

The store tests are plain logic; the replication tests run against a real Apache Kafka broker.
"""

import json

from confluent_kafka import Producer

from kafka_soak.clients import kafka_io
from kafka_soak.clients.reference.changelog import ChangelogReader
from kafka_soak.clients.reference.store import COUNTER, PartitionStore


def test_write_back_cache_writes_one_changelog_record_per_key_and_commit():
    store = PartitionStore(partition=1, partition_count=4, cache_entries=10)
    assert store.record("k", 5, 1) == [] and store.record("k", 5, 2) == []
    assert store.entries == {}, "nothing reaches the store before the flush"
    assert store.flush() == [("k", b'{"assigned_id":5,"seq":2}')]
    assert store.entries["k"] == {"assigned_id": 5, "seq": 2} and store.flush() == []


def test_without_cache_every_write_goes_to_the_changelog_at_once():
    store = PartitionStore(partition=0, partition_count=2)
    assert store.record("k", 0, 1) == [("k", b'{"assigned_id":0,"seq":1}')]
    assert store.entries["k"]["seq"] == 1


def test_evicting_a_dirty_entry_writes_it_through():
    store = PartitionStore(partition=0, partition_count=1, cache_entries=2)
    store.record("a", 0, 1)
    store.record("b", 1, 1)
    assert store.record("c", 2, 1) == [("a", b'{"assigned_id":0,"seq":1}')]
    assert store.entries == {"a": {"assigned_id": 0, "seq": 1}}
    assert [k for k, _ in store.flush()] == ["b", "c"]


def test_ids_come_from_a_per_partition_counter_kept_in_the_store():
    store = PartitionStore(partition=1, partition_count=2, cache_entries=100)
    first = store.assign("x")
    store.record("x", first[0], 1)
    second = store.assign("y")
    assert (first[:2], second[:2]) == ((1, 0), (3, 0))  # counter * 2 + 1
    assert store.assign("x")[:2] == (1, 1), "a known key keeps its id"
    assert dict(store.flush())[COUNTER] == b'{"counter":2}'


def standby_scenario(invalidate: bool) -> int:
    """Instance A cached key k at seq 3, lost the partition, replicated seq 7 as standby, got it back:
    returns the seq A reads for k."""
    store = PartitionStore(partition=0, partition_count=1, cache_entries=100, invalidate_on_restore=invalidate)
    store.record("k", 0, 3)
    store.flush()
    store.apply("k", b'{"assigned_id": 0, "seq": 7}', offset=10)  # the new owner's write, seen as standby
    return store.assign("k")[1]


def test_restoration_invalidates_the_cache():
    assert standby_scenario(invalidate=True) == 7


def test_bug_stale_cache_serves_the_value_from_before_the_standby_stint():
    assert standby_scenario(invalidate=False) == 3


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


def test_a_look_up_sent_to_a_broker_that_was_killed_meanwhile_is_retried():
    """A broker killed while a request waits on it leaves the metadata, and librdkafka fails the request with
    _DESTROY_BROKER; the restore's end-offset look-up retries it (the next attempt goes to the new leader) instead of
    ending the instance, as a run on three brokers with `b2-` once did. An error the client will never get past is
    not retried."""
    from confluent_kafka import KafkaError, KafkaException

    calls = []

    @kafka_io.retry_transient
    def end_offset() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise KafkaException(KafkaError(KafkaError._DESTROY_BROKER))
        return 42

    assert end_offset() == 42 and len(calls) == 2
    assert not kafka_io.is_transient(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
