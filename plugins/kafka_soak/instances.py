"""The app instances of a run: start/stop/kill/pause/resume instance *n* on the run's runtime.

Instances run where param ``runtime`` says: ``local`` processes or ``docker`` containers, both behind the same
``Runtime`` interface (the load generator is the harness's, in ``load.py``). One log per instance per program step
(``logs/<app_id>-<n>.<step>.log``), as in the multi-runner reproduction, so what an instance did between
two toggles can be read on its own.

The app under test is a reference app (param ``app``: the Python worker, or the Kafka Streams app of
``streams_version`` as a JVM) unless params ``app_command`` (and, with Docker, ``app_image``) name another one. Whatever it is, it learns the run from the data contract's environment variables
(``SOAK_BOOTSTRAP_SERVERS``, ``SOAK_INPUT_TOPIC``, ``SOAK_INSTANCE``, …) or from the same names as
``{placeholders}`` in its command.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from kafka_soak import kafka_io
from kafka_soak.app import streams
from kafka_soak.backends.cluster import Cluster
from kafka_soak.backends.external import client_settings
from kafka_soak.rundir import journal
from kafka_soak.runtime import ProcessRecord, Runtime
from kafka_soak.runtime.docker import DockerContainers
from kafka_soak.runtime.local import LocalProcesses, python_command

log = logging.getLogger(__name__)

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
        self.runtime: Runtime = (
            DockerContainers(run_dir, plan["app_image"] or REFERENCE_IMAGE, plan["app_env"], plan["docker_url"],
                             plan["docker_conn_id"] or None) if plan["runtime"] == "docker" else LocalProcesses(run_dir))

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
        """``app_command`` with its placeholders filled, or the reference app: the Kafka Streams app's JVM, or
        the worker (the image's entrypoint with Docker, this interpreter locally)."""
        if self.plan["app_command"]:
            values = contract(self.cluster, self.app_id, instance, step)
            return [part.format_map(values) for part in self.plan["app_command"]]
        if self.plan["app"] == "streams":
            return streams.command(self.plan, self.plan["streams_version"],
                                   self.run_dir / "state" / self.name(instance))
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
        journal(self.run_dir, "start", instance=instance, step=str(step), log=log_path.name, pid=record.pid)
        return record

    def stop(self, instance: int, timeout: float = 30.0) -> int | None:
        if not self.is_running(instance):
            log.info("instance %d already stopped", instance)
            return None
        pid = self.pid(instance)
        code = self.runtime.stop(self.name(instance), timeout)
        journal(self.run_dir, "stop", instance=instance, exit_code=code, pid=pid)
        return code

    def kill(self, instance: int) -> int | None:
        pid = self.pid(instance)
        code = self.runtime.kill(self.name(instance))
        journal(self.run_dir, "kill", instance=instance, exit_code=code, pid=pid)
        return code

    def pid(self, instance: int) -> int | None:
        record = self.runtime.record(self.name(instance))
        return record.pid if record else None

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
        """Bring the instances' output so far into their step logs (containers keep it inside)."""
        self.runtime.collect_logs()

    def running(self) -> list[int]:
        """Instances alive (paused ones included)."""
        return [n for n in range(1, self.plan["instances"] + 1) if self.is_running(n)]

    def paused(self) -> list[int]:
        return [n for n in self.running() if self.runtime.is_paused(self.name(n))]

    def stop_all(self, timeout: float = 30.0) -> dict[str, int | None]:
        """Stop every instance still running; returns their exit codes. Then whatever is left of them (with
        Docker: every container of the run, logs copied first) is removed."""
        codes = {}
        for name in self.runtime.names():
            if name.startswith("instance-") and self.runtime.is_alive(name):
                instance, pid = int(name.removeprefix("instance-")), self.runtime.record(name).pid
                        codes[name] = self.runtime.stop(name, timeout)
                journal(self.run_dir, "stop", instance=instance, exit_code=codes[name], pid=pid)
        self.runtime.clean_up()
        return codes
