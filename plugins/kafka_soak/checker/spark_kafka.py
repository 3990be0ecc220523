"""Spark's own Kafka source (``spark-sql-kafka-0-10``) for the checker, as jars from Maven Central.

pyspark ships without it. ``spark_jobs/pom.xml`` names it for the Spark version spark-submit comes from; the four jars
Spark's own do not cover (the source, its token provider, ``kafka-clients``, ``commons-pool2``) are copied into
``.cache/spark-kafka/<spark version>/`` with Maven's repository in ``.cache/m2``, once, and handed to spark-submit
as ``--jars``: no network when a run validates, and the same files on a cluster master.

    python -m kafka_soak.cli spark-kafka-jars     # what `make setup` does
"""

from __future__ import annotations

from importlib.metadata import version as installed
from pathlib import Path

from kafka_soak.shared import rundir
from kafka_soak.toolchain import maven

POM = rundir.resource("spark_jobs") / "pom.xml"
JARS = ("spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13", "kafka-clients", "commons-pool2")


def spark_version() -> str:
    """The version of the Spark that runs the checker: the installed pyspark, whose spark-submit the DAGs call."""
    return installed("pyspark")


def resolve(version: str | None = None, timeout: float = 600.0) -> list[Path]:
    """The jars of Spark ``version``'s Kafka source (the installed pyspark's by default), fetched on first use."""
    version = version or spark_version()
    target = maven.cache_root() / "spark-kafka" / version
    maven.build(target, lambda staging: ["-f", str(POM), f"-Dspark.version={version}", "dependency:copy-dependencies",
                                         "-DincludeScope=runtime", f"-DincludeArtifactIds={','.join(JARS)}",
                                         f"-DoutputDirectory={staging}"],
                "validate", f"fetch Spark {version}'s Kafka source (spark-sql-kafka-0-10)", timeout)
    return sorted(target.glob("*.jar"))
