"""Known Kafka and Kafka Streams bugs caught as released: each scenario ``bug_kafka_<n>`` runs with its own defaults, an
release beside a fixed one on the same input and program (docs/bugs.md has their measured rates).

Each stays deterministic by timing its fault against what the app did, not against a clock alone: a slow machine
delays an app's start, its join and its processing (in one CI run a JVM took 76 s from its start to starting Kafka
Streams, and the kills of the old clocked programs landed before the apps had done anything), so each program waits (``wN``)
until the instances it needs are at work, and the steps after keep their distances to that moment. What is left to
a clock is bounded by Kafka's own timers, which a slow machine can only make later, never earlier:
- KAFKA-20685 commits every 90 s. The kill lands 30 s or more after the instance got to work (``1 w1 0 k1``): its
  load, all produced in the first 10 s, is processed by then (RocksDB flushes every few hundred records), and its first
  commit is at least 45 s away.
- KAFKA-18943 commits every 120 s. Instance 2 joins once instance 1 is at work, and the kill lands 15 s after instance
  2 is at work (``1 w1 2 w2 k1``), so after the revocation that arms the bug; a minute of margin before the first
  commit that would disarm it is left for slow starts.
- KAFKA-17635 needs no race with the app: instances 1 and 2 at work (``w1 w2``), 2 paused, then a rebalance held open
  by the paused member for its 90 s session, most of the load produced from then on. The kill waits until the
  coordinator says the group is rebalancing (``wr``: the joining instance's join arrived) and comes 10 s later, inside
  the wait as long as the join takes under 60 s.
- KAFKA-20785 needs no race either: its stall waits for the stream thread to reach its commit, whenever a slow machine
  gets it there (during the drain, if the app starts late: the drain leaves it armed), and the brokers abort the
  transaction 10 to 11 s after it began, 14 s before the 25 s stall ends.
- KAFKA-19690 likewise: its broker's stall waits for the next produce into an ongoing transaction, and the abort
  lands 10 to 11 s after the transaction began, 9 s before the 20 s stall ends.
The three clocked runs go at once (``conftest.known_bug_runs``, after building their Kafka Streams versions), and
KAFKA-20785's and KAFKA-19690's once they have applied their programs, so that their clusters never load the machine
inside the others' margins; together they take about one run's time and a half, four to six minutes. The tests that
read them share one pytest-xdist group. KAFKA-16692's scenario is measured by ``make bugs`` only
(``conftest.ONLY_IN_MAKE_BUGS``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.soak_runs import last_alert

from kafka_soak.shared import rundir, stalls

TABLES = ("counts", "sums")
pytestmark = pytest.mark.xdist_group(name="known-bugs")


def by_output(verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The matrix's rows by name (``counts@4.2.1``: each release's tables are judged one by one)."""
    return {row["version"]: row for row in verdict["matrix"]}


def assert_caught(run: SimpleNamespace, affected: str, fixed: str, too_high: bool) -> dict[str, dict[str, Any]]:
    """The run failed on its verdict; the affected release's tables hold too much (``too_high``: inputs counted twice)
    or too little (inputs lost) for some keys, and nothing else is wrong; the fixed one's are exact. Returns the
    matrix's rows."""
    verdict = run.verdict
    assert run.code == 1 and verdict, (run.run_dir / "dags-test.log").read_text()[-3000:]
    rows = by_output(verdict)
    assert verdict["status"] == "failed"
    for table in TABLES:
        assert rows[f"{table}@{fixed}"]["status"] == "passed", rows
        bad = rows[f"{table}@{affected}"]
        assert bad["status"] == "failed" and {k for k, v in bad["anomalies"].items() if v} == {"wrong_aggregate"}, rows
    samples = [s for s in verdict["samples"]["wrong_aggregate"] if s["version"].endswith(f"@{affected}")]
    assert samples and all((Decimal(s["found"]) > Decimal(s["expected"])) == too_high for s in samples), samples
    return rows


def assert_unhealthy(run: SimpleNamespace, affected: str, control: str, records: int) -> None:
    """The run failed on its verdict: on the ``affected`` cluster the app's health alone, every one of ``records``
    inputs output once all the same; the ``control`` cluster passed."""
    verdict = run.verdict
    assert run.code == 1 and verdict, (run.run_dir / "dags-test.log").read_text()[-3000:]
    rows = by_output(verdict)
    assert verdict["status"] == "failed" and rows[control]["status"] == "passed", rows
    bad = rows[affected]
    assert {k for k, v in bad["anomalies"].items() if v} == {"app_health"}, bad
    assert bad["records"]["output"] == bad["records"]["input"] == records


def assert_stalled_once(run: SimpleNamespace, *versions: str, where: Callable[[Path], Path], thread: str,
                        seconds: int) -> None:
    """The program's one stall was taken, whole, by ``thread`` in the cluster of each release (``where``: its stall
    directory in the release's run directory); else the drain's account says what became of it."""
    for version in versions:
        member = run.run_dir / "brokers" / version
        traces = stalls.traced(where(member))
        assert len(traces) == 1, (version, (member / rundir.DRAIN).read_text())
        assert thread in traces[0]["thread"] and traces[0]["resumed"] - traces[0]["stalled"] >= seconds, traces


