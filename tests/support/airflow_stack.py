"""A real Airflow for tests: the components a deployment runs (API server, scheduler, DAG processor, triggerer),
as separate processes on a private AIRFLOW_HOME (SQLite, LocalExecutor), bound to loopback, with a DAG folder of
the test's own and a user that signs in through ``/auth/token``. Each component gets its own process group, so
stopping it also stops what it forked (task and callback runners)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from kafka_soak.backends.docker_kafka import free_port
from support import ROOT

SCENARIO_DAGS = ROOT / "dags" / "soak_scenarios.py"

USER, PASSWORD = "soak", "soak-password"
PROBE_DAG, FAILING_DAG = "soak_overdue_probe", "soak_failing_probe"
# Two DAGs with deadlines from kafka_soak.deadline: one whose task outlives its deadline (0.1 min), one whose runs a
# test marks failed at once through the API, well before their deadline (1 min). Not a task that fails at once: a task's
# start alone took 32 s on a busy machine, so its run could still be running when the deadline passed.
PROBE = f'''
import datetime as dt
import time

from airflow.sdk import DAG, task

from kafka_soak.deadline import overdue_alert

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
DEFAULTS = {{"program": "1", "interval_s": 1}}

with DAG("{PROBE_DAG}", schedule=None, start_date=START, deadline=overdue_alert({{"deadline_minutes": 0.1}}, DEFAULTS, 0)):

    @task
    def outlive_the_deadline():
        time.sleep(30)

    outlive_the_deadline()

with DAG("{FAILING_DAG}", schedule=None, start_date=START, deadline=overdue_alert({{"deadline_minutes": 1}}, DEFAULTS, 0)):

    @task
    def fail_at_once():
        raise RuntimeError("a soak run that fails in time")

    fail_at_once()
'''


class AirflowStack:
    """``scenarios``: soak scenario files (dag_id -> the scenario as the YAML holds it) the DAG folder serves too,
    through the project's own DAG file and factory. ``readers``: users with the viewer role, each limited to the DAGs
    listed for it (``per_dag_auth``)."""

    def __init__(self, base_dir: Path, scenarios: dict[str, dict[str, Any]] | None = None,
                 readers: dict[str, list[str]] | None = None) -> None:
        self.home, self.runs, dags = base_dir / "home", base_dir / "runs", base_dir / "dags"
        self.home.mkdir()
        dags.mkdir()
        (dags / "probe.py").write_text(PROBE)
        if scenarios:
            shutil.copy(SCENARIO_DAGS, dags)
            (dags / "scenarios").mkdir()
            for dag_id, scenario in scenarios.items():
                (dags / "scenarios" / f"{dag_id}.yaml").write_text(json.dumps({"dag_id": dag_id, **scenario}))
        self.passwords = {USER: PASSWORD, **{reader: f"{reader}-password" for reader in readers or {}}}
        (base_dir / "passwords.json").write_text(json.dumps(self.passwords))
        self.base = f"http://127.0.0.1:{free_port()}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_SOAK_ALERT")}
        self.env.update({
            "AIRFLOW_HOME": str(self.home), "AIRFLOW__CORE__DAGS_FOLDER": str(dags), "SOAK_RUNS_DIR": str(self.runs),
            "AIRFLOW__API__HOST": "127.0.0.1", "AIRFLOW__API__PORT": self.base.rsplit(":", 1)[1],
            "AIRFLOW__API__BASE_URL": self.base, "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base}/execution/",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor", "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join([f"{USER}:admin", *(f"{r}:viewer" for r in readers or {})]),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(base_dir / "passwords.json")})
        if readers:
            self.env.update({"AIRFLOW__CORE__AUTH_MANAGER": "per_dag_auth.PerDagAuthManager",
                             "SOAK_TEST_DAG_GRANTS": json.dumps(readers),
                             "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), self.env.get("PYTHONPATH", "")])})
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> AirflowStack:
        self.run("db", "migrate")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run(self, *args: str) -> None:
        """A one-shot Airflow command (e.g. ``dags reserialize``) on this stack's home."""
        subprocess.run(["airflow", *args], env=self.env, check=True, capture_output=True, timeout=180)

    def start(self, *components: str) -> None:
        for component in components:
            log = (self.home / f"{component}.log").open("w")
            self.procs.append(subprocess.Popen(["airflow", component], env=self.env, stdout=log,
                                               stderr=subprocess.STDOUT, start_new_session=True))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.home.glob("*.log")))

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float) -> Any:
        """Poll ``check`` until it returns something truthy; fail with the components' logs after ``timeout`` s."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if result := check():
                    return result
            except httpx.TransportError:
                pass
            time.sleep(1)
        pytest.fail(f"{what}: not within {timeout:.0f} s\n{self.logs()}")

    def token(self, user: str = USER) -> str:
        """A JWT for a user of the stack (the admin by default), once the API server answers."""
        client = httpx.Client(base_url=self.base, timeout=10)
        return self.wait_for("the API server issues a token", lambda: client.post(
            "/auth/token", json={"username": user, "password": self.passwords[user]}).json().get("access_token"), 120)

    def api(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=10, headers={"Authorization": f"Bearer {token}"})

    def trigger(self, api: httpx.Client, dag_id: str = PROBE_DAG, conf: dict[str, Any] | None = None) -> str:
        """Trigger a DAG once the DAG processor (or ``dags reserialize``) has stored it; its run id."""
        self.wait_for(f"{dag_id} is stored", lambda: api.get(f"/api/v2/dags/{dag_id}").is_success, 120)
        return api.post(f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf or {}}
                        ).json()["dag_run_id"]

    def mark_failed(self, api: httpx.Client, dag_id: str, run_id: str) -> dict[str, Any]:
        """Fail a DAG run as the UI's "Mark as failed" does; the run as the API then shows it."""
        response = api.patch(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}", json={"state": "failed"})
        assert response.is_success, response.text
        return response.json()

    def run_state(self, api: httpx.Client, dag_id: str, run_id: str, timeout: float = 120) -> str:
        """The state the DAG run ends in."""
        def ended() -> str | None:
            state = api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}").json()["state"]
            return state if state in ("success", "failed") else None

        return self.wait_for(f"{dag_id} run {run_id} ends", ended, timeout)
