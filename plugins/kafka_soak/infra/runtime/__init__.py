"""Where a run's long-lived processes live: one small interface, one registry.

Like kafkatest's ``Service``, every kind of process a run starts (a broker node, an app instance, the
generator, a quota meter) is started, stopped gracefully, killed, paused and resumed by name through a
``Runtime``, and registered in one place, ``<run_dir>/processes/<name>.json`` (``Registry``), so any task of the
run, a retry or an interrupted ``make soak`` finds it again. ``local.LocalProcesses`` runs OS processes,
``docker.DockerContainers`` containers; what differs (a container's log must be copied out, its remains
removed) hides behind ``collect_logs`` and ``clean_up``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kafka_soak.infra.runtime.registry import ProcessRecord

if TYPE_CHECKING:  # not at run time: ``python -m kafka_soak.infra.runtime.spawn`` runs this package first, and a
    # package that imported the module it runs gets runpy's warning on every supervised process's log
    from kafka_soak.infra.runtime.spawn import Restart


class Runtime(Protocol):
    """The operations a program step needs from wherever instances run."""

    def start(self, name: str, command: list[str], log_path: Path, step: str = "",
              extra_env: dict[str, str] | None = None, image: str | None = None,
              restart: Restart | None = None, remove_after: Path | None = None,
              files: dict[str, str] | None = None) -> ProcessRecord:
        """``image``: the container image, where the runtime runs containers (default: its own); ``restart``: the
        restart policy of a process that exits by itself (None: it stays down). A local process's private
        directory of this start (its properties file, its temporary files) is made beforehand and ``remove_after`` is
        removed once the instance has ended; a container gets ``files`` (path inside it: content) put into it before it starts."""

    def stop(self, name: str, timeout: float = 30.0) -> int | None: ...

    def kill(self, name: str) -> int | None: ...

    def pause(self, name: str) -> bool: ...

    def resume(self, name: str) -> bool: ...

    def is_alive(self, name: str) -> bool: ...

    def is_paused(self, name: str) -> bool: ...

    def record(self, name: str) -> ProcessRecord | None: ...

    def names(self) -> list[str]: ...

    def collect_logs(self) -> None:
        """Bring every process's output so far into its log file in the run directory."""

    def clean_up(self) -> list[str]:
        """Teardown: remove what is left of the run's processes; returns what had to be removed."""
