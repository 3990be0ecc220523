"""Scenario DAG runs for the end-to-end tests: ``airflow dags test`` in a subprocess with a private runs directory,
programs shortened for CI, and what a run must leave behind (no process, no Kafka JVM)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import psutil

from kafka_soak.cli import as_owner
from kafka_soak.clients.reference import worker
from kafka_soak.factory import ONLY_ENV
from support.checks import live_processes
from support.waits import until

DAG_ID = "soak_eos_id_assignment"
SHORT = {"program": "1 2 1", "interval_s": 6, "records": 6000, "keys": 300, "partitions": 4}
# soak_stale_state_standby with its default program and 15 s steps on 12 partitions: after "1 2 3" instance 1 owns
# 0-3 and keeps standby replicas of 4-11; stopping 2 hands 4-5 back to it. The stale reads need instance 2 to own
# 4-5 for a while under load first: on a busy machine an instance takes seconds to join, and 8 s steps left it less
# than one. One steady phase at 130 records/s (69 s) flows through every ownership and 24 s past the last stop. A
# Kafka Streams instance that closes keeps its partitions for a session: 6 s (Kafka's minimum), not 45 s of drain.
STALE_SHORT = {"interval_s": 15, "records": 9000, "keys": 600, "partitions": 12, "rate": 130,
               "session_timeout_ms": 6000}
# soak_stale_state_standby on runtime and backend docker, where the containers are the point, not the stale reads: the
# same ownership moves in 10 s steps, 4 000 records at 100 records/s through them.
DOCKER_STALE = {**STALE_SHORT, "interval_s": 10, "records": 4000, "rate": 100}
# soak_id_assignment_rebalance with the reference worker and its bug switches, on the original report's 2 partitions:
# with "1 2 w2 2" the second phase begins once instance 2 is at work (it then owns partition 1 and assigns ids to its
# records for a step, however long its start took) and still flows when instance 2 stops and partition 1 goes back to
# instance 1, its standby.
WORKER_REBALANCE_SHORT = {"app": "worker", "program": "1 2 w2 2", "partitions": 2, "interval_s": 8, "records": 27000,
                          "keys": 27000, "phases": [{"records": 3000, "at_s": 0},
                                                    {"records": 24000, "after_step": 2, "rate": 2000}]}
# The default scenario's healthy run: kill -9, pause/resume and a broker of three killed and restarted while load flows,
# with a quota that never binds; a 6 s session (Kafka's minimum) so the drain waits out the killed member quickly.
# Instance 2 is paused for a step, resumed, and stopped before broker 2 goes down: a pause that spanned the outage
# outlived the worker's 30 s transaction timeout whenever ``b2+`` (which returns once the broker serves) took long
# (43 s on a loaded machine, and the coordinator's abort fenced the instance). No instance runs while the broker is
# down, and both start once it serves again: an instance that sends offsets while the group's coordinator is down can
# hang in librdkafka (#5456, #5511) when that broker was the coordinator, which is not known before the run; the
# reference app ends the hang by exiting (code 70), and app health fails the run. A healthy run must pass every time.
# Then instance 1's network to the brokers is cut for a step, and broker 2's to the other brokers (each host in a
# network namespace of its own): shorter than the worker's transaction timeout (30 s), so the cut member is rebalanced
# away and back at most.
# Last, the two steps of a rolling upgrade: broker 3 moves from 4.2.2 to 4.3.1 on its own data, with no instance
# running for the same reason as above (broker 3 was the group's coordinator in one run, and instance 2 hung in
# librdkafka through its stop), then instance 2, started again and at work (``w2``), from confluent-kafka 2.14.0, the
# release every instance starts on, to 2.16.1 (the drain runs on the mixed cluster, with the app on both releases), and
# the program waits until the moved instance got to work again (``w2``).
FAULTS = {"brokers": 3, "program": "1 2 k1 p2 r2 2 b2- b2+ 1 2 n1- n1+ nb2- nb2+ 1 2 b3^4.3.1 2 w2 2^2.16.1 w2",
          "session_timeout_ms": 6000, "kafka_version": "4.2.2", "worker_versions": ["2.14.0"],
          "quotas": [{"client_id": f"{DAG_ID}-app-2-producer", "producer_byte_rate": 10_000_000}]}
# The pytest-xdist group of the tests that read the ``alerted_runs`` fixture's two runs (one worker runs them once).
ALERTED_RUNS = "alerted-runs"
# soak_crashing_workers shortened: 4 000 records at 125 records/s through "1 2 3 1", whose steps 1-3 revoke partitions
# from running workers five times (1; 1 and 2; 2 and 3), each with about a second of records in its open transaction.
# crash_probability 0.0005 crashes a worker about twice: more, and every rebalance's backlog (the records that came in
# while the group waited for a crashed member's session to end) crashes the workers it lands on before they commit,
# until none survives to be revoked (seen with 0.0015: 18 crashes, no revoke in the run).
CRASHING_SHORT = {"program": "1 2 3 1", "interval_s": 8, "records": 4000, "keys": 400, "rate": 125,
                  "crash_probability": 0.0005}


def first_crash(seed: int, probability: float, instance: int = 1, step: str = "0", restart: int = 0) -> int:
    """After how many records the reference worker's ``instance``, started at ``step``, crashes first."""
    draws = worker.chaos(seed, instance, step, restart)
    return next(n for n in itertools.count(1) if draws.random() < probability)


