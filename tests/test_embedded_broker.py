"""The embedded broker's control interface: topics and fault injection on a real broker process."""

import time

import pytest
from confluent_kafka import Producer

from kafka_soak import kafka_io
from kafka_soak.backends.embedded import BrokerControlError, control


def test_topics_are_created_with_their_partition_counts(broker):
    assert kafka_io.partition_count(broker.bootstrap_servers, broker.topics["input"]) == 4
    assert kafka_io.partition_count(broker.bootstrap_servers, broker.topics["assertions"]) == 1


def test_broker_down_stalls_produce_until_it_is_up_again(broker):
    control(broker.control, {"op": "broker_down", "broker": 1})
    producer = Producer(kafka_io.client_config(broker.bootstrap_servers, {"enable.idempotence": True}))
    producer.produce(broker.topics["input"], b"x", partition=0)
    assert producer.flush(2) == 1, "a record must not be delivered while the only broker is down"
    control(broker.control, {"op": "broker_up", "broker": 1})
    assert producer.flush(30) == 0
    assert kafka_io.watermarks(broker.bootstrap_servers, broker.topics["input"])[0] == (0, 1)


def test_added_latency_slows_requests(broker):
    control(broker.control, {"op": "set_rtt", "broker": 1, "rtt_ms": 500})
    started = time.monotonic()
    kafka_io.watermarks(broker.bootstrap_servers, broker.topics["input"])
    assert time.monotonic() - started > 0.5


def test_bad_requests_are_refused_with_a_reason(broker):
    with pytest.raises(BrokerControlError, match="broker 7 does not exist; brokers are 1..1"):
        control(broker.control, {"op": "broker_down", "broker": 7})
    with pytest.raises(BrokerControlError, match="unknown control op 'melt'"):
        control(broker.control, {"op": "melt"})
