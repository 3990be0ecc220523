"""Byteman, the Java agent that stalls a thread of a JVM app (``toolchain/stall_agent.py``), from Maven Central into the
checkout's cache (``.cache/byteman/<version>/``) by ``toolchain/byteman/pom.xml``, on the first run that needs it."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_soak.toolchain import maven

POM = Path(__file__).resolve().parent / "byteman" / "pom.xml"
VERSION = re.search(r"<byteman.version>([^<]+)<", POM.read_text())[1]


def agent_jar(param: str = "program") -> Path:
    """The agent's jar (its rule engine inside), fetched on first use; ``BuildError`` names ``param`` if it cannot be."""
    target = maven.cache_root() / "byteman" / VERSION
    maven.build(target, lambda staging: ["-f", str(POM), "dependency:copy-dependencies", "-DincludeScope=runtime",
                                         f"-DoutputDirectory={staging}"],
                param, f"fetch the Byteman agent {VERSION} that stalls a JVM app's thread")
    return target / f"byteman-{VERSION}.jar"
