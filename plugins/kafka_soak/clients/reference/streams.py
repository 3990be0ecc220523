"""The Kafka Streams reference app (``apps/streams``), one build per Kafka Streams version, one JVM per instance.

The seeds' bugs live in Kafka Streams itself, so the suite judges the released library, not an imitation: the
app is compiled against the version a run asks for (``streams_version``) on first use and cached in
``.cache/apps/streams/<version>-<source hash>/`` (``soak-streams.jar`` and its ``lib/``); a change to the app's
source builds it again. ``python -m kafka_soak.cli streams-app [VERSION]`` builds one ahead of time.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_soak.backends.kafka_jars import java_executable
from kafka_soak.backends.kafka_releases import release_of
from kafka_soak.clients.profile import literal
from kafka_soak.params import STREAMS_VERSION, STREAMS_VERSION_PATTERN
from kafka_soak.shared.java_client import NO_CONFIG_PROVIDERS
from kafka_soak.shared.rundir import resource
from kafka_soak.toolchain import maven

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)

SOURCE = resource("streams_app")
MAIN_CLASS = "io.kafkasoak.streams.SoakStreamsApp"
# Kafka Streams sizes its record cache in bytes for the whole instance; param cache_entries counts entries per
# partition store, like the reference worker's. An entry of this app costs about this much in the cache (key,
# value, LRUCacheEntry fields and the changelog topic's name).
CACHE_ENTRY_BYTES = 128
STORES = 2  # ids and counter


class StreamsVersionError(maven.BuildError):
    """A Kafka Streams version the app cannot be built for."""


def app_dir(version: str) -> Path:
    return maven.cache_root() / "apps" / "streams" / f"{version}-{maven.source_hash(SOURCE)}"


def build(version: str = STREAMS_VERSION, param: str = "streams_version") -> tuple[Path, float]:
    """The app built against Kafka Streams ``version`` and the seconds this call spent building it (0: cached); an
    error names ``param``, what asked for the version."""
    if not re.match(STREAMS_VERSION_PATTERN, version):
        raise StreamsVersionError(f"{param}: {version!r} is not a Kafka Streams release from 3.3 on "
                                  "(allowed: MAJOR.MINOR.PATCH, 3.3.0 or later, e.g. 3.4.0 or 4.3.1)")
    target = app_dir(version)
    try:
        seconds = maven.build(target, lambda staging: [
            "-f", str(SOURCE / "pom.xml"), f"-Dstreams.version={version}", f"-Dbuild.dir={staging}", "package",
            "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={staging / 'lib'}"],
            param, f"build the Kafka Streams app against Kafka Streams {version}")
    except maven.BuildError as exc:
        raise StreamsVersionError(str(exc)) from None
    if seconds:
        log.info("built the Kafka Streams app for Kafka Streams %s in %.1f s (cached in %s)", version, seconds, target)
    return target, seconds


# The first release whose repartition topics and foreign-key joins have the format of today's (KIP-904): an instance
# moved across it needs a first rolling bounce with upgrade.from set and a second without.
NEW_FORMATS_SINCE = (3, 5)


def move_problem(current: str, target: str) -> str:
    """Why an instance of the app on Kafka Streams ``current`` cannot be restarted on ``target`` by one graceful
    restart ("" when it can). Kafka Streams' upgrade guide: any older release moves to a newer one with one rolling
    bounce, except from 3.4 or older to 3.5 or newer (two bounces, upgrade.from set in the first: the suite does not
    do that); a move back needs special care (KIP-904's repartition format, RocksDB's files) and is documented for
    none but another patch release of the same line."""
    if not re.match(STREAMS_VERSION_PATTERN, target):
        return f"{target!r} is not a Kafka Streams release from 3.3 on (e.g. 3.4.0 or 4.3.1)"
    line = ".".join(map(str, release_of(current)))
    if release_of(target) < release_of(current):
        return (f"Kafka Streams {target} is older than {current}: Kafka Streams supports no downgrade but to another "
                f"patch release of its line (allowed: {line}.x or later)")
    since = ".".join(map(str, NEW_FORMATS_SINCE))
    if release_of(current) < NEW_FORMATS_SINCE <= release_of(target):
        return (f"Kafka Streams {current} -> {target} needs two rolling bounces, the first with upgrade.from={line} "
                f"(KIP-904's formats, new in {since}), which one restart is not (allowed from {current}: releases "
                f"before {since}; a run that starts on {since}.0 or later moves to any newer one)")
    return ""


def cache_max_bytes(plan: Plan) -> int:
    return plan["cache_entries"] * plan["partitions"] * STORES * CACHE_ENTRY_BYTES


def options(plan: Plan) -> list[str]:
    """An instance's options: what the originals varied and the topology. A workflow design's and a control's own
    options, its state directory and the run's names come per member and instance (``clients/reference/profiles.py``)."""
    values = {"threads": plan["threads"], "standbys": plan["standbys"], "cache-max-bytes": cache_max_bytes(plan),
              "acceptable-recovery-lag": plan["acceptable_recovery_lag"],
              "max-warmup-replicas": plan["max_warmup_replicas"], "commit-interval-ms": plan["commit_interval_ms"],
              "partitions": plan["partitions"], "blob-bytes": plan["state_write_bytes"],
              "session-timeout-ms": plan["session_timeout_ms"], "topology": plan["topology"],
              "write-buffer-bytes": plan["rocksdb_write_buffer_bytes"], "bug": plan["bug"]}
    return [part for name, value in values.items() for part in (f"--{name}", str(value))]


def jvm() -> list[str]:
    """The JVM an instance runs in on this machine."""
    return [java_executable(), "-Xmx256m", "-XX:+UseG1GC", "-Djava.awt.headless=true", NO_CONFIG_PROVIDERS]


def classpath(version: str) -> str:
    """The app's classpath as built against ``version`` (a ``{version}`` placeholder: one per member of a matrix),
    the rest of the path escaped as a command template takes it."""
    target = literal(str(app_dir("\0"))).replace("\0", version)
    return f"{target}/soak-streams.jar:{target}/lib/*"


def image(version: str) -> str:
    """The app's image for runtime=docker (``make streams-image STREAMS_VERSION=...``, docker/streams.Dockerfile)."""
    return f"kafka-soak-streams:{version}"


CONTAINER_STATE_DIR = "/tmp/state"
