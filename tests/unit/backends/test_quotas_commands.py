"""Client quotas without a broker: the command lines of Kafka's own tool, what its describe prints read back, and a
verification that names what did not take effect (on a real broker: component/test_quotas.py)."""

from __future__ import annotations

import pytest

from kafka_soak.backends import quotas
from kafka_soak.backends.quotas import Quota, QuotaError

STREAMS = Quota("my-app-StreamThread-1-producer", producer_byte_rate=35000)


def test_command_lines():
    assert quotas.alter_command(STREAMS, "localhost:19092") == [
        "--bootstrap-server", "localhost:19092", "--alter", "--add-config",
        "producer_byte_rate=35000", "--entity-type", "clients", "--entity-name", "my-app-StreamThread-1-producer"]
    both = Quota("c", consumer_byte_rate=1000, request_percentage=12.5)
    assert quotas.alter_command(both, "b:9092", "/dev/stdin")[2:6] == [
        "--command-config", "/dev/stdin", "--alter", "--add-config"]
    assert "consumer_byte_rate=1000,request_percentage=12.5" in quotas.alter_command(both, "b:9092")
    assert quotas.delete_command("c", ["consumer_byte_rate", "request_percentage"], "b:9092")[2:5] == [
        "--alter", "--delete-config", "consumer_byte_rate,request_percentage"]
    assert quotas.describe_command("c", "b:9092")[-5:] == ["--describe", "--entity-type", "clients",
                                                           "--entity-name", "c"]


def test_parse_describe_reads_client_quotas_and_skips_the_rest():
    output = ("Quota configs for client-id 'my-app-StreamThread-1-producer' are producer_byte_rate=35000.0\n"
              "Quota configs for user-principal 'alice' are consumer_byte_rate=20000.0\n"
              "Quota configs for user-principal 'bob', client-id 'c' are consumer_byte_rate=1000.0, "
              "request_percentage=12.5\n"
              "some warning line\n")
    assert quotas.parse_describe(output) == {"my-app-StreamThread-1-producer": {"producer_byte_rate": 35000.0},
                                             "c": {"consumer_byte_rate": 1000.0, "request_percentage": 12.5}}


def test_verify_names_what_did_not_take_effect():
    quotas.verify(STREAMS, {STREAMS.client_id: {"producer_byte_rate": 35000.0}})
    with pytest.raises(QuotaError, match="describes no quota for that client id"):
        quotas.verify(STREAMS, {})
    with pytest.raises(QuotaError, match=r"did not take effect: the broker describes producer_byte_rate=1000.0"):
        quotas.verify(STREAMS, {STREAMS.client_id: {"producer_byte_rate": 1000.0}})
    with pytest.raises(QuotaError, match=r"producer_byte_rate=None"):
        quotas.verify(STREAMS, {STREAMS.client_id: {"consumer_byte_rate": 35000.0}})
