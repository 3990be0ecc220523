"""``<run_dir>/processes/``: the record of each named process of a run, which every runtime writes and every task,
retry and reaper reads. Light to import: the supervisor (``spawn``) writes it right after it starts a process."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from kafka_soak.shared.rundir import append_jsonl, read_jsonl


@dataclass
class ProcessRecord:
    name: str
    pid: int
    create_time: float  # a container's: 0.0 where its processes are not this machine's (a remote engine)
    log: str
    started_at: float
    container: str | None = None  # set by the Docker runtime
    supervisor: int | None = None  # set by the local runtime: the process that waits for it (runtime.spawn)


class Registry:
    """``<run_dir>/processes/``: one record per named process of the run, written atomically."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "processes"
        self.path.mkdir(parents=True, exist_ok=True)

    def record(self, name: str) -> ProcessRecord | None:
        path = self.path / f"{name}.json"
        return ProcessRecord(**json.loads(path.read_text())) if path.exists() else None

    def write(self, record: ProcessRecord) -> None:
        tmp = self.path / f".{record.name}.tmp"
        tmp.write_text(json.dumps(asdict(record), indent=2))
        tmp.replace(self.path / f"{record.name}.json")

    @property
    def exits_file(self) -> Path:
        """How the run's processes ended, one JSON line each (``{"pid", "code", "signal", "at"}``; the Docker
        runtime adds ``container``)."""
        return self.path / "exits.jsonl"

    def exits(self) -> list[dict]:
        return read_jsonl(self.exits_file)

    def add_exit(self, record: dict) -> None:
        append_jsonl(self.exits_file, record)

    def names(self, containers: bool) -> list[str]:
        """Registered names of containers (``True``) or of local processes (``False``)."""
        return sorted(p.stem for p in self.path.glob("*.json")
                      if bool((record := self.record(p.stem)) and record.container) == containers)
