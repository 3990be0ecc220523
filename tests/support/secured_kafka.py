"""A real secured cluster for the ``external`` backend's tests: an Apache Kafka node whose client listener is
SASL_PLAINTEXT with SCRAM-SHA-512, the credentials bootstrapped into its storage (KRaft: ``format --add-scram``).

The node also keeps a PLAINTEXT listener on another loopback port for its own inter-broker traffic, so its
``server.properties`` holds no password. It is the ``local`` backend with those two changes."""

from __future__ import annotations

from pathlib import Path

from kafka_soak.backends.local_kafka import Layout, LocalKafkaBackend, Node, free_ports

USER = "soak-tester"
MECHANISM = "SCRAM-SHA-512"


class ScramKafka(LocalKafkaBackend):
    def __init__(self, run_dir: Path, password: str) -> None:
        super().__init__(run_dir)
        self.password = password
        self.sasl_port = free_ports(1)[0]

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def client_settings(self) -> dict[str, str]:
        """What the Airflow connection of this cluster holds besides ``bootstrap.servers``."""
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": MECHANISM, "sasl.username": USER,
                "sasl.password": self.password}

    def properties(self, layout: Layout, node: Node, data_dir: Path) -> dict[str, str]:
        props = super().properties(layout, node, data_dir)
        props.update({
            "listeners": f"{props['listeners']},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}",
            "advertised.listeners": f"{props['advertised.listeners']},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}",
            "listener.security.protocol.map": f"{props['listener.security.protocol.map']},SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": MECHANISM,
            # the server side of SCRAM needs a login module, not a password: users are in the metadata log
            f"listener.name.sasl_plaintext.{MECHANISM.lower()}.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        })
        return props

    def format_options(self) -> list[str]:
        return ["--add-scram", f"{MECHANISM}=[name={USER},password={self.password}]"]