def assert_thread_died(run: SimpleNamespace, affected: str, control: str, streams: str, fatal: str,
                       recovered: str) -> None:
    """On the ``affected`` broker release the stream thread died of ``fatal`` (the app's health alone is wrong: its
    replacement processes every record); on the ``control`` release Kafka Streams recovered from ``recovered``; the
    alert's first lines say so."""
    assert_unhealthy(run, affected, control, records=3000)
    health = {v: json.loads((run.run_dir / "brokers" / v / "health.json").read_text()) for v in (affected, control)}
    assert health[affected]["thread_deaths"] == 1 and fatal in health[affected]["exceptions"], health[affected]
    assert health[control]["thread_deaths"] == 0 and recovered in health[control]["exceptions"], health[control]
    details = last_alert(run.runs_dir)["details"]
    assert details[0].startswith(f"Apache Kafka {affected} · Kafka Streams {streams}: failed (app_health="), details
    assert details[1] == f"Apache Kafka {control} · Kafka Streams {streams}: passed", details
    assert any(d.startswith(f"app health: Apache Kafka {affected}: ") and "StreamThread-1 died" in d for d in details)


def app_log(run_dir: Path, dag_id: str, version: str, step: int) -> str:
    return (run_dir / "logs" / f"{dag_id}-app-{version}-1.{step}.log").read_text()


def test_kafka_20685_a_checkpoint_left_while_running_keeps_aborted_writes_on_4_2_1_and_4_2_2_restores(known_bug_runs):
    """"1 w1 0 k1 1": the one instance is killed 30 s after it got to work, every record of the load in its open
    transaction.
    4.2.1's restart finds the checkpoint its state updater wrote and keeps what RocksDB flushed of the aborted
    transaction: those keys are counted twice. 4.2.2 finds none, wipes the store and restores it from the changelog."""
    dag_id = "bug_kafka_20685"
    run = known_bug_runs[dag_id]
    assert_caught(run, "4.2.1", "4.2.2", too_high=True)
    assert "State store totals initialized from checkpoint" in app_log(run.run_dir, dag_id, "4.2.1", 4)
    fixed = app_log(run.run_dir, dag_id, "4.2.2", 4)
    assert "State store totals did not find checkpoint offsets while stores are not empty" in fixed
    assert "initialized from checkpoint" not in fixed
    details = last_alert(run.runs_dir)["details"]
    assert "Kafka Streams 4.2.2: counts: passed" in details, details
    assert any(d.startswith("Kafka Streams 4.2.1: counts: failed (wrong_aggregate=") for d in details), details
    # the version matrix's table in the report and in the history page, where a release that failed stands out
    report = (run.run_dir / "report.html").read_text()
    assert 'id="matrix"' in report and all(f'data-version="{t}@{v}"' in report for t in TABLES for v in ("4.2.1", "4.2.2"))
    history = (run.runs_dir / "history.html").read_text()
    assert 'class="version found" data-version="counts@4.2.1"' in history
    assert 'class="version" data-version="counts@4.2.2"' in history


def test_kafka_18943_a_revocation_commits_a_kept_task_s_output_without_its_offsets_on_3_9_0(known_bug_runs):
    """"1 w1 2 w2 k1 0 1": instance 2 joins and takes idle tasks while instance 1 keeps the busy one, then instance 1
    is killed 15 s after instance 2 got to work, before its own first commit. 3.9.0 committed the busy task's updates
    at the revocation without its input offsets, so its next owner counts that input again; 3.9.1 committed nothing
    and counts every record once."""
    dag_id = "bug_kafka_18943"
    run = known_bug_runs[dag_id]
    rows = assert_caught(run, "3.9.0", "3.9.1", too_high=True)
    assert rows["counts@3.9.1"]["records"]["keys"] == rows["counts@3.9.0"]["records"]["keys"] == 1
    health = json.loads((run.run_dir / "health.json").read_text())
    for version in ("3.9.0", "3.9.1"):
        killed = [e for e in health["instances"][f"1@{version}"]["exits"] if e["signal"] == "SIGKILL"]
        assert [(e["step"], e["expected"], e["by"]) for e in killed] == [("0", True, "kill -9")]


