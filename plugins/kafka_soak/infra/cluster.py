"""What later tasks need to reach a run's Kafka, whichever backend provided it (passed between tasks as XCom).

It never holds a secret: on the ``external`` backend the security settings stay in the Airflow connection
``conn_id`` and are looked up by each task that needs a client (``client_settings``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Cluster:
    backend: str
    bootstrap_servers: str
    topics: dict[str, str]
    conn_id: str | None = None  # external: the Airflow connection holding the client settings
    container: str | None = None  # docker: the broker container's id
    quotas: list[dict[str, Any]] = field(default_factory=list)  # as verified on the cluster at provisioning
    brokers: int = 1  # local: nodes the run started
    kafka_version: str | None = None  # local: the Apache Kafka release the nodes run
    # local: the finalized feature levels (metadata.version by name), read where the run set some (transaction_version)
    # or its program upgrades brokers
    features: dict[str, int | str] = field(default_factory=dict)
    subjects: list[dict[str, Any]] = field(default_factory=list)  # the apps under test (subjects.Subject)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def topic_prefix(dag_id: str, attempt: str) -> str:
    """What an attempt's own topics are named after (``attempt``: its run directory's name, a broker version matrix
    member's release)."""
    return f"soak.{dag_id}.{attempt}"


def topic_names(roles: Iterable[str], prefix: str, fixed: Mapping[str, str] | None, owned: bool) -> dict[str, str]:
    """``{role: topic}`` of a run: ``<prefix>.<role>``, so parallel runs never share a topic, except the names an app
    chose itself (``fixed``, a profile's): kept as they are on a cluster the run owns (``owned``), else scoped to the
    run as ``<prefix>.<name>``."""
    fixed = fixed or {}
    return {role: fixed[role] if owned and role in fixed else f"{prefix}.{fixed.get(role, role)}" for role in roles}
