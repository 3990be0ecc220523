"""The app instances of a run: start/stop instance *n* and the generator on the local runtime.

One log per instance per program step (``logs/<app_id>-<n>.<step>.log``), as in the multi-runner
reproduction, so what an instance did between two toggles can be read on its own.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from kafka_soak.backends.embedded import Cluster
from kafka_soak.runtime.local import LocalProcesses, ProcessRecord, python_command

log = logging.getLogger(__name__)

GENERATOR = "generator"


class Instances:
    def __init__(self, run_dir: Path, cluster: Cluster, plan: dict[str, Any], app_id: str) -> None:
        self.run_dir, self.cluster, self.plan, self.app_id = run_dir, cluster, plan, app_id
        self.processes = LocalProcesses(run_dir)

    @staticmethod
    def name(instance: int) -> str:
        return f"instance-{instance}"

    def command(self, instance: int) -> list[str]:
        topics = self.cluster.topics
        args = ["--bootstrap", self.cluster.bootstrap_servers, "--app-id", self.app_id, "--instance", str(instance),
                "--input-topic", topics["input"], "--output-topic", topics["output"],
                "--changelog-topic", topics["changelog"], "--assertions-topic", topics["assertions"],
                "--bug", self.plan["bug"], "--bug-every", str(self.plan["bug_every"])]
        if "txn_offsets" in self.cluster.limitations:
            args.append("--mirror-offsets")
        return python_command("kafka_soak.app.worker", *args)

    def is_running(self, instance: int) -> bool:
        return self.processes.process(self.name(instance)) is not None

    def start(self, instance: int, step: int | str) -> ProcessRecord | None:
        """Start ``instance`` unless it already runs (a retried step converges)."""
        if self.is_running(instance):
            log.info("instance %d already running", instance)
            return self.processes.record(self.name(instance))
        log_path = self.run_dir / "logs" / f"{self.app_id}-{instance}.{step}.log"
        return self.processes.start(self.name(instance), self.command(instance), log_path)

    def stop(self, instance: int, timeout: float = 30.0) -> int | None:
        if not self.is_running(instance):
            log.info("instance %d already stopped", instance)
            return None
        return self.processes.stop(self.name(instance), timeout)

    def running(self) -> list[int]:
        return [n for n in range(1, self.plan["instances"] + 1) if self.is_running(n)]

    def stop_all(self, timeout: float = 30.0) -> dict[str, int | None]:
        """Stop the generator and every instance still running; returns their exit codes."""
        return {name: self.processes.stop(name, timeout) for name in self.processes.names()
                if (name == GENERATOR or name.startswith("instance-")) and self.processes.process(name)}

    def generator_command(self, start_at: float) -> list[str]:
        plan = self.plan
        return python_command(
            "kafka_soak.generator", "--bootstrap", self.cluster.bootstrap_servers, "--topic",
            self.cluster.topics["input"], "--records", str(plan["records"]), "--keys", str(plan["keys"]),
            "--rate", str(plan["rate"]), "--payload-bytes", str(plan["payload_bytes"]), "--seed", str(plan["seed"]),
            "--start-at", str(start_at), "--progress-file", str(self.generator_progress_file))

    @property
    def generator_progress_file(self) -> Path:
        return self.run_dir / "generator.json"

    def start_generator(self, start_at: float, attempt: int) -> ProcessRecord | None:
        if self.processes.process(GENERATOR) is not None:
            log.info("generator already running")
            return self.processes.record(GENERATOR)
        return self.processes.start(GENERATOR, self.generator_command(start_at),
                                    self.run_dir / "logs" / f"generator.{attempt}.log")

    def generator_running(self) -> bool:
        return self.processes.process(GENERATOR) is not None
