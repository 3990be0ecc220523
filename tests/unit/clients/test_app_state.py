"""The reference app's state: write-back cache, changelog, restoration and standby replicas, as plain logic (through
a real Apache Kafka broker in component/test_app_state_broker.py)."""

from kafka_soak.clients.reference.store import COUNTER, PartitionStore
from kafka_soak.infra import kafka_io


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
    # a request that timed out in the client's queue while its process was paused (a program's pN): sent again
    assert kafka_io.is_transient(KafkaException(KafkaError(KafkaError._TIMED_OUT_QUEUE)))
    assert not kafka_io.is_transient(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
