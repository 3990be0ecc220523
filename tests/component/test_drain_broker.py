"""The drain's wait on a real broker: what counts as work the app has not finished."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_soak.drain import DrainTimeout, settle_outputs, wait_for_zero_lag
from kafka_soak.infra import kafka_io


def test_the_drain_waits_for_the_topics_an_app_reads_back(broker):
    """A topology that reads what it writes (a repartition topic, a KTable of its own output, a worker's results) has
    work in flight after its input is done: the drain counts the group's lag on every topic it consumes, and a timeout
    names it."""
    bootstrap, input_topic, own = broker.bootstrap_servers, broker.topics["input"], broker.topics["output"]
    producer = Producer(kafka_io.client_config(bootstrap))
    for topic in (input_topic, own):
        for _ in range(3):
            producer.produce(topic, value=b"x", partition=0)
    producer.flush(10)
    group = "reads-back"
    consumer = Consumer(kafka_io.client_config(bootstrap, {"group.id": group, "enable.auto.commit": False}))
    try:
        def commit(offsets: dict[str, int]) -> None:
            consumer.commit(offsets=[TopicPartition(t, 0, o) for t, o in offsets.items()], asynchronous=False)

        commit({input_topic: 3, own: 1})  # the input is done; two of its own records are still to be read back
        assert kafka_io.internal_lag(bootstrap, group, input_topic) == {f"{own}[0]": 2}
        with pytest.raises(DrainTimeout, match=rf"and on the topics it writes and reads back: {own}\[0\]=2") as err:
            wait_for_zero_lag(bootstrap, group, input_topic, timeout_s=1, poll_s=0.2)
        assert err.value.stalled == []  # the input is done: nothing of it stalled
        commit({own: 3})
        assert kafka_io.internal_lag(bootstrap, group, input_topic) == {f"{own}[0]": 0}
        assert wait_for_zero_lag(bootstrap, group, input_topic, timeout_s=30, poll_s=0.2) < 30
    finally:
        consumer.close()


def test_a_partition_whose_committed_offset_never_moves_while_it_lags_is_stalled(broker):
    """The drain's liveness rule: the group committed 2 of the 5 records of partition 0 and nothing more during the
    wait, while partition 1 is done; partition 0 is stalled, named with its committed offset and end."""
    bootstrap, topic = broker.bootstrap_servers, broker.topics["input"]
    producer = Producer(kafka_io.client_config(bootstrap))
    for partition, count in ((0, 5), (1, 2)):
        for _ in range(count):
            producer.produce(topic, value=b"x", partition=partition)
    producer.flush(10)
    consumer = Consumer(kafka_io.client_config(bootstrap, {"group.id": "stuck", "enable.auto.commit": False}))
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 2)], asynchronous=False)
        with pytest.raises(DrainTimeout, match=r"stalled: partition\(s\) 0 of ") as err:
            wait_for_zero_lag(bootstrap, "stuck", topic, timeout_s=1, poll_s=0.2)
        assert err.value.lag == {0: 3, 1: 0, 2: 0, 3: 0}
        [stalled] = err.value.stalled
        assert {k: stalled[k] for k in ("group", "partition", "committed", "end", "lag")} == \
            {"group": "stuck", "partition": 0, "committed": 2, "end": 5, "lag": 3}
        left = err.value.backlog
        assert (left["group"], left["lag"], left["committed"], left["clears_in_s"]) == ("stuck", 3, 0, None)
        assert "backlog: the group committed 0 input records" in str(err.value)
    finally:
        consumer.close()


def test_the_drain_waits_until_no_transaction_is_open_over_the_outputs(broker):
    """An instance that died after writing outputs but before sending its offsets leaves no input lag, but its open
    transaction hides every later commit on those partitions from the checker's read_committed reads: the drain
    waits for it to be decided, and names a partition that stays open (a hanging transaction)."""
    bootstrap, output = broker.bootstrap_servers, broker.topics["output"]
    dead = Producer(kafka_io.client_config(bootstrap, {"transactional.id": f"{output}-dead"}))
    dead.init_transactions(30)
    dead.begin_transaction()
    dead.produce(output, value=b"in an open transaction", partition=2)
    dead.flush(10)
    alive = Producer(kafka_io.client_config(bootstrap, {"transactional.id": f"{output}-alive"}))
    alive.init_transactions(30)
    alive.begin_transaction()
    alive.produce(output, value=b"committed after it", partition=2)
    alive.commit_transaction(30)

    assert kafka_io.open_ends(bootstrap, output) == {2: (0, 3)}  # the commit marker is the third offset
    assert settle_outputs(bootstrap, [output], timeout_s=1, poll_s=0.2) == {output: {2: [0, 3]}}
    dead.abort_transaction(30)
    assert settle_outputs(bootstrap, [output], timeout_s=30, poll_s=0.2) == {}


def test_each_group_is_read_from_its_coordinator_in_one_request_its_state_and_its_members(broker):
    """``wr`` polls the states of a run's groups and the drain's report names each member's partitions, both through
    one description request: a member that got its partitions makes its group STABLE and owns them; a group nobody
    joined is DEAD."""
    bootstrap, topic = broker.bootstrap_servers, broker.topics["input"]
    assigned: list[TopicPartition] = []
    consumer = Consumer(kafka_io.client_config(bootstrap, {"group.id": "joined", "client.id": "joiner"}))
    consumer.subscribe([topic], on_assign=lambda _consumer, partitions: assigned.extend(partitions))
    try:
        deadline = time.monotonic() + 120  # a guard: the join is waited for, not timed
        while not assigned and time.monotonic() < deadline:
            consumer.poll(0.5)
        assert assigned, "no assignment within 120 s"
        assert kafka_io.group_states(bootstrap, ["joined", "nobody"]) == {"joined": "STABLE", "nobody": "DEAD"}
        [member] = kafka_io.group_members(bootstrap, "joined", topic)
        assert (member["client_id"], member["partitions"]) == ("joiner", sorted(tp.partition for tp in assigned))
    finally:
        consumer.close()
