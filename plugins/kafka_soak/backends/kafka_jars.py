"""Apache Kafka as jars from Maven Central: resolved once per version into the checkout, run with ``java``.

The broker (``kafka.Kafka``), its storage tool, ``ConfigCommand`` (quotas) and ``TransactionsCommand`` (open
transactions) come from ``org.apache.kafka:kafka_2.13`` and ``kafka-tools`` of the same version, plus a
logging provider (the jars bring none: without one the broker says nothing): Log4j 2 for 4.x, reload4j (the Log4j 1
API) for 3.x, each line's own, configured alike (``log4j2.properties``, ``log4j.properties``).
``backends/kafka/pom.xml`` lists them; ``mvn dependency:copy-dependencies`` copies the runtime classpath into
``.cache/kafka/<version>/`` with its Maven repository in ``.cache/m2``, so a second run needs no network.

    python -m kafka_soak.cli kafka-jars [VERSION]     # what `make setup` does for the default version
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka_soak.backends.kafka_releases import release_of
from kafka_soak.params import KAFKA_VERSION, KAFKA_VERSION_PATTERN
from kafka_soak.shared.java_client import NO_CONFIG_PROVIDERS
from kafka_soak.toolchain import maven

RESOURCES = Path(__file__).resolve().parent / "kafka"
POM = RESOURCES / "pom.xml"
LOG_CONFIG = RESOURCES / "log4j2.properties"  # 4.x
LOG1_CONFIG = RESOURCES / "log4j.properties"  # 3.x (reload4j)
CONFIG_COMMAND = "kafka.admin.ConfigCommand"  # kafka-configs.sh
TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"  # kafka-transactions.sh
FEATURES_COMMAND = "org.apache.kafka.tools.FeatureCommand"  # kafka-features.sh, from 3.6 on
# For a JVM that ends within seconds (Kafka's tools, the checker on a small run): C1 alone compiles what little runs
# hot; tiered compilation's C2 would spend more CPU than it saves (the checker: bench/checker_jit.py).
SHORT_LIVED_JIT = "-XX:TieredStopAtLevel=1"
# A tool's --command-config read from its standard input (run_tool's ``stdin``): a secured cluster's client
# properties in no file and on no command line.
STDIN_CONFIG = "/dev/stdin"


class KafkaVersionError(maven.BuildError):
    """A Kafka version that cannot be had (malformed, or not served by Maven Central)."""


class ToolError(RuntimeError):
    """One of Kafka's command-line tools failed; the message has what it said."""


def jars_dir(version: str) -> Path:
    return maven.cache_root() / "kafka" / version


def is_resolved(version: str) -> bool:
    return maven.is_built(jars_dir(version))


def resolve(version: str = KAFKA_VERSION, timeout: float = 600.0, param: str = "kafka_version") -> Path:
    """The directory holding every jar of Kafka ``version``'s broker and tools, downloading them on first use.

    Raises ``KafkaVersionError`` naming ``param`` (the one that asked for ``version``) when the version is malformed
    or not served."""
    if not re.match(KAFKA_VERSION_PATTERN, version):
        raise KafkaVersionError(f"{param}: {version!r} is not an Apache Kafka KRaft release number from 3.5 on "
                                "(allowed: MAJOR.MINOR.PATCH, 3.5.0 or later, e.g. 3.9.1 or 4.3.1)")
    target = jars_dir(version)
    logging = ["-Dkafka.logging=reload4j"] if release_of(version) < (4, 0) else []  # the pom's profile of the line
    try:
        maven.build(target, lambda staging: ["-f", str(POM), f"-Dkafka.version={version}", *logging,
                                             "dependency:copy-dependencies", "-DincludeScope=runtime",
                                             f"-DoutputDirectory={staging}"],
                    param, f"fetch Apache Kafka {version}'s jars", timeout)
    except maven.BuildError as exc:
        raise KafkaVersionError(str(exc)) from None
    return target


def java_command(version: str, main_class: str, *args: str, heap: str = "256m",
                 properties: dict[str, str] | None = None, short_lived: bool = False,
                 options: tuple[str, ...] = ()) -> list[str]:
    """``java`` running ``main_class`` of Kafka ``version`` with the project's logging configuration (both lines': each
    release's provider reads its own and ignores the other's). A
    ``short_lived`` JVM (a tool, which lives a second or two; the broker of a short run) compiles with C1 alone
    (``SHORT_LIVED_JIT``): C2's compilations would cost it more CPU than they save. Others keep the JVM's default.
    ``options``: this JVM's own (a broker's GC log, the agent of a broker the program stalls)."""
    system = {"log4j2.configurationFile": str(LOG_CONFIG), "log4j.configuration": LOG1_CONFIG.as_uri(),
              "kafka.soak.log.level": "INFO", **(properties or {})}
    return [java_executable(), f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true", NO_CONFIG_PROVIDERS,
            *([SHORT_LIVED_JIT] if short_lived else []), *options,
            *(f"-D{k}={v}" for k, v in system.items()),
            "-cp", str(resolve(version) / "*"), main_class, *args]


def run_tool(version: str, main_class: str, args: list[str], stdin: str | None = None,
             timeout: float = 120.0) -> str:
    """One of Kafka's command-line tools as its own JVM (they end with ``Exit.exit``); its output. ``stdin`` feeds
    a ``--command-config /dev/stdin``, so a secured cluster's password is in no file and on no command line."""
    command = java_command(version, main_class, *args, properties={"kafka.soak.log.level": "WARN"},
                           short_lived=True)
    proc = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        said = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        raise ToolError(f"{main_class.rsplit('.', 1)[-1]} exited {proc.returncode}: " + " / ".join(said[:3]))
    return proc.stdout


def features_command(version: str) -> str:
    """``kafka-features.sh`` of a release: Kafka's tools module has it from 3.6 on, its core module before (the
    core's name was kept as a redirect until 4.0)."""
    return FEATURES_COMMAND if release_of(version) >= (3, 6) else "kafka.admin.FeatureCommand"


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else (shutil.which("java") or "java")


def broker_versions(values: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The Apache Kafka releases a local run starts, and the param that names them."""
    if values["kafka_versions"]:
        return "kafka_versions", list(values["kafka_versions"])
    return "kafka_version", [values["kafka_version"]]
