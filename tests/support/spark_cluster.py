"""A real Spark standalone cluster for tests: a master and workers started from the installed pyspark's
``spark-class``, as a team would start one, bound to loopback. Each runs in its own process group, so stopping a
worker also stops the executors it launched."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from kafka_soak.backends.docker_kafka import free_port

SPARK_HOME = Path(importlib.util.find_spec("pyspark").submodule_search_locations[0])


class SparkStandalone:
    """``workers`` workers of one core and 1 GiB each (an executor's default memory), their work directories under
    ``base_dir``, where each executor's log and the files the driver shipped to it stay after the cluster stops."""

    def __init__(self, base_dir: Path, workers: int = 2) -> None:
        self.base_dir, self.workers = base_dir, workers
        self.port, self.ui_port = free_port(), free_port()
        self.master = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
                    "SPARK_LOG_DIR": str(base_dir / "logs")}

    def __enter__(self) -> SparkStandalone:
        try:
            self.start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                       "--port", str(self.port), "--webui-port", str(self.ui_port))
            for n in range(1, self.workers + 1):
                self.start(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                           "--webui-port", str(free_port()), "--cores", "1", "--memory", "1g",
                           "--work-dir", str(self.work_dir(n)), self.master)
            self.wait_until(lambda state: sum(w["state"] == "ALIVE" for w in state["workers"]) == self.workers,
                            f"{self.workers} workers registered with the master")
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, name: str, main_class: str, *args: str) -> None:
        log = self.base_dir / f"{name}.log"
        with log.open("w") as out:
            self.procs.append(subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), main_class, *args],
                                               env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                               start_new_session=True))

    def work_dir(self, worker: int) -> Path:
        return self.base_dir / f"worker-{worker}"

    def state(self) -> dict[str, Any]:
        """The master's own account of the cluster (its web UI's JSON): workers, running and completed apps. An error
        status raises ``httpx.HTTPStatusError``: while the master starts, its UI answers 404 before its JSON page is
        mounted."""
        return httpx.get(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5).raise_for_status().json()

    def connection(self) -> dict[str, str]:
        """The environment that points Airflow's ``spark_default`` connection at this cluster."""
        host, port = self.master.rsplit(":", 1)
        return {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": host, "port": int(port)})}

    def wait_until(self, ready: Callable[[dict[str, Any]], bool], what: str, timeout_s: float = 120) -> None:
        """Poll the master's state until ``ready``; fails at once if a Spark process of the cluster exited."""
        deadline = time.monotonic() + timeout_s
        while True:
            for proc in self.procs:
                assert proc.poll() is None, f"a Spark process exited ({proc.args[1]}); see {self.base_dir}"
            try:
                if ready(self.state()):
                    return
            except httpx.HTTPError:
                pass  # the master's UI is not up yet, or not its JSON page
            assert time.monotonic() < deadline, f"no {what} after {timeout_s:.0f} s; see {self.base_dir}"
            time.sleep(0.5)

    def stop(self) -> None:
        """Workers first (each stops its executors), then the master; SIGKILL for what outlives 30 s."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
