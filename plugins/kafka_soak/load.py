"""The run's load: the generator as a process of the harness, started at T0, resumed if it dies.

The generator (``kafka_soak.generator``) is part of the harness, not of the app under test: whatever runtime the
instances use, it runs as a local process registered with the run's other processes. It writes its progress to
``generator.json``, which the program's countdown and ``await_generator`` read.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from kafka_soak import kafka_io, rundir, subjects
from kafka_soak.backends.cluster import Cluster
from kafka_soak.backends.external import client_settings
from kafka_soak.runtime import ProcessRecord
from kafka_soak.runtime.local import LocalProcesses, python_command

log = logging.getLogger(__name__)

GENERATOR = "generator"


class Load:
    def __init__(self, run_dir: Path, cluster: dict[str, Any], plan: dict[str, Any]) -> None:
        self.run_dir, self.cluster, self.plan = run_dir, Cluster(**cluster), plan
        self.processes = LocalProcesses(run_dir)

    @property
    def progress_file(self) -> Path:
        return self.run_dir / rundir.GENERATOR

    def progress(self) -> dict[str, Any]:
        """What the generator reported last (empty before its first report)."""
        return json.loads(self.progress_file.read_text()) if self.progress_file.exists() else {}

    def command(self, start_at: float) -> list[str]:
        plan = self.plan
        return python_command(
            "kafka_soak.generator", "--bootstrap", self.cluster.bootstrap_servers, "--topic",
            self.cluster.topics["input"], "--records", str(plan["records"]), "--keys", str(plan["keys"]),
            "--phases", json.dumps(plan["phases"]), "--payload-bytes", str(plan["payload_bytes"]),
            "--seed", str(plan["seed"]), "--start-at", str(start_at), "--steps-dir", str(self.run_dir / "program"),
            "--progress-file", str(self.progress_file), *self.input_format())

    def input_format(self) -> list[str]:
        """The generator's arguments for a profile's input (its key template and value encoding); none for the
        reference apps' contract."""
        app = subjects.profile(self.plan)
        if app is None:
            return []
        return ["--key-template", app.input.key, "--value", json.dumps(app.input.value)]

    def start(self, start_at: float, attempt: int) -> ProcessRecord | None:
        """Start (or, after a crash, resume) producing from ``start_at``; the cluster's security settings travel
        in the environment only."""
        if self.running():
            log.info("generator already running")
            return self.processes.record(GENERATOR)
        return self.processes.start(GENERATOR, self.command(start_at), self.run_dir / rundir.LOGS / f"generator.{attempt}.log",
                                    extra_env=kafka_io.settings_env(client_settings(self.cluster)))

    def expected_s(self) -> float:
        """The longest the load may take from the program's start: the program, then each phase at its rate (a
        full-speed phase at a floor of 200 records/s), plus a grace for a slow machine and a restart."""
        phases = self.plan["phases"]
        producing = sum(p["records"] / (p["rate"] or 200.0) for p in phases)
        return len(self.plan["program"]) * self.plan["interval_s"] + producing + 300.0

    def running(self) -> bool:
        return self.processes.is_alive(GENERATOR)

    def stop(self, timeout: float = 30.0) -> int | None:
        return self.processes.stop(GENERATOR, timeout) if self.running() else None