def test_kafka_17635_a_purge_while_a_rebalance_waits_deletes_uncommitted_repartition_records_on_3_9_0(known_bug_runs):
    """Instance 2 paused, instance 3 joins: the rebalance waits for 2's 90 s session while instance 1 goes on
    processing without committing, and 1 is killed in the middle of the wait. 3.9.0 purged the repartition records it
    processed, committed or not: its successor starts past them and they are never counted (counts too low). 3.9.1
    purges only what was committed. What is at stake is the last transaction's repartition records that instance 1
    read once they were committed, before the wait: while load flows there always are some (a commit every 100 ms).
    The kill came 10 s or more after the group's coordinator said it was rebalancing (``wr``), however long that took."""
    dag_id = "bug_kafka_17635"
    run = known_bug_runs[dag_id]
    steps = {step["token"]: step for step in rundir.read_jsonl(run.run_dir / rundir.STEPS)}
    rebalancing, kill = steps["wr"], steps["k1"]
    assert kill["actual_at"] >= rebalancing["actual_at"] + rebalancing["took_s"] + 10 - 0.01, (rebalancing, kill)
    rows = assert_caught(run, "3.9.0", "3.9.1", too_high=False)
    assert rows["counts@3.9.0"]["records"]["input"] == rows["counts@3.9.1"]["records"]["input"] == 20_000
    assert "topology=repartition" in app_log(run.run_dir, dag_id, "3.9.0", 0)


def test_kafka_20785_a_commit_stalled_past_its_timeout_kills_the_stream_thread_on_4_3_1_not_on_4_0_0(known_bug_runs):
    """"1 0 s1@commit:25": the stream thread stalls for 25 s between its transaction's offsets and its EndTxn, while the
    brokers abort the transaction 10 to 11 s after it began. 4.3.1's coordinator takes the late EndTxn(COMMIT) for a
    retry of the abort and answers the fatal InvalidTxnStateException: the thread dies (its replacement processes
    every record, so only the app's health is wrong). 4.0.0 fences the producer, which Kafka Streams recovers from."""
    run = known_bug_runs["bug_kafka_20785"]
    assert_stalled_once(run, "4.3.1", "4.0.0", where=lambda member: member / rundir.STALLS / "instance-1",
                        thread="StreamThread-1", seconds=25)
    assert_thread_died(run, "4.3.1", "4.0.0", streams="4.3.1", fatal="InvalidTxnStateException",
                       recovered="ProducerFencedException")
    coordinator = (run.run_dir / "brokers" / "4.3.1" / "logs" / "kafka-1.log").read_text()
    assert "state is COMPLETE_ABORT, but received transaction marker result to send: COMMIT" in coordinator


def test_kafka_19690_a_produce_held_past_its_transaction_s_abort_kills_the_stream_thread_on_4_1_0_not_on_4_1_1(
        known_bug_runs):
    """"1 0 sb1@append:20": broker 1 holds the stream thread's next produce into its ongoing transaction for 20 s, after
    deciding it needs no verification and before appending it, while the coordinator aborts the transaction (10 to 11 s
    after it began) and appends the marker. 4.1.0 then finds the transaction no longer ongoing and no verification, and
    answers the fatal InvalidTxnStateException: the thread dies (its replacement processes every record). 4.1.1 checks
    the producer's epoch first and answers the recoverable InvalidProducerEpochException."""
    run = known_bug_runs["bug_kafka_19690"]
    assert_stalled_once(run, "4.1.0", "4.1.1", where=lambda member: stalls.broker_dir(member, 1),
                        thread="request-handler", seconds=20)
    assert_thread_died(run, "4.1.0", "4.1.1", streams="4.1.1", fatal="InvalidTxnStateException",
                       recovered="InvalidProducerEpochException")
    assert_a_cluster_of_each_release(run, ["4.1.0", "4.1.1"], records=3000)


def assert_a_cluster_of_each_release(run: SimpleNamespace, versions: list[str], records: int) -> None:
    """A broker version matrix (``kafka_versions``): a cluster of each release, each with its own generator (the same
    seeded input), app instances and checker, every step applied to each at the same planned moment and never before
    it; the report and the history page name each release."""
    top_steps = [json.loads(line) for line in (run.run_dir / "program.jsonl").read_text().splitlines()]
    assert all(sorted(s["members"]) == versions for s in top_steps), top_steps
    pids = set()
    for version in versions:
        member = run.run_dir / "brokers" / version
        assert json.loads((member / "cluster.json").read_text())["kafka_version"] == version
        assert json.loads((member / "generator.json").read_text())["produced"] == records
        steps = [json.loads(line) for line in (member / "program.jsonl").read_text().splitlines()]
        assert [s["planned_at"] for s in steps] == [s["planned_at"] for s in top_steps]
        assert all(s["actual_at"] >= s["planned_at"] for s in steps), "never before its time (how late: bench/toggle.py)"
        pids |= {s["pid"] for s in steps if s.get("pid")}
        assert (member / "report.html").exists() and (member / "data_docs" / "index.html").exists()
    assert len(pids) == len(versions), "instance 1 of each cluster is a process of its own"
    report = (run.run_dir / "report.html").read_text()
    assert all(f'href="brokers/{v}/report.html"' in report and f'data-version="{v}"' in report for v in versions)
    assert all(f'data-version="{v}"' in (run.runs_dir / "history.html").read_text() for v in versions)
