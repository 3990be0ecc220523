"""A connection's librdkafka settings as the Java client's: what Kafka's tools and Spark's Kafka source are given.
(The SCRAM case runs end to end against a real secured broker in test_e2e's external-cluster test.)"""

from __future__ import annotations

import pytest

from kafka_soak.shared.java_client import UntranslatableSettings, java_settings, properties, tool_config

CA = "-----BEGIN CERTIFICATE-----\nMIIB\nca\n-----END CERTIFICATE-----\n"
CERT = "-----BEGIN CERTIFICATE-----\nMIIB\nclient\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN PRIVATE KEY-----\nMIIE\nkey\n-----END PRIVATE KEY-----\n"


def test_sasl_scram_and_plain_become_a_jaas_config():
    settings = {"bootstrap.servers": "b:9093", "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": "soak", "sasl.password": "pw"}
    assert java_settings(settings) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="soak" '
                            'password="pw";'}
    plain = java_settings({"sasl.username": "u", "sasl.password": "p"})
    assert plain["sasl.mechanism"] == "PLAIN" and plain["sasl.jaas.config"].startswith(
        "org.apache.kafka.common.security.plain.PlainLoginModule required")


def test_ssl_pem_files_and_inline_pem_become_pem_stores(tmp_path):
    (tmp_path / "ca.pem").write_text(CA)
    (tmp_path / "client.pem").write_text(CERT)
    (tmp_path / "client.key").write_text(KEY)
    from_files = java_settings({"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "ca.pem"),
                                "ssl.certificate.location": str(tmp_path / "client.pem"),
                                "ssl.key.location": str(tmp_path / "client.key"), "ssl.key.password": "kp",
                                "ssl.endpoint.identification.algorithm": "none"})
    inline = java_settings({"security.protocol": "SSL", "ssl.ca.pem": CA, "ssl.certificate.pem": CERT,
                            "ssl.key.pem": KEY, "ssl.key.password": "kp",
                            "ssl.endpoint.identification.algorithm": "none"})
    assert from_files == inline == {
        "security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": CA,
        "ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": CERT, "ssl.keystore.key": KEY,
        "ssl.key.password": "kp", "ssl.endpoint.identification.algorithm": ""}


def test_what_has_no_java_equivalent_is_refused_by_name():
    with pytest.raises(UntranslatableSettings, match=r"\['sasl.oauthbearer.config'\]") as refused:
        java_settings({"security.protocol": "SASL_SSL", "sasl.oauthbearer.config": "x"})
    assert refused.value.names == ["sasl.oauthbearer.config"]
    with pytest.raises(UntranslatableSettings, match=r"GSSAPI"):
        java_settings({"sasl.mechanism": "GSSAPI", "sasl.username": "u"})
    with pytest.raises(UntranslatableSettings, match="a client certificate needs its key"):
        java_settings({"ssl.certificate.pem": CERT})


def test_a_properties_file_reads_back_every_value_whole():
    text = tool_config({"security.protocol": "SSL", "ssl.ca.pem": CA, "ssl.key.password": " lead\\ing"})
    assert text.splitlines() == ["security.protocol=SSL", "ssl.truststore.type=PEM",
                                 "ssl.truststore.certificates=" + CA.replace("\n", "\\n"),
                                 "ssl.key.password=\\ lead\\\\ing"]
    assert properties({}) == ""
