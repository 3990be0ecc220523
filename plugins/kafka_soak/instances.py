"""The app instances of a run: start/stop instance *n* and the generator on the local runtime.

One log per instance per program step (``logs/<app_id>-<n>.<step>.log``), as in the multi-runner
reproduction, so what an instance did between two toggles can be read on its own.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from kafka_soak.backends.embedded import Cluster, control
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

    def command(self, instance: int, step: int | str) -> list[str]:
        topics, plan = self.cluster.topics, self.plan
        args = ["--bootstrap", self.cluster.bootstrap_servers, "--app-id", self.app_id, "--instance", str(instance),
                "--step", str(step), "--input-topic", topics["input"], "--output-topic", topics["output"],
                "--changelog-topic", topics["changelog"], "--assertions-topic", topics["assertions"],
                "--standbys", str(plan["standbys"]), "--cache-entries", str(plan["cache_entries"]),
                "--bug", plan["bug"], "--bug-every", str(plan["bug_every"])]
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
        return self.processes.start(self.name(instance), self.command(instance, step), log_path)

    def stop(self, instance: int, timeout: float = 30.0) -> int | None:
        if not self.is_running(instance):
            log.info("instance %d already stopped", instance)
            return None
        return self.processes.stop(self.name(instance), timeout)

    def kill(self, instance: int) -> int | None:
        return self.processes.kill(self.name(instance))

    def pause(self, instance: int) -> bool:
        return self.processes.pause(self.name(instance))

    def resume(self, instance: int) -> bool:
        return self.processes.resume(self.name(instance))

    def record(self, instance: int) -> ProcessRecord | None:
        return self.processes.record(self.name(instance))

    def running(self) -> list[int]:
        """Instances alive (paused ones included)."""
        return [n for n in range(1, self.plan["instances"] + 1) if self.is_running(n)]

    def paused(self) -> list[int]:
        return [n for n in self.running() if self.processes.is_paused(self.name(n))]

    def stop_all(self, timeout: float = 30.0) -> dict[str, int | None]:
        """Stop the generator and every instance still running; returns their exit codes."""
        return {name: self.processes.stop(name, timeout) for name in self.processes.names()
                if (name == GENERATOR or name.startswith("instance-")) and self.processes.process(name)}

    def set_broker(self, broker: int, up: bool) -> str:
        """Take a broker of the run's cluster down or bring it back (embedded backend's control)."""
        if not self.cluster.control:
            raise RuntimeError(f"backend {self.cluster.backend} cannot take brokers down or up")
        control(self.cluster.control, {"op": "broker_up" if up else "broker_down", "broker": broker})
        state = "up" if up else "down"
        log.info("broker %d %s", broker, state)
        return state

    def generator_command(self, start_at: float) -> list[str]:
        plan = self.plan
        return python_command(
            "kafka_soak.generator", "--bootstrap", self.cluster.bootstrap_servers, "--topic",
            self.cluster.topics["input"], "--records", str(plan["records"]), "--keys", str(plan["keys"]),
            "--phases", json.dumps(plan["phases"]), "--payload-bytes", str(plan["payload_bytes"]),
            "--seed", str(plan["seed"]), "--start-at", str(start_at), "--steps-dir", str(self.run_dir / "program"),
            "--progress-file", str(self.generator_progress_file))

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
