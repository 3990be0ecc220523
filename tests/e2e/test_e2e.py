"""End to end: the scenario DAGs through `airflow dags test` on real Apache Kafka (backend ``local``, started by
each run), real app processes, real Spark and GX.

Each run takes one to two and a half minutes (a short program, then spark-submit), so every scenario
runs its healthy case and its bug switches with a program shortened for CI. The default scenario's healthy run
(on three brokers, through every fault at once: kill -9, pause, a broker killed and restarted, network cuts) and its
drop switch are the two runs of ``conftest.alerted_runs``, which the alert and report tests read as well.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.checks import SECRET, leaked_secret, live_processes
from support.outside_apps import stuck_app_command
from support.soak_runs import (
    ALERTED_RUNS,
    CRASHING_HEALTHY,
    CRASHING_SHORT,
    DAG_ID,
    FAULTS,
    QUOTA_CLIENT,
    QUOTA_SHORT,
    SHORT,
    STALE_SHORT,
    WORKER_REBALANCE_SHORT,
    WORKFLOW_SHORT,
    alerts,
    kafka_jvms,
    last_alert,
    soak,
)
from support.spark_cluster import SparkStandalone

from kafka_soak.clients.reference.worker import CRASH_EXIT_CODE
from kafka_soak.infra import network
from kafka_soak.params import KAFKA_VERSION


@pytest.mark.xdist_group(name=ALERTED_RUNS)
def test_a_healthy_app_passes_through_faults_on_three_brokers_and_every_step_leaves_evidence(alerted_runs):
    """kill -9, pause/resume, a broker of three killed and restarted, an instance's and a broker's network cut and
    healed, a broker and then an instance moved to another release while load flows, and a wait for that instance to
    be at work again: every step is recorded with the PID, the link or the release it acted on, the drain waits out
    the dead member's session, the verdict is conclusive, and nothing of the run's network is left."""
    code, run_dir, verdict = alerted_runs.passed
    assert code == 0, (run_dir / "dags-test.log").read_text()[-3000:]
    assert verdict["status"] == "passed" and set(verdict["anomalies"].values()) == {0}, verdict
    assert verdict["records"]["input"] == verdict["records"]["output"] == SHORT["records"]
    assert verdict["backend"] == {"name": "local"}
    assert (run_dir / "data_docs" / "index.html").exists()
    cluster = json.loads((run_dir / "cluster.json").read_text())
    assert (cluster["backend"], cluster["brokers"], cluster["kafka_version"]) == ("local", 3, FAULTS["kafka_version"])
    steps = [json.loads(line) for line in (run_dir / "program.jsonl").read_text().splitlines()]
    assert [(s["index"], s["token"]) for s in steps] == list(enumerate(FAULTS["program"].split()))
    # in order and never before its time; how late a step fires depends on the machine (b2+ returns once the broker
    # serves, which took 2 to 8 s here): bench/toggle.py measures the jitter, no test bounds it
    assert [s["actual_at"] for s in steps] == sorted(s["actual_at"] for s in steps)
    assert all(s["actual_at"] >= s["planned_at"] for s in steps), [s["jitter_ms"] for s in steps]
    by_token = {}
    for step in steps:
        by_token.setdefault(step["token"], step)  # the first "1" starts instance 1
    assert by_token["k1"]["pid"] == by_token["1"]["pid"] and by_token["k1"]["running_after"] == [2]
    assert by_token["p2"]["paused_after"] == [2] and by_token["r2"]["paused_after"] == []
    assert by_token["b2-"]["broker"] == "down" and by_token["b2+"]["broker"] == "up"
    brokers = cluster["bootstrap_servers"].split(",")  # each at its host's address in the run's network
    assert all(ipaddress.ip_address(b.split(":")[0]) in network.RANGE for b in brokers), brokers
    assert (by_token["n1-"]["link"], len(by_token["n1-"]["peers"])) == ("cut", 3) and by_token["n1-"]["pid"]
    assert by_token["nb2-"]["peers"] == [brokers[0].split(":")[0], brokers[2].split(":")[0]]
    assert by_token["n1+"]["link"] == by_token["nb2+"]["link"] == "healed"
    moved = by_token["b3^4.3.1"]
    assert (moved["broker"], moved["from"], moved["release"]) == ("upgraded", "4.2.2", "4.3.1"), moved
    upgraded = by_token["2^2.16.1"]
    assert (upgraded["exit_code"], upgraded["version"]) == (0, "2.16.1") and upgraded["pid"] != by_token["2"]["pid"]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert {"broker-down", "broker-up"} <= {e["event"] for e in events}
    assert [(e["broker"], e["release"]) for e in events if e["event"] == "broker-upgraded"] == [(3, "4.3.1")]
    assert [(e["instance"], e["version"]) for e in events if e["event"] == "upgrade"] == [(2, "2.16.1")]
    # the last wait ended on the upgraded life's first assignment, not on the life before it
    *_, at_work = [e for e in events if e["event"] == "at-work"]
    assert at_work["instance"] == 2 and at_work["t"] > upgraded["actual_at"] + upgraded["took_s"], at_work
    assert steps[-1]["token"] == "w2" and steps[-1]["waited_s"] >= at_work["waited_s"]
    assert [(e["event"], e.get("instance"), e.get("broker")) for e in events if e["event"].startswith("link-")] == [
        ("link-cut", 1, None), ("link-healed", 1, None), ("link-cut", None, 2), ("link-healed", None, 2)]
    assert network.RunNetwork.load(run_dir) and network.leftovers(run_dir) == [], "released with the brokers"
    lives = {p.name: p.read_text() for p in (run_dir / "logs").glob(f"{DAG_ID}-app-*.log")}
    assert set(lives) == {f"{DAG_ID}-app-{life}.log" for life in ("1.0", "2.1", "1.8", "2.9", "2.17", "2.19")}
    # each life on the release it was started on: 2.14.0 until instance 2's upgrade, 2.16.1 after it
    assert "confluent-kafka 2.14.0," in lives[f"{DAG_ID}-app-2.17.log"], lives[f"{DAG_ID}-app-2.17.log"][-2000:]
    assert "confluent-kafka 2.16.1," in lives[f"{DAG_ID}-app-2.19.log"], lives[f"{DAG_ID}-app-2.19.log"][-2000:]
    assert [p.name for p in sorted((run_dir / "logs").glob("kafka-*.log"))] == ["kafka-1.log", "kafka-2.log",
                                                                                "kafka-3.log"]
    assert "Kafka Server started" in (run_dir / "logs" / "kafka-1.log").read_text()
    drain = json.loads((run_dir / "drain.json").read_text())
    assert drain["status"] == "drained" and "session times out" in drain["grace_reason"]
    report = (run_dir / "report.html").read_text()
    assert "session times out" in report
    # a quota that never binds: set and verified on three brokers, measured, and said to have never bitten
    [quota] = FAULTS["quotas"]
    [used] = verdict["quotas"]
    assert (used["client_id"], used["quota"], used["bit"]) == (quota["client_id"], 10_000_000.0, False), used
    assert used["achieved"] > 0 and used["throttle_ms_max"] == 0 and set(used["per_broker"]) <= {"1", "2", "3"}, used
    assert "(never bit)" in report


def assert_caught_exactly(runs_dir: Path, run: tuple[int, Path, dict | None], anomaly: str, count: int) -> None:
    """A bug switch of the reference worker fails the run with exactly the anomaly it plants, and its alert says so."""
    code, run_dir, verdict = run
    assert code == 1 and verdict["status"] == "failed"
    assert {k: v for k, v in verdict["anomalies"].items() if v} == {anomaly: count}
    alert = next(a for a in alerts(runs_dir) if a["run_dir"] == str(run_dir))
    assert f"{anomaly}={count}" in alert["message"]


@pytest.mark.xdist_group(name=ALERTED_RUNS)
def test_the_drop_switch_loses_exactly_the_records_it_drops(alerted_runs):
    """The worker on KIP-848's consumer rebalance protocol (group_protocol consumer: the brokers assign the partitions,
    each revocation incremental) through "1 2 1": EOS holds, so exactly the dropped records are lost."""
    assert_caught_exactly(alerted_runs.runs_dir, alerted_runs.broken, "lost", SHORT["records"] // 1000)
    run_dir = alerted_runs.broken[1]
    logs = [(run_dir / "logs" / f"{DAG_ID}-app-{n}.{step}.log").read_text() for n, step in ((1, 0), (2, 1))]
    assert all("group_protocol=consumer)" in log for log in logs)


def test_stale_cache_bug_is_caught_and_the_alert_quotes_an_assertion(runs_dir):
    code, run_dir, verdict = soak(runs_dir, "soak_stale_state_standby", app="worker", bug="stale-cache",
                                  **STALE_SHORT)
    assert code == 1 and verdict["status"] == "failed"
    assert verdict["anomalies"]["stale_state"] > 0
    sample = verdict["samples"]["stale_state"][0]
    assert sample["partition"] in (4, 5) and sample["instance"] == 1 and sample["step"] == "0"
    alert = last_alert(runs_dir)
    assert alert["run_dir"] == str(run_dir)
    assert alert["details"][0].startswith(f"!!! BROKEN !!! Expected {sample['expected']} but found {sample['found']} "
                                          f"partition: {sample['partition']}")


def test_reused_ids_of_the_worker_skip_restore_switch_are_counted(runs_dir):
    """soak_id_assignment_rebalance with the reference worker: its skip-restore switch proves the checker counts reused
    ids (the Kafka Streams app's run of this scenario is the version-matrix test; the stale-cache switch's run is the
    stale-state one above, and the checker's count of reused ids has its unit test on small frames)."""
    code, run_dir, verdict = soak(runs_dir, "soak_id_assignment_rebalance", **WORKER_REBALANCE_SHORT,
                                  bug="skip-restore")
    records = verdict["records"]
    assert records["input"] == records["output"] == records["distinct_keys"] == WORKER_REBALANCE_SHORT["records"]
    generator_log = (run_dir / "logs" / "generator.1.log").read_text()
    assert "waiting for step 2 before producing ids 3001..27000" in generator_log
    assert code == 1 and verdict["status"] == "failed" and (reused := verdict["anomalies"]["id_reuse"]) > 0
    assert records["distinct_assigned_ids"] < WORKER_REBALANCE_SHORT["records"]
    alert = last_alert(runs_dir)
    assert alert["run_dir"] == str(run_dir) and f"id_reuse={reused}" in alert["message"]
    assert any(f"expected {records['distinct_keys']} distinct ids but found {records['distinct_assigned_ids']}" in line
               for line in alert["details"])


def test_workers_that_crash_and_are_restarted_lose_and_duplicate_nothing(runs_dir):
    """soak_crashing_workers: every crash leaves a transaction open and is restarted by the runtime; on real Kafka
    the healthy worker passes, and the report's time axis and the app-health counts show each crash and restart."""
    code, run_dir, verdict = soak(runs_dir, "soak_crashing_workers", **CRASHING_HEALTHY)
    assert code == 0 and verdict["status"] == "passed", (run_dir / "dags-test.log").read_text()[-3000:]
    assert verdict["records"]["input"] == verdict["records"]["output"] == CRASHING_HEALTHY["records"]
    health = verdict["health"]
    assert health["injected_crashes"] >= 1 and health["restarts"] >= 1 and health["unexpected_exits"] == 0
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    crashes = [e for e in events if e["event"] == "exit" and e["exit_code"] == CRASH_EXIT_CODE]
    restarts = [e for e in events if e["event"] == "restart"]
    assert len(crashes) == health["injected_crashes"] and len(restarts) == health["restarts"]
    crashed_log = (run_dir / "logs" / crashes[0]["log"]).read_text()
    assert "crashing on purpose" in crashed_log and "supervisor: exited by itself (code 86)" in crashed_log
    report = (run_dir / "report.html").read_text()
    assert "exited by itself (exit code 86)" in report and f"{health['restarts']} restarts" in report


def test_a_revoke_commit_without_offsets_is_caught_as_duplicates(runs_dir):
    """The crashing workers with bug revoke-no-offsets: each revoke commits the open transaction without its offsets,
    so the partitions' next owner outputs those records again."""
    code, run_dir, verdict = soak(runs_dir, "soak_crashing_workers", **CRASHING_SHORT, bug="revoke-no-offsets")
    assert code == 1 and verdict["status"] == "failed"
    assert (duplicated := verdict["anomalies"]["duplicated"]) > 0
    assert verdict["anomalies"]["lost"] == verdict["anomalies"]["unexpected"] == 0
    assert "bug revoke-no-offsets: committing the transaction" in "".join(
        p.read_text() for p in (run_dir / "logs").glob("soak_crashing_workers-app-*.log"))
    alert = last_alert(runs_dir)
    assert alert["run_dir"] == str(run_dir) and f"duplicated={duplicated}" in alert["message"]


def test_kafka_streams_over_a_producer_quota_shows_the_quota_the_throttle_and_its_health(runs_dir):
    """soak_quota_eos: 1 KB of state per record at 32 records/s puts the stream thread's producer slightly over its
    35 000 B/s quota; the verdict carries the quota as verified, what the broker measured and the throttle, beside the
    app-health counts. Kafka Streams 4.3.1 rides the throttle out for this long: data intact, nothing to report."""
    code, run_dir, verdict = soak(runs_dir, "soak_quota_eos", **QUOTA_SHORT)
    assert code == 0 and verdict["status"] == "passed", verdict["anomalies"]
    cluster = json.loads((run_dir / "cluster.json").read_text())
    assert [(q["client_id"], q["producer_byte_rate"]) for q in cluster["quotas"]] == [(QUOTA_CLIENT, 35000.0)]
    [used] = verdict["quotas"]
    assert (used["client_id"], used["quota"], used["bit"]) == (QUOTA_CLIENT, 35000.0, True), used
    assert used["throttle_ms_max"] > 0 and used["achieved"] > 35000 * 0.9
    assert verdict["records"]["input"] == verdict["records"]["output"] == QUOTA_SHORT["records"]
    health = verdict["health"]
    assert health["instances"]["1"]["starts"] == 1 and health["incidents"] == [], health["incidents"]
    log = (run_dir / "logs" / "soak_quota_eos-app-1.0.log").read_text()
    assert "blob-bytes=1024" in log and "Kafka Streams 4.3.1" in log


def test_the_workflow_self_join_rolls_executions_back_and_the_single_writer_does_not(runs_dir):
    """soak_workflow_rollback: the original's KTable self-join and a single writer run side by side on the same input.
    Three parallel tasks per execution: their results meet the self-join's table before it holds the version the
    previous result wrote, so executions go backwards (rolled_back, with the first rollback as a sample); the single
    writer keeps every execution whole, and every execution ends once."""
    code, run_dir, verdict = soak(runs_dir, "soak_workflow_rollback", **WORKFLOW_SHORT)
    table = {row["version"]: row for row in verdict["matrix"]}
    single, joined = table["single-writer"], table["ktable-self-join"]
    records = WORKFLOW_SHORT["records"]
    assert single["status"] == "passed" and not any(single["anomalies"].values()), single
    assert single["records"]["output"] == single["records"]["executions"] == records
    assert joined["status"] == "failed" and joined["anomalies"]["rolled_back"] > 0, joined
    assert set(single["anomalies"]) == set(joined["anomalies"]) == {"lost", "duplicated", "unexpected",
                                                                    "rolled_back", "app_health",
                                                                    "resource_growth", "stalled", "unprocessed"}
    assert code == 1 and verdict["status"] == "failed"
    sample = verdict["samples"]["rolled_back"][0]
    assert sample["version"] == "ktable-self-join" and sample["first_rollback"].startswith("task t"), sample
    details = last_alert(runs_dir)["details"]
    assert "design single-writer: passed" in details
    assert any(d.startswith("design ktable-self-join: failed (") and "rolled_back=" in d for d in details), details
    report = (run_dir / "report.html").read_text()
    assert 'data-version="single-writer"' in report and "design ktable-self-join" in report
    timeline = json.loads((run_dir / "timeline.json").read_text())
    assert timeline["anomalies"]["rolled_back @ktable-self-join"]["events"], timeline["anomalies"].keys()


def test_a_kill_on_kafka_streams_is_conclusive_and_app_health_counts_an_injected_crash(runs_dir):
    """The Kafka Streams app under "1 2 k1 1" on the streams rebalance protocol (group_protocol streams, KIP-1071:
    the brokers list its group as a streams group) with a setting of the run's own (streams_config): the program's
    kill -9 is expected; a crash injected from outside (the test SIGKILLs instance 2 while it runs) is nobody's. The
    data stays intact (EOS), the verdict is conclusive and fails on app_health alone, with the crash named."""
    from kafka_soak.backends import kafka_jars

    groups: list[list[str]] = []

    def crash_instance_2(run_dir: Path) -> None:
        record = run_dir / "processes" / "instance-2.json"
        deadline = time.monotonic() + 300
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        # the app's group as the brokers list it once instance 1 joined (Kafka's kafka-groups: GROUP TYPE PROTOCOL)
        bootstrap = json.loads((run_dir / "cluster.json").read_text())["bootstrap_servers"]
        while not groups and time.monotonic() < deadline:
            output = kafka_jars.run_tool(KAFKA_VERSION, "org.apache.kafka.tools.GroupsCommand",
                                         ["--bootstrap-server", bootstrap, "--list"], timeout=60)
            groups.extend(line.split() for line in output.splitlines() if line.startswith(f"{DAG_ID}-app "))
        time.sleep(4)
        os.kill(json.loads(record.read_text())["pid"], signal.SIGKILL)

    code, run_dir, verdict = soak(runs_dir, app="streams", program="1 2 k1 1", group_protocol="streams",
                                  streams_config={"producer.transaction.timeout.ms": 30000}, during=crash_instance_2)
    assert code == 1 and verdict["status"] == "failed", (run_dir / "dags-test.log").read_text()[-3000:]
    assert [group[:2] for group in groups] == [[f"{DAG_ID}-app", "Streams"]], groups
    assert "config=producer.transaction.timeout.ms=30000;group.protocol=streams" in \
        (run_dir / "logs" / f"{DAG_ID}-app-1.0.log").read_text()
    assert {k for k, v in verdict["anomalies"].items() if v} == {"app_health"}
    assert verdict["records"]["output"] == SHORT["records"]
    health = json.loads((run_dir / "health.json").read_text())
    crashes = [i for i in health["incidents"] if i["kind"] == "unexpected_exit"]
    assert [(c["instance"], "signal SIGKILL" in c["what"]) for c in crashes] == [(2, True)]
    killed = [e for e in health["instances"]["1"]["exits"] if e["signal"] == "SIGKILL"]
    assert [(e["expected"], e["by"]) for e in killed] == [(True, "kill -9")]
    assert health["instances"]["1"]["starts"] == 2
    assert verdict["health"]["unexpected_exits"] == 1
    alert = last_alert(runs_dir)
    assert "app_health=" in alert["message"]
    assert any(d.startswith("app health: instance 2 (started at step 1) exited by itself with signal SIGKILL")
               for d in alert["details"]), alert["details"]


def test_a_drain_that_times_out_says_why_and_the_run_is_still_judged(runs_dir):
    """An app that joins the group and never commits: the task log, the alert and the report name the lag per
    partition, that it did not move, who owns what, and the open transactions; the run is judged on what the app
    committed (nothing): every partition stalled, every record unprocessed, none called lost."""
    # 30 s of drain: who owns what is read at its end, and the stuck app must have joined by then (seconds, on a busy
    # machine, after its start)
    code, run_dir, verdict = soak(runs_dir, program="1", interval_s=3, records=2000, drain_timeout_s=30,
                                  app_command=stuck_app_command())
    assert code == 1 and verdict["status"] == "failed"
    assert {k: v for k, v in verdict["anomalies"].items() if v} == {"stalled": 4, "unprocessed": 2000}, verdict
    drain = json.loads((run_dir / "drain.json").read_text())
    summary = drain["summary"]
    assert drain["status"] == "timed out" and [s["partition"] for s in drain["stalled"]] == [0, 1, 2, 3]
    assert "still lags 2000 records" in summary and "the lag did not move" in summary, summary
    assert f"{DAG_ID}-app-1 owns [0, 1, 2, 3]" in summary, summary
    assert "instances running: [1]" in summary and "open transactions: none" in summary, summary
    alert = last_alert(runs_dir)
    assert alert["message"].startswith(f"soak {DAG_ID} FAILED: stalled=4, unprocessed=2000 (run")
    assert alert["details"][:2] == summary.splitlines()[:2] and alert["details"][1].startswith("stalled: partition(s)")
    report = (run_dir / "report.html").read_text()
    assert "the lag did not move" in report and 'id="drain-timeout"' in report


def test_an_external_secured_cluster_checked_on_a_spark_cluster_keeps_its_password_out_of_everything(
        runs_dir, secured_cluster, scram_connection, tmp_path):
    """backend=external on a SCRAM-SHA-512 cluster from an Airflow connection, judged on a Spark standalone cluster
    (a master and two one-core workers started from the installed pyspark's ``spark-class``, on loopback) that
    ``spark_default`` points at, as a team runs both: provision, program, quotas set and verified with Kafka's tool
    and removed at release, validation on the cluster's executors.

    The worker's duplicate switch is on, so the run is judged and alerted: the verdict counts exactly the records it
    repeats, as on ``local[2]``. The job's Python modules and Spark's Kafka source reach the executors the way a
    cluster user ships them (``--py-files``, ``--jars``): the executors fetch them from the driver, and read the
    secured topics with the connection's settings. The password is in no file of the run (logs, report and the
    Airflow output included), of the Spark cluster (its daemons' logs, each executor's log and files), not in the
    alert and in nothing Airflow stored (XCom, rendered fields)."""
    from kafka_soak.backends import kafka_jars, quotas
    from kafka_soak.shared import java_client

    quota = {"client_id": "{app_id}-1-producer", "producer_byte_rate": 10_000_000}
    with SparkStandalone(tmp_path) as spark:
        run = soak(runs_dir, backend="external", kafka_conn_id=scram_connection, quotas=[quota], bug="duplicate",
                   env=spark.connection())
        state = spark.state()
    code, run_dir, verdict = run
    assert verdict is not None, (run_dir / "dags-test.log").read_text()[-3000:]
    assert_caught_exactly(runs_dir, run, "duplicated", SHORT["records"] // 1000)
    assert verdict["records"]["input"] == SHORT["records"]
    [app] = state["completedapps"]
    assert app["state"] == "FINISHED" and not state["activeapps"], state
    executors = [d for n in (1, 2) for d in spark.work_dir(n).glob(f"{app['id']}/*") if d.is_dir()]
    assert len(executors) == 2, executors  # one on each worker: the app took both workers' cores
    worked = [d for d in executors if "Finished task" in (d / "stderr").read_text()]
    assert worked, "the job's tasks ran in the cluster's executors"
    for executor in worked:
        fetched = {p.name for p in executor.iterdir()}
        assert any(name.startswith("spark-sql-kafka") for name in fetched) and "anomalies.py" in fetched, fetched
    cluster = json.loads((run_dir / "cluster.json").read_text())
    [app_id] = [s["app_id"] for s in cluster["subjects"]]
    assert app_id.startswith(f"{DAG_ID}-app-") and len(app_id) == len(f"{DAG_ID}-app-") + 10, "the run's own on a shared cluster"
    client_id = f"{app_id}-1-producer"  # the quota's {app_id}
    assert cluster["quotas"] == [{"client_id": client_id, "producer_byte_rate": 10_000_000.0, "previous": {}}]
    described = kafka_jars.run_tool(KAFKA_VERSION, kafka_jars.CONFIG_COMMAND, quotas.describe_command(
        client_id, secured_cluster.bootstrap_servers, "/dev/stdin"),
        stdin=java_client.tool_config(secured_cluster.client_settings()))
    assert quotas.parse_describe(described).get(client_id, {}) == {}, "release removes the run's quota"
    assert not leaked_secret(run_dir) and not leaked_secret(tmp_path)
    assert SECRET not in (runs_dir / "alerts.jsonl").read_text()
    stored = list(Path(os.environ["AIRFLOW_HOME"]).glob("airflow.db*"))
    assert stored and not [p for p in stored if SECRET.encode() in p.read_bytes()]


def test_an_interrupted_make_soak_runs_the_teardowns_itself_and_leaves_no_process_behind(runs_dir):
    """SIGTERM (or Ctrl-C) to `make soak` mid-program: no teardown runs under an interrupted `airflow dags test`,
    so the command runs the run's own (the app stopped gracefully and judged, Kafka released with the network its
    program's cut needed), stops anything else the run registered and keeps the evidence. Steps 90 s apart: the run is
    interrupted just after step 0, and no later step may fall in the seconds the command gives Airflow to end (up to
    20 s, then SIGKILL), or the step would start an instance while the run is torn down."""
    env = {**os.environ, "SOAK_RUNS_DIR": str(runs_dir)}
    latest = runs_dir / DAG_ID / "latest"
    before = latest.resolve() if latest.exists() else None
    proc = subprocess.Popen([sys.executable, "-m", "kafka_soak.cli", "soak", DAG_ID, "--conf",
                             json.dumps({**SHORT, "interval_s": 90, "program": "1 n1- n1+"})], env=env,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 600  # only a bound: under a load average of 25, 5 minutes were not enough
        while not (latest.exists() and latest.resolve() != before and (latest / "program" / "step-0.json").exists()):
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not reach its first step"
            time.sleep(0.5)
        run_dir = latest.resolve()
        # Interrupted once instance 1 is at work: a worker still starting (seconds on a busy machine) has no SIGTERM
        # handler yet, and a stop then is not the graceful one asserted below.
        first_life = run_dir / "logs" / f"{DAG_ID}-app-1.0.log"
        while not (first_life.exists() and "assigned partitions" in first_life.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, "instance 1 did not get to work"
            time.sleep(0.5)
        assert kafka_jvms(run_dir), "the run's broker runs while the program does"
    finally:  # on a failed wait too: the command then tears its run down itself (a run left to end with pytest's
        # worker dies with its output's pipe, and leaves its broker and network behind)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=240)
    assert proc.returncode == 130, output[-3000:]
    assert f"interrupted: stopping what the run started ({run_dir})" in output
    assert not live_processes(run_dir) and not kafka_jvms(run_dir)
    assert (run_dir / "dags-test.log").exists() and (run_dir / "logs" / "kafka-1.log").exists()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["exit_code"] for e in events if e["event"] == "stop" and e["instance"] == 1] == [0], \
        "instance 1 is stopped as the teardown stops it, gracefully"
    assert not [e for e in events if e["event"] == "reaped"], "the teardowns left nothing for the reaper"
    assert json.loads((run_dir / "health.json").read_text())["incidents"] == []
    assert network.RunNetwork.load(run_dir) and network.leftovers(run_dir) == [], "its network went with its Kafka"