# soak_crashing_workers' healthy case: three workers throughout ("1 2 3 0"), 6 000 records at 190 records/s, about five
# crashes. Its seed is the first whose instance 1 crashes within its first 300 records, while it is alone with 1 500:
# one crash at least is certain (drawn at random, about 7 runs in 1 000 had none). A lone worker is no place for more
# crashes: the default scenario's "1 2 1" with 0.001 left one worker that its backlog crashed at every restart until
# the drain timed out.
CRASHING_HEALTHY = {**CRASHING_SHORT, "program": "1 2 3 0", "records": 6000, "rate": 190, "crash_probability": 0.0008}
CRASHING_HEALTHY["seed"] = next(seed for seed in itertools.count()
                                if first_crash(seed, CRASHING_HEALTHY["crash_probability"]) <= 300)
# soak_quota_eos shortened to one version and 30 s of load at the scenario's 32 records/s, from when the app is at work
# (``w1``; a JVM that starts late would otherwise meet a backlog, and its first transactions would be larger than the
# quota lets through within Kafka Streams' 10 s transaction timeout); its quota's {app_id} is then the scenario's one
# application id.
QUOTA_CLIENT = "soak_quota_eos-app-1-StreamThread-1-producer"
QUOTA_SHORT = {"streams_versions": [], "streams_version": "4.3.1", "program": "1 w1", "interval_s": 15,
               "records": 960, "phases": [{"records": 960, "after_step": 1, "rate": 32}]}

# soak_workflow_rollback shortened: its two designs side by side, one instance each, 20 s of load at 20 records/s.
WORKFLOW_SHORT = {"program": "1 0", "interval_s": 10, "records": 400, "rate": 20, "partitions": 2}


# A team's own app (tests/apps, profiles in outside_apps) through start, start, kill -9 and restart. Not ``1 2 w1 k1 1``:
# ``wN`` knows an app is at work by the lines Kafka Streams and the reference worker write, which a team's app need not.
# Instance 1 is killed once it is at work (``w1``: its own line, the reference apps' or a team profile's ``ready``).
CHURN_AND_KILL = {"program": "1 2 w1 k1 1", "interval_s": 6, "records": 6000, "keys": 300}


def soak(runs_dir: Path, dag_id: str = DAG_ID, during: Callable[[Path], None] | None = None,
         env: dict[str, str] | None = None, **conf) -> tuple[int, Path, dict | None]:
    """Run a scenario DAG once; returns (airflow exit code, run directory, verdict or None). ``during(run_dir)``
    is called with this run's directory once it appears, while the run goes on (to do something to it from
    outside); ``env`` adds to the run's environment (connections, Airflow settings)."""
    base = SHORT if dag_id == DAG_ID else {}
    env, conf = as_owner({**base, **conf}, {**os.environ, **(env or {}), "SOAK_RUNS_DIR": str(runs_dir),
                                            ONLY_ENV: dag_id})
    runs_dir.mkdir(parents=True, exist_ok=True)
    earlier = run_dirs(runs_dir / dag_id)
    output = runs_dir / f".{dag_id}.dags-test.log"  # a file, not a pipe: nobody reads it while ``during`` runs
    with output.open("w") as out:
        proc = subprocess.Popen(["airflow", "dags", "test", dag_id, "-c", json.dumps(conf)], env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        if during is not None:
            during(new_run_dir(runs_dir / dag_id, earlier))
        proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run_dir = (runs_dir / dag_id / "latest").resolve()
    output.replace(run_dir / "dags-test.log")
    verdict_path = run_dir / "verdict.json"
    verdict = json.loads(verdict_path.read_text()) if verdict_path.exists() else None
    assert not live_processes(run_dir), "brokers, generator and instances must be stopped after the run"
    assert not kafka_jvms(run_dir), "no Kafka JVM of the run may outlive it"
    return proc.returncode, run_dir, verdict


def run_dirs(dag_dir: Path) -> set[Path]:
    return {p for p in dag_dir.iterdir() if p.is_dir() and not p.is_symlink()} if dag_dir.exists() else set()


def new_run_dir(dag_dir: Path, earlier: set[Path], timeout_s: float = 300) -> Path:
    """The run directory that was not there before (``latest`` may still point at the previous run)."""
    return until(lambda: run_dirs(dag_dir) - earlier, f"new run directory in {dag_dir}", timeout_s, every_s=0.2).pop()


def kafka_jvms(run_dir: Path) -> list[int]:
    """Processes whose command line names a file of this run (a broker's server.properties)."""
    return [p.pid for p in psutil.process_iter(["cmdline"]) if any(str(run_dir) in part for part in p.info["cmdline"] or [])]


def alerts(runs_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (runs_dir / "alerts.jsonl").read_text().splitlines()]


def last_alert(runs_dir: Path) -> dict:
    return alerts(runs_dir)[-1]
