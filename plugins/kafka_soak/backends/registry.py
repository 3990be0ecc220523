"""The backends by name, what each can do, and the one a plan asks for.

A backend is where a run's topics live. Each is one class with the interface ``Backend`` names; what the rest of the
suite may ask of it is read from its capabilities, never from its name. A new backend is one module and one line in
``BACKENDS`` (and its name in ``params.BACKENDS``, the param's choices).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from kafka_soak.backends.docker_kafka import DockerKafkaBackend
from kafka_soak.backends.external import ExternalBackend
from kafka_soak.backends.local_kafka import LocalKafkaBackend

if TYPE_CHECKING:
    from kafka_soak.infra.cluster import Cluster
    from kafka_soak.plan import Plan


class Backend(Protocol):
    """What a backend is and can do."""

    name: ClassVar[str]  # param backend's value
    # The cluster is someone else's (a shared one): every name the run gives is scoped to it, what the run sets there
    # (quotas, kept topics) is the deployer's to choose, and its brokers' settings and disks are not the run's.
    shared: ClassVar[bool]
    # The run starts its brokers on this machine: their memory, disk and processes are the run's.
    starts_brokers: ClassVar[bool]
    # It stops and starts one broker of several (the program's ``bN-``/``bN+``), starts several, on any release
    # (``kafka_versions``) and formats their storage (``transaction_version``).
    broker_faults: ClassVar[bool]
    # It starts each broker in a network namespace of the run's (``infra.network``), and each instance of runtime
    # ``local`` in one, so that the program's ``nN-``/``nbN-`` can cut their links.
    network_faults: ClassVar[bool]
    # The run's Kafka data outlives its release, so a task cleared on its own provisions the same data again.
    data_survives_release: bool

    @classmethod
    def from_plan(cls, plan: Plan, run_dir: Path) -> Backend: ...

    @classmethod
    def preflight(cls, plan: Plan) -> None:
        """Raise ``preflight.ERRORS`` naming the param when what the backend needs is not there (jars, an image, a
        connection the checker can use)."""

    def provision(self, topics: dict[str, int], prefix: str, *, fixed: dict[str, str] | None = None) -> Cluster: ...

    def release(self, cluster: Cluster | None) -> None: ...

    def quota_usage(self) -> list[dict[str, Any]]: ...


BACKENDS: dict[str, type[Backend]] = {b.name: b for b in (LocalKafkaBackend, DockerKafkaBackend, ExternalBackend)}


def kind(name: str) -> type[Backend]:
    """The backend of param ``backend``'s value."""
    return BACKENDS[name]


def create(plan: Plan, run_dir: Path) -> Backend:
    """The backend a run's plan asks for, configured from its params."""
    return kind(plan["backend"]).from_plan(plan, run_dir)


def shared(name: str) -> bool:
    """Whether param backend's value names a shared cluster; a value no backend has is refused by the param's schema,
    and is none."""
    return name in BACKENDS and BACKENDS[name].shared


def able(capability: str) -> str:
    """The backends that have ``capability``, as a message names them ("backend 'local'")."""
    names = [f"'{name}'" for name, backend in BACKENDS.items() if getattr(backend, capability)]
    return f"backend{'s' if len(names) > 1 else ''} {' or '.join(names)}"
