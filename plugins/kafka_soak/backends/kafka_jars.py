"""Apache Kafka as jars from Maven Central: resolved once per version into the checkout, run with ``java``.

The broker (``kafka.Kafka``), its storage tool, ``ConfigCommand`` (quotas) and ``TransactionsCommand`` (open
transactions) come from ``org.apache.kafka:kafka_2.13`` and ``kafka-tools`` of the same version, plus a
logging provider (the jars bring none: without one the broker says nothing). ``backends/kafka/pom.xml``
lists them; ``mvn dependency:copy-dependencies`` copies the runtime classpath into
``.cache/kafka/<version>/`` with its Maven repository in ``.cache/m2``, so a second run needs no network.

    python -m kafka_soak.cli kafka-jars [VERSION]     # what `make setup` does for the default version
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from kafka_soak.rundir import PROJECT_ROOT

DEFAULT_VERSION = "4.3.1"
# 4.x: KRaft only, Java 17, the storage tool and config names this backend writes.
VERSION_PATTERN = r"^4\.\d+\.\d+$"
RESOURCES = Path(__file__).resolve().parent / "kafka"
POM = RESOURCES / "pom.xml"
LOG_CONFIG = RESOURCES / "log4j2.properties"
RESOLVED = ".resolved"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"  # kafka-configs.sh
TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"  # kafka-transactions.sh
# A tool's --command-config read from its standard input (run_tool's ``stdin``): a secured cluster's client
# properties in no file and on no command line.
STDIN_CONFIG = "/dev/stdin"


class KafkaVersionError(ValueError):
    """A Kafka version that cannot be had (malformed, or not served by Maven Central)."""


class ToolError(RuntimeError):
    """One of Kafka's command-line tools failed; the message has what it said."""


def cache_root() -> Path:
    return Path(os.environ.get("SOAK_CACHE_DIR", PROJECT_ROOT / ".cache"))


def jars_dir(version: str) -> Path:
    return cache_root() / "kafka" / version


def is_resolved(version: str) -> bool:
    return (jars_dir(version) / RESOLVED).exists()


def resolve(version: str = DEFAULT_VERSION, timeout: float = 600.0) -> Path:
    """The directory holding every jar of Kafka ``version``'s broker and tools, downloading them on first use.

    Raises ``KafkaVersionError`` naming param ``kafka_version`` when the version is malformed or not served."""
    if not re.match(VERSION_PATTERN, version):
        raise KafkaVersionError(f"kafka_version: {version!r} is not an Apache Kafka 4.x release number "
                                "(allowed: 4.MINOR.PATCH, e.g. 4.1.1 or 4.3.1)")
    target = jars_dir(version)
    if is_resolved(version):
        return target
    if shutil.which("mvn") is None:
        raise KafkaVersionError("kafka_version: Maven (mvn) is needed to fetch Kafka's jars and is not installed "
                                "(make setup installs it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{version}.", dir=target.parent))
    command = ["mvn", "-B", "-q", "-Dstyle.color=never", "-f", str(POM), f"-Dmaven.repo.local={cache_root() / 'm2'}",
               f"-Dkafka.version={version}", "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-DoutputDirectory={staging}"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        missing = re.search(r"artifacts? could not be resolved: ([^:]+:[^:]+:jar:[^\s,]+)", proc.stdout)
        if missing:
            reason = f"Maven Central serves no {missing[1].replace(':jar:', ':')}"
        else:
            errors = [line.split("[ERROR]", 1)[1].strip() for line in proc.stdout.splitlines() if "[ERROR]" in line]
            reason = next(filter(None, errors), proc.stderr.strip()[-300:] or f"mvn exited {proc.returncode}")
        raise KafkaVersionError(f"kafka_version: cannot fetch Apache Kafka {version}'s jars: {reason[:400]}")
    (staging / RESOLVED).write_text(" ".join(command) + "\n")
    try:
        staging.rename(target)
    except OSError:  # resolved meanwhile by another process
        shutil.rmtree(staging, ignore_errors=True)
    return target


def java_command(version: str, main_class: str, *args: str, heap: str = "256m",
                 properties: dict[str, str] | None = None) -> list[str]:
    """``java`` running ``main_class`` of Kafka ``version`` with the project's logging configuration."""
    system = {"log4j2.configurationFile": str(LOG_CONFIG), **(properties or {})}
    return [java_executable(), f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
            *(f"-D{k}={v}" for k, v in system.items()),
            "-cp", str(resolve(version) / "*"), main_class, *args]


def run_tool(version: str, main_class: str, args: list[str], stdin: str | None = None,
             timeout: float = 120.0) -> str:
    """One of Kafka's command-line tools as its own JVM (they end with ``Exit.exit``); its output. ``stdin`` feeds
    a ``--command-config /dev/stdin``, so a secured cluster's password is in no file and on no command line."""
    command = java_command(version, main_class, *args, properties={"kafka.soak.log.level": "WARN"})
    proc = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        said = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        raise ToolError(f"{main_class.rsplit('.', 1)[-1]} exited {proc.returncode}: " + " / ".join(said[:3]))
    return proc.stdout


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else (shutil.which("java") or "java")
