"""The drain's wait on a real broker: what counts as work the app has not finished."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_soak.clients import kafka_io
from kafka_soak.drain import (
    DrainTimeout,
    backlog,
    stall_threshold_s,
    stalled_partitions,
    wait_for_zero_lag,
    worked_off,
)


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


def test_a_partition_stalls_when_it_has_not_moved_for_the_stall_time_and_still_lags():
    """At the drain's timeout: 0 lags and has not moved for 130 s (stalled at 120); 1 lags but moved 30 s ago (a
    backlog); 2 has not moved for long but is done."""
    positions = {0: (10, 50), 1: (40, 90), 2: (70, 70)}
    still = {0: (10, 1000.0), 1: (40, 1100.0), 2: (70, 900.0)}
    assert stalled_partitions(positions, still, now=1130.0, threshold_s=120.0) == [0]
    assert stalled_partitions(positions, still, now=1130.0, threshold_s=20.0) == [0, 1]


def test_a_backlog_is_one_the_group_works_off_within_another_drain():
    """At the pace the group committed during the drain, the rest must clear within another drain_timeout_s: an app a
    quota slows a little clears 1 800 left in about a minute; one fenced in a loop that commits a scrap now and then
    (500 in a 600 s drain, 18 200 left) would need six hours, and one that committed nothing never clears."""
    slowed = backlog("slowed", {0: 1800}, {0: 17_400}, 600.0)
    assert (slowed["records_per_s"], slowed["clears_in_s"]) == (29.0, 62.1) and worked_off(slowed, 600.0)
    fenced = backlog("fenced", {0: 18_200}, {0: 500}, 600.0)
    assert fenced["clears_in_s"] == 21_840.0 and not worked_off(fenced, 600.0)
    assert not worked_off(backlog("still", {0: 3}, {0: 0}, 600.0), 600.0)


def test_a_backlog_clears_when_its_slowest_partition_does():
    """Three partitions fly and one crawls: the group's pace would clear the 4 000 left in 104 s, but partition 3
    has 3 700 of them at 0.5 records/s (two hours): no worked-off backlog. A done partition that committed nothing
    does not hold the group back."""
    crawling = backlog("crawling", {0: 100, 1: 100, 2: 100, 3: 3700}, {0: 7000, 1: 7000, 2: 7000, 3: 300}, 600.0)
    assert crawling["lag"] == 4000 and crawling["records_per_s"] == 35.5
    assert crawling["partitions"][3] == {"lag": 3700, "committed": 300, "records_per_s": 0.5, "clears_in_s": 7400.0}
    assert crawling["clears_in_s"] == 7400.0 and not worked_off(crawling, 600.0)
    done = backlog("done", {0: 0, 1: 90}, {0: 0, 1: 900}, 600.0)
    assert done["clears_in_s"] == 60.0 and worked_off(done, 600.0)


def test_a_slow_healthy_app_is_not_stalled_before_a_few_of_its_commit_intervals():
    """The stall time is stall_timeout_s, or the whole drain if shorter, but at least three commit intervals: an app
    that commits once a minute has not stalled in a 30 s drain, nor in 120 s."""
    assert stall_threshold_s(120.0, 600.0, 0.1) == 120.0
    assert stall_threshold_s(120.0, 30.0, 0.1) == 30.0
    assert stall_threshold_s(120.0, 30.0, 60.0) == 180.0
    positions, still = {0: (10, 50)}, {0: (10, 1000.0)}
    assert stalled_partitions(positions, still, now=1130.0, threshold_s=stall_threshold_s(120.0, 130.0, 60.0)) == []
