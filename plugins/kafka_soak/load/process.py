"""The run's load: the generator as a process of the harness, started at T0, resumed if it dies.

The generator (``kafka_soak.load.generator``) is part of the harness, not of the app under test: whatever runtime the
instances use, it runs as a local process registered with the run's other processes. It writes its progress to
``generator.json``, which the program's countdown and ``await_generator`` read.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends import broker_matrix
from kafka_soak.clients import subjects
from kafka_soak.infra import kafka_io
from kafka_soak.infra.cluster import Cluster
from kafka_soak.infra.connection import client_settings
from kafka_soak.infra.runtime.local import LocalProcesses, python_command
from kafka_soak.infra.runtime.registry import ProcessRecord
from kafka_soak.shared import rundir

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)

GENERATOR = "generator"
RESTARTS = 2  # a generator that dies is started again this often; it resumes without duplicating an id


class LoadFailed(RuntimeError):
    """The load did not finish: it took longer than its program and phases may, or the generator kept dying."""


class Load:
    def __init__(self, run_dir: Path, cluster: dict[str, Any], plan: Plan) -> None:
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
            "kafka_soak.load.generator", "--bootstrap", self.cluster.bootstrap_servers, "--topic",
            self.cluster.topics["input"], "--records", str(plan["records"]), "--keys", str(plan["keys"]),
            "--phases", json.dumps(plan["phases"]), "--payload-bytes", str(plan["payload_bytes"]),
            "--seed", str(plan["seed"]), "--start-at", str(start_at), "--steps-dir", str(self.run_dir / "program"),
            "--progress-file", str(self.progress_file), *self.input_format())

    def input_format(self) -> list[str]:
        """The generator's arguments for the app's input: its key template and value encoding."""
        app = subjects.profile(self.plan)
        return ["--key-template", app.input.key, "--value", json.dumps(app.input.value)]

    def start(self, start_at: float, attempt: int) -> ProcessRecord | None:
        """Start (or, after a crash, resume) producing from ``start_at``; the cluster's security settings travel
        in the environment only."""
        if self.running():
            log.info("generator already running")
            return self.processes.record(GENERATOR)
        with rundir.starting(self.run_dir, "the generator"):
            return self.processes.start(GENERATOR, self.command(start_at),
                                        self.run_dir / rundir.LOGS / f"generator.{attempt}.log",
                                        extra_env=kafka_io.settings_env(client_settings(self.cluster)))

    def expected_s(self) -> float:
        """The longest the load may take from the program's start: the program, then each phase at its rate (a
        full-speed phase at a floor of 200 records/s), plus a grace for a slow machine and a restart."""
        phases = self.plan["phases"]
        producing = sum(p["records"] / (p["rate"] or 200.0) for p in phases)
        return self.plan["program_s"] + producing + 300.0

    def running(self) -> bool:
        return self.processes.is_alive(GENERATOR)

    def stop(self, timeout: float = 30.0) -> int | None:
        return self.processes.stop(GENERATOR, timeout) if self.running() else None

    def await_done(self, poll_s: float = 2.0) -> dict[str, Any]:
        """Wait for the generator to produce all its records, reporting progress; restart it if it died (it resumes
        without duplicating an id). Its final report, or ``LoadFailed``."""
        attempt, allowed_s = 1, self.expected_s()
        deadline = rundir.read_t0(self.run_dir) + allowed_s
        while True:
            alive = self.running()  # before the report: a generator writes "done" before it exits
            state = self.progress()
            if state.get("done"):
                log.info("generator done: %d records, %.0f records/s", state["produced"], state["rate_per_s"])
                return state
            if time.time() > deadline:
                self.stop()
                raise LoadFailed(f"the generator produced {state.get('produced', 0)} of {self.plan['records']} records "
                                 f"in {allowed_s:.0f} s, as long as its program and load may take; stopped it. Its "
                                 f"log: {self.run_dir / rundir.LOGS}")
            if not alive:
                attempt += 1
                if attempt > 1 + RESTARTS:
                    raise LoadFailed(f"the generator stopped before producing {self.plan['records']} records "
                                     f"{attempt - 1} times; see {self.run_dir / rundir.LOGS}")
                log.warning("generator not running and not done (%s): restarting it to resume", state or "no progress")
                self.start(start_at=rundir.read_t0(self.run_dir), attempt=attempt)
            elif state:
                log.info("generator: %d/%d records, %.0f records/s", state["produced"], state["records"],
                         state["rate_per_s"])
            time.sleep(poll_s)


def start_loads(run_dir: Path, plan: Plan, cluster: dict[str, Any], start_at: float, attempt: int) -> None:
    """Task ``start_generator``: the run's generator, or one per cluster of a broker version matrix, all from T0."""
    broker_matrix.on_each(run_dir, plan,
                          lambda m: Load(m.dir, m.cluster(cluster), m.plan).start(start_at=start_at, attempt=attempt),
                          alone="the generator's start")


def await_loads(run_dir: Path, plan: Plan, cluster: dict[str, Any]) -> dict[str, Any]:
    """Task ``await_generator``: ``Load.await_done`` of the run's generator, or of each cluster's."""
    return broker_matrix.on_each(run_dir, plan, lambda m: Load(m.dir, m.cluster(cluster), m.plan).await_done(),
                                 alone="the generator")
