"""A connection's client settings, written for librdkafka (confluent-kafka, the suite's own clients), as the Java
client's properties: Kafka's command-line tools and Spark's Kafka source are Java clients of the same cluster.

Translated: ``security.protocol``; SASL PLAIN and SCRAM (``sasl.mechanism(s)``, ``sasl.username``/``sasl.password``
into ``sasl.jaas.config``); SSL with PEM (the CA, the client's certificate and key, inline or from files, the key's
password, host name verification). Anything else is refused by name rather than silently dropped.

It also owns the environment variable that carries the settings between a run's processes. It imports nothing of the
project: the checker ships this file to Spark (``--py-files``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# A cluster's security settings (SASL/SSL from an Airflow connection) reach the processes of a run, the checker's
# Spark driver included, in this environment variable, as JSON: never on a command line, in XCom or in a file of the
# run.
SETTINGS_ENV = "SOAK_KAFKA_CONFIG"
# Kafka's clients load the ConfigProviders their settings name (CVE-2024-31141: ``${env:...}`` reads the environment).
# None of the suite's JVMs uses one, so each runs with them off: the brokers, Kafka's tools, the Kafka Streams app, a
# team's app (through JAVA_TOOL_OPTIONS) and the checker's Spark driver. kafka-clients 3.8 and later honour it; the
# allow-list of ``clients.allowed_settings`` keeps ``config.providers`` away from older ones.
NO_CONFIG_PROVIDERS = "-Dorg.apache.kafka.automatic.config.providers=none"
# What no setting's value a run passes on may hold: a config provider's variable (``${provider:path:key}``), and what
# would split the ``name=value;...`` form or a properties file's line.
PROVIDER_VARIABLE = "${"
SEPARATORS = (";", "\n", "\r", "=")
IGNORED = frozenset({"bootstrap.servers", "client.id", "group.id"})
TRANSLATED = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password",
    "ssl.ca.location", "ssl.ca.pem", "ssl.certificate.location", "ssl.certificate.pem", "ssl.key.location",
    "ssl.key.pem", "ssl.key.password", "ssl.endpoint.identification.algorithm"})
LOGIN_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                 "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                 "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


def is_option(value: str) -> bool:
    """Whether ``value`` can be one option of ``JAVA_TOOL_OPTIONS``, which the JVM splits at blanks and whose quotes
    are its own."""
    return not any(c.isspace() or c in "\"'" for c in value)


def given_settings() -> dict[str, Any]:
    """The settings this process was given (librdkafka names; none for a plain cluster)."""
    return json.loads(os.environ.get(SETTINGS_ENV) or "{}")


class UntranslatableSettings(ValueError):
    """Settings a Java client has no equivalent for here; ``names`` lists them."""

    def __init__(self, names: list[str], reason: str = "no Java client equivalent") -> None:
        super().__init__(f"{names}: {reason}")
        self.names, self.reason = names, reason


def java_settings(settings: Mapping[str, Any]) -> dict[str, str]:
    """``settings`` (librdkafka names) as Java client properties."""
    untranslatable = sorted(set(settings) - IGNORED - TRANSLATED)
    if untranslatable:
        raise UntranslatableSettings(untranslatable)
    java = {"security.protocol": str(settings["security.protocol"]).upper()} if "security.protocol" in settings else {}
    if "sasl.username" in settings:
        mechanism = str(settings.get("sasl.mechanism") or settings.get("sasl.mechanisms") or "PLAIN").upper()
        if mechanism not in LOGIN_MODULES:
            raise UntranslatableSettings(["sasl.mechanism"], f"{mechanism} (translated: {sorted(LOGIN_MODULES)})")
        java["sasl.mechanism"] = mechanism
        java["sasl.jaas.config"] = (f'{LOGIN_MODULES[mechanism]} required username="{settings["sasl.username"]}" '
                                    f'password="{settings.get("sasl.password", "")}";')
    ca = _pem(settings, "ssl.ca")
    if ca:
        java.update({"ssl.truststore.type": "PEM", "ssl.truststore.certificates": ca})
    certificate, key = _pem(settings, "ssl.certificate"), _pem(settings, "ssl.key")
    if certificate or key:
        if not (certificate and key):
            raise UntranslatableSettings(["ssl.certificate.*", "ssl.key.*"], "a client certificate needs its key")
        java.update({"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": certificate,
                     "ssl.keystore.key": key})
    if "ssl.key.password" in settings:
        java["ssl.key.password"] = str(settings["ssl.key.password"])
    if "ssl.endpoint.identification.algorithm" in settings:
        algorithm = str(settings["ssl.endpoint.identification.algorithm"])
        java["ssl.endpoint.identification.algorithm"] = "" if algorithm == "none" else algorithm
    return java


def _pem(settings: Mapping[str, Any], prefix: str) -> str | None:
    """A PEM given inline (``<prefix>.pem``) or as a file (``<prefix>.location``), as text: a Java client on another
    machine (a Spark executor) gets it whole rather than a path that may not exist there."""
    if f"{prefix}.pem" in settings:
        return str(settings[f"{prefix}.pem"])
    if f"{prefix}.location" in settings:
        return Path(settings[f"{prefix}.location"]).read_text()
    return None


def properties(java: Mapping[str, str]) -> str:
    """Java client properties as a ``.properties`` file holds them (for a tool's ``--command-config``)."""
    return "".join(f"{key}={escape(value)}\n" for key, value in java.items())


def tool_config(settings: Mapping[str, Any]) -> str:
    """``settings`` as the ``--command-config`` of one of Kafka's tools."""
    return properties(java_settings(settings))


def escape(value: str) -> str:
    """A value as a Java properties file reads it back: backslashes doubled, leading blanks and line breaks kept."""
    value = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "\\" + value if value[:1] in (" ", "\t") else value
