"""Client quotas: the kafka-configs command lines, reading back what the broker describes, and refusing a quota
that did not take effect.

No Apache Kafka broker can run on the machines these tests run on (no image registry, no Maven), so the tool
itself is not run here: ``apply``/``remove`` are driven by a stand-in runner that answers like kafka-configs
(the describe lines are the tool's format, ``Quota configs for client-id 'x' are producer_byte_rate=35000.0``)."""

from __future__ import annotations

import pytest

from kafka_soak import quotas
from kafka_soak.quotas import Quota, QuotaError

STREAMS = Quota("my-app-StreamThread-1-producer", producer_byte_rate=35000)


def test_command_lines():
    assert quotas.alter_command(STREAMS, "localhost:19092") == [
        "/opt/kafka/bin/kafka-configs.sh", "--bootstrap-server", "localhost:19092", "--alter", "--add-config",
        "producer_byte_rate=35000", "--entity-type", "clients", "--entity-name", "my-app-StreamThread-1-producer"]
    both = Quota("c", consumer_byte_rate=1000, request_percentage=12.5)
    assert quotas.alter_command(both, "b:9092", "/tmp/client.properties")[3:7] == [
        "--command-config", "/tmp/client.properties", "--alter", "--add-config"]
    assert "consumer_byte_rate=1000,request_percentage=12.5" in quotas.alter_command(both, "b:9092")
    assert quotas.delete_command(both, "b:9092")[3:6] == ["--alter", "--delete-config",
                                                          "consumer_byte_rate,request_percentage"]
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


class KafkaConfigs:
    """Answers kafka-configs command lines from a dict of quotas, like the broker would (optionally dropping
    one setting, as a broker that rejected it silently)."""

    def __init__(self, ignore: str | None = None) -> None:
        self.quotas: dict[str, dict[str, float]] = {}
        self.ignore, self.calls = ignore, []

    def __call__(self, command: list[str]) -> str:
        self.calls.append(command)
        client = command[command.index("--entity-name") + 1]
        if "--add-config" in command:
            for item in command[command.index("--add-config") + 1].split(","):
                name, value = item.split("=")
                if name != self.ignore:
                    self.quotas.setdefault(client, {})[name] = float(value)
            return f"Completed updating config for client {client}.\n"
        if "--delete-config" in command:
            for name in command[command.index("--delete-config") + 1].split(","):
                self.quotas.get(client, {}).pop(name, None)
            return f"Completed updating config for client {client}.\n"
        configs = ", ".join(f"{k}={v}" for k, v in self.quotas.get(client, {}).items())
        return f"Quota configs for client-id '{client}' are {configs}\n" if configs else ""


def test_apply_verifies_each_quota_and_remove_deletes_them():
    tool = KafkaConfigs()
    applied = quotas.apply([STREAMS, Quota("c", consumer_byte_rate=500)], tool, "localhost:19092")
    assert applied == [{"client_id": STREAMS.client_id, "producer_byte_rate": 35000.0},
                       {"client_id": "c", "consumer_byte_rate": 500.0}]
    assert [c[3] for c in tool.calls] == ["--alter", "--describe", "--alter", "--describe"]
    quotas.remove([STREAMS, Quota("c", consumer_byte_rate=500)], tool, "localhost:19092")
    assert tool.quotas == {STREAMS.client_id: {}, "c": {}}


def test_apply_refuses_a_quota_the_broker_did_not_keep():
    with pytest.raises(QuotaError, match="request_percentage=None"):
        quotas.apply([Quota("c", producer_byte_rate=1, request_percentage=50)], KafkaConfigs(ignore="request_percentage"),
                     "b:9092")


def test_connection_settings_become_java_client_properties():
    props = quotas.properties({"bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL",
                               "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "soak", "sasl.password": "pw"})
    assert props.splitlines() == [
        "security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="soak" '
        'password="pw";']
    with pytest.raises(QuotaError, match=r"\['ssl.ca.location'\]"):
        quotas.properties({"security.protocol": "SSL", "ssl.ca.location": "/etc/ca.pem"})
