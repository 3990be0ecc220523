"""The drain's wait on a real broker: what counts as work the app has not finished."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_soak import kafka_io
from kafka_soak.drain import DrainTimeout, wait_for_zero_lag


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
        with pytest.raises(DrainTimeout, match=rf"and on the topics it writes and reads back: {own}\[0\]=2"):
            wait_for_zero_lag(bootstrap, group, input_topic, timeout_s=1, poll_s=0.2)
        commit({own: 3})
        assert kafka_io.internal_lag(bootstrap, group, input_topic) == {f"{own}[0]": 0}
        assert wait_for_zero_lag(bootstrap, group, input_topic, timeout_s=30, poll_s=0.2) < 30
    finally:
        consumer.close()
