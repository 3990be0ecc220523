"""The Kafka Streams app's build per version: Maven from the project's pom, cached in the checkout."""

from __future__ import annotations

import pytest

from kafka_soak import maven
from kafka_soak.app import streams


def test_a_version_is_built_once_and_reused(tmp_path, monkeypatch):
    """A fresh cache (Maven's repository shared, so nothing is downloaded twice): the first call builds and says
    how long it took, the second finds it."""
    shared = maven.cache_root() / "m2"
    monkeypatch.setenv("SOAK_CACHE_DIR", str(tmp_path))
    (tmp_path / "m2").symlink_to(shared, target_is_directory=True)
    target, seconds = streams.build("3.5.0")
    assert seconds > 0 and target.parent == tmp_path / "apps" / "streams"
    assert (target / "soak-streams.jar").is_file() and (target / "lib" / "kafka-streams-3.5.0.jar").is_file()
    assert streams.build("3.5.0") == (target, 0.0)
    command = streams.command({"threads": 4, "standbys": 1, "cache_entries": 10, "partitions": 12,
                               "acceptable_recovery_lag": 0, "max_warmup_replicas": 1, "commit_interval_ms": 100,
                               "state_write_bytes": 0, "session_timeout_ms": 6000, "topology": "workflow",
                               "parallel_tasks": 5}, "3.5.0",
                              tmp_path / "state", "single-writer")
    assert command[command.index("-cp") + 1] == f"{target / 'soak-streams.jar'}:{target / 'lib' / '*'}"
    assert command[-26:] == ["--threads", "4", "--standbys", "1", "--cache-max-bytes", str(10 * 12 * 2 * 128),
                             "--acceptable-recovery-lag", "0", "--max-warmup-replicas", "1", "--commit-interval-ms",
                             "100", "--partitions", "12", "--state-dir", str(tmp_path / "state"), "--blob-bytes",
                             "0", "--session-timeout-ms", "6000", "--topology", "workflow", "--design",
                             "single-writer", "--parallel-tasks", "5"]


@pytest.mark.parametrize("version, message", [
    ("2.8.1", "streams_version: '2.8.1' is not a Kafka Streams release from 3.3 on (allowed: MAJOR.MINOR.PATCH, "
              "3.3.0 or later, e.g. 3.4.0 or 4.3.1)"),
    ("3.2.3", "streams_version: '3.2.3' is not a Kafka Streams release from 3.3 on (allowed: MAJOR.MINOR.PATCH, "
              "3.3.0 or later, e.g. 3.4.0 or 4.3.1)"),
    ("3.4.9", "streams_version: cannot build the Kafka Streams app against Kafka Streams 3.4.9: Maven Central serves "
              "no org.apache.kafka:kafka-streams:3.4.9"),
])
def test_a_version_that_cannot_be_had_is_named(version, message):
    with pytest.raises(streams.StreamsVersionError) as err:
        streams.build(version)
    assert str(err.value) == message
