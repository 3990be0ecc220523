"""Apache Kafka's release numbers, and the moves between releases Kafka supports for a running cluster's brokers.

A KRaft cluster's ``metadata.version`` is set when its storage is formatted, to its release's newest production one, and
stays there until someone raises it (``kafka-features upgrade``), which the suite never does. A broker starts on that
cluster only on a release that supports its ``metadata.version``: every release of the same minor line or a newer
one (a metadata.version is a minor line's: ``4.2-IV1``). So a rolling upgrade to any newer release is supported, and
so is a move back to any release of the line the cluster was formatted on or a newer one; a move further back is not,
since metadata.version cannot be lowered ("cluster metadata downgrade is not supported", Kafka's upgrade notes, 3.3 to
4.3; KIP-1155 would add it). 4.x needs the cluster on KRaft at metadata.version 3.3-IV3 or later: a cluster formatted
on 3.5 or later is.
"""

from __future__ import annotations

import re

from kafka_soak.params import KAFKA_VERSION_PATTERN


def release_of(version: str) -> tuple[int, int]:
    """A release's major and minor number (``4.3.1`` -> (4, 3))."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def move_problem(formatted: str, target: str) -> str:
    """Why a broker of a cluster formatted on ``formatted`` cannot be moved to release ``target`` ("" when Kafka
    supports it)."""
    if not re.match(KAFKA_VERSION_PATTERN, target):
        return f"{target!r} is not an Apache Kafka KRaft release number from 3.5 on (e.g. 3.9.1 or 4.3.1)"
    if release_of(target) < release_of(formatted):
        line = ".".join(map(str, release_of(formatted)))
        return (f"Apache Kafka {target} cannot run this cluster: its metadata.version is {line}'s (its storage was "
                f"formatted on {formatted}), which only {line} and later releases support, and Kafka cannot lower a "
                f"metadata.version (allowed: {line}.0 or later)")
    return ""
