"""The app instances of a run: start/stop instance *n* on the run's runtime, and the generator.

Instances run where param ``runtime`` says: ``local`` processes or ``docker`` containers; the generator is
part of the harness and always a local process. One log per instance per program step
(``logs/<app_id>-<n>.<step>.log``), as in the multi-runner reproduction, so what an instance did between
two toggles can be read on its own.

The app under test is the reference worker unless params ``app_command`` (and, with Docker, ``app_image``)
name another one. Whatever it is, it learns the run from the data contract's environment variables
(``SOAK_BOOTSTRAP_SERVERS``, ``SOAK_INPUT_TOPIC``, ``SOAK_INSTANCE``, …) or from the same names as
``{placeholders}`` in its command.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from kafka_soak import kafka_io
from kafka_soak.backends.cluster import Cluster
from kafka_soak.backends.external import client_settings
from kafka_soak.rundir import journal
from kafka_soak.runtime.docker import DockerContainers
from kafka_soak.runtime.local import LocalProcesses, ProcessRecord, python_command

log = logging.getLogger(__name__)

GENERATOR = "generator"
REFERENCE_IMAGE = "kafka-soak-worker:latest"


def contract(cluster: Cluster, app_id: str, instance: int | str, step: int | str) -> dict[str, str]:
    """What an instance of the app under test needs to know of the run (see ``app_command``)."""
    topics = cluster.topics
    return {"bootstrap_servers": cluster.bootstrap_servers, "app_id": app_id, "instance": str(instance),
            "step": str(step), "input_topic": topics["input"], "output_topic": topics["output"],
            "changelog_topic": topics["changelog"], "assertions_topic": topics["assertions"]}


class Instances:
    def __init__(self, run_dir: Path, cluster: Cluster, plan: dict[str, Any], app_id: str,
                 client_settings: dict[str, Any] | None = None) -> None:
        self.run_dir, self.cluster, self.plan, self.app_id = run_dir, cluster, plan, app_id
        self.client_env = kafka_io.settings_env(client_settings)
        self.processes = LocalProcesses(run_dir)  # the generator, and the instances with runtime=local
        self.runtime: LocalProcesses | DockerContainers = self.processes
        if plan["runtime"] == "docker":
            self.runtime = DockerContainers(run_dir, plan["app_image"] or REFERENCE_IMAGE, plan["app_env"],
                                            plan["docker_url"], plan["docker_conn_id"] or None)

    @classmethod
    def for_run(cls, run_dir: Path, cluster: dict[str, Any], plan: dict[str, Any], app_id: str) -> Instances:
        """From the XComs of ``provision`` and ``check_params``, with the cluster's security settings."""
        return cls(run_dir, Cluster(**cluster), plan, app_id, client_settings(cluster))

    @staticmethod
    def name(instance: int) -> str:
        return f"instance-{instance}"

    def worker_args(self, instance: int, step: int | str) -> list[str]:
        """The reference worker's arguments for this run."""
        plan = self.plan
        values = contract(self.cluster, self.app_id, instance, step)
        return ["--bootstrap", values["bootstrap_servers"], "--app-id", self.app_id, "--instance", str(instance),
                "--step", str(step), "--input-topic", values["input_topic"], "--output-topic", values["output_topic"],
                "--changelog-topic", values["changelog_topic"], "--assertions-topic", values["assertions_topic"],
                "--standbys", str(plan["standbys"]), "--cache-entries", str(plan["cache_entries"]),
                "--bug", plan["bug"], "--bug-every", str(plan["bug_every"])]

    def command(self, instance: int, step: int | str) -> list[str]:
        """``app_command`` with its placeholders filled, or the reference worker (the image's entrypoint
        with Docker, this interpreter locally)."""
        if self.plan["app_command"]:
            values = contract(self.cluster, self.app_id, instance, step)
            return [part.format_map(values) for part in self.plan["app_command"]]
        if self.plan["runtime"] == "docker":
            return self.worker_args(instance, step)
        return python_command("kafka_soak.app.worker", *self.worker_args(instance, step))

    def environment(self, instance: int, step: int | str) -> dict[str, str]:
        """The contract as ``SOAK_*`` variables, plus the client's security settings (never on a command line)."""
        values = contract(self.cluster, self.app_id, instance, step)
        return {**{f"SOAK_{k.upper()}": v for k, v in values.items()}, **self.client_env}

    def is_running(self, instance: int) -> bool:
        return self.runtime.is_alive(self.name(instance))

    def start(self, instance: int, step: int | str) -> ProcessRecord | None:
        """Start ``instance`` unless it already runs (a retried step converges)."""
        if self.is_running(instance):
            log.info("instance %d already running", instance)
            return self.runtime.record(self.name(instance))
        log_path = self.run_dir / "logs" / f"{self.app_id}-{instance}.{step}.log"
        record = self.runtime.start(self.name(instance), self.command(instance, step), log_path, step=str(step),
                                    extra_env=self.environment(instance, step))
        journal(self.run_dir, "start", instance=instance, step=str(step), log=log_path.name)
        return record

    def stop(self, instance: int, timeout: float = 30.0) -> int | None:
        if not self.is_running(instance):
            log.info("instance %d already stopped", instance)
            return None
        code = self.runtime.stop(self.name(instance), timeout)
        journal(self.run_dir, "stop", instance=instance, exit_code=code)
        return code

    def kill(self, instance: int) -> int | None:
        code = self.runtime.kill(self.name(instance))
        journal(self.run_dir, "kill", instance=instance, exit_code=code)
        return code

    def pause(self, instance: int) -> bool:
        signalled = self.runtime.pause(self.name(instance))
        journal(self.run_dir, "pause", instance=instance)
        return signalled

    def resume(self, instance: int) -> bool:
        signalled = self.runtime.resume(self.name(instance))
        journal(self.run_dir, "resume", instance=instance)
        return signalled

    def record(self, instance: int) -> ProcessRecord | None:
        return self.runtime.record(self.name(instance))

    def sync_logs(self) -> None:
        """Copy the output of the instances' containers into their step logs (local processes write there)."""
        if isinstance(self.runtime, DockerContainers):
            for name in self.runtime.names():
                self.runtime.copy_log(name)

    def running(self) -> list[int]:
        """Instances alive (paused ones included)."""
        return [n for n in range(1, self.plan["instances"] + 1) if self.is_running(n)]

    def paused(self) -> list[int]:
        return [n for n in self.running() if self.runtime.is_paused(self.name(n))]

    def stop_all(self, timeout: float = 30.0) -> dict[str, int | None]:
        """Stop the generator and every instance still running; returns their exit codes. With Docker, every
        container of the run is then removed (logs copied first), whatever state it is in."""
        runtimes = [self.processes] if self.runtime is self.processes else [self.processes, self.runtime]
        codes = {name: runtime.stop(name, timeout) for runtime in runtimes for name in runtime.names()
                 if (name == GENERATOR or name.startswith("instance-")) and runtime.is_alive(name)}
        for name, code in codes.items():
            if name.startswith("instance-"):
                journal(self.run_dir, "stop", instance=int(name.removeprefix("instance-")), exit_code=code)
        if isinstance(self.runtime, DockerContainers):
            self.runtime.remove_all()
        return codes

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
                                    self.run_dir / "logs" / f"generator.{attempt}.log", extra_env=self.client_env)

    def generator_running(self) -> bool:
        return self.processes.process(GENERATOR) is not None
