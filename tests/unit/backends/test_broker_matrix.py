"""The broker version matrix's own logic: its members, running a task's work on each (``backends.broker_matrix``), and
combining their verdicts (``checker.matrix``). The end-to-end run on two real clusters is in e2e/test_e2e.py."""

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest

from kafka_soak import run_plan
from kafka_soak.backends import broker_matrix
from kafka_soak.backends.broker_matrix import ClusterMember
from kafka_soak.checker import matrix
from kafka_soak.shared import rundir


def test_a_run_of_one_cluster_is_its_only_member_and_a_matrix_has_one_directory_and_plan_per_release(tmp_path):
    plan = run_plan.check({})
    [only] = broker_matrix.members(tmp_path, plan)
    assert (only.name, only.dir, only.plan) == ("", tmp_path, plan)
    matrix = run_plan.check({"kafka_versions": ["4.1.1", "4.3.1"]})
    members = broker_matrix.members(tmp_path, matrix)
    assert [(m.name, m.dir, m.plan["kafka_version"], m.plan["kafka_versions"]) for m in members] == [
        ("4.1.1", tmp_path / "brokers" / "4.1.1", "4.1.1", []), ("4.3.1", tmp_path / "brokers" / "4.3.1", "4.3.1", [])]
    provisioned = {"members": {"4.1.1": {"bootstrap_servers": "a"}, "4.3.1": {"bootstrap_servers": "b"}}}
    assert [m.cluster(provisioned)["bootstrap_servers"] for m in members] == ["a", "b"]
    assert only.cluster({"bootstrap_servers": "c"}) == {"bootstrap_servers": "c"}


def test_each_member_runs_to_its_end_and_a_failure_names_its_release_with_the_others_results_kept(tmp_path):
    members = [ClusterMember(v, tmp_path / v, {}) for v in ("4.0.0", "4.3.1")]

    def work(member: ClusterMember) -> str:
        if member.name == "4.0.0":
            raise RuntimeError("its broker did not start")
        return f"done on {member.name}"

    with pytest.raises(broker_matrix.MemberFailed) as failed:
        broker_matrix.each(members, work)
    assert str(failed.value) == "Apache Kafka 4.0.0: its broker did not start"
    assert failed.value.results == {"4.3.1": "done on 4.3.1"}
    assert broker_matrix.single_or_all(broker_matrix.each(members[1:], work)) == {"4.3.1": "done on 4.3.1"}
    only = ClusterMember("", tmp_path, {})
    assert broker_matrix.single_or_all(broker_matrix.each([only], lambda m: "one")) == "one"


def test_each_member_s_log_lines_carry_its_release_even_from_the_threads_its_work_starts(tmp_path, caplog):
    log = logging.getLogger("kafka_soak.test")

    def work(member: ClusterMember) -> None:
        log.info("own line")
        with ThreadPoolExecutor(1) as pool:
            pool.submit(broker_matrix.carry(lambda: log.info("nested line"))).result()

    with caplog.at_level(logging.INFO, logger="kafka_soak.test"):
        broker_matrix.each([ClusterMember(v, tmp_path / v, {}) for v in ("4.1.1", "4.3.1")], work)
        log.info("after")
    assert sorted(r.getMessage() for r in caplog.records) == [
        "[Apache Kafka 4.1.1] nested line", "[Apache Kafka 4.1.1] own line", "[Apache Kafka 4.3.1] nested line",
        "[Apache Kafka 4.3.1] own line", "after"]


def verdict(status: str, label: str, anomalies: dict[str, int], **extra) -> dict:
    return {"status": status, "label": label, "anomalies": anomalies, "samples": {}, "expectations": [],
            "inconclusive_reasons": [], "records": {"input": 100, "output": 100, "expected_input": 100},
            "topics": {"output": "o"}, "data_docs": "docs/index.html", **extra}


def health(what: str, deaths: int) -> dict:
    return {"instances": {"1": {"exits": []}}, "exceptions": {"InvalidTxnStateException": {"count": deaths}},
            "incidents": [{"what": what, "kind": "thread_death"}] * deaths, "allowance": 0, "thread_deaths": deaths,
            "restarts": 0, "unexpected_exits": 0, "errors": deaths, "injected_crashes": 0}


def test_the_matrix_verdict_has_a_row_per_broker_and_app_pair_and_a_member_without_a_verdict_is_inconclusive(
        tmp_path):
    plan = run_plan.check({"kafka_versions": ["4.0.0", "4.1.1", "4.3.1"]})
    old, fixed, lost = broker_matrix.members(tmp_path, plan)
    old.dir.mkdir(parents=True)
    rundir.write_json(old.dir / rundir.VERDICT,
                      {**verdict("failed", "", {"lost": 3}), "matrix": [
                          {"version": "3.9.0", "dir": "subjects/3.9.0"}, {"version": "4.3.1", "dir": "subjects/4.3.1"}]})
    for name, status, count in (("3.9.0", "failed", 3), ("4.3.1", "passed", 0)):
        (old.dir / "subjects" / name).mkdir(parents=True)
        rundir.write_json(old.dir / "subjects" / name / rundir.VERDICT,
                          verdict(status, f"Kafka Streams {name}", {"lost": count}))
    rundir.write_json(old.dir / rundir.HEALTH, health("instance 1: stream thread died", 2))
    rundir.write_json(old.dir / rundir.QUOTAS, [{"client_id": "app-1-producer", "setting": "producer_byte_rate"}])
    fixed.dir.mkdir(parents=True)
    rundir.write_json(fixed.dir / rundir.VERDICT, verdict("passed", "the app", {"lost": 0}))
    rundir.write_json(fixed.dir / rundir.HEALTH, health("", 0))

    combined = matrix.combine(tmp_path, [old, fixed, lost],
                                     {"4.3.1": matrix.submit_failure("Cannot execute: spark-submit --master "
                                                                            "local[2] ... Error code is: 1.")})
    rows = {row["version"]: row for row in combined["matrix"]}
    assert {v: (r["label"], r["status"], r["anomalies"].get("lost")) for v, r in rows.items()} == {
        "4.0.0/3.9.0": ("Apache Kafka 4.0.0 · Kafka Streams 3.9.0", "failed", 3),
        "4.0.0/4.3.1": ("Apache Kafka 4.0.0 · Kafka Streams 4.3.1", "passed", 0),
        "4.1.1": ("Apache Kafka 4.1.1 · the app", "passed", 0),
        "4.3.1": ("Apache Kafka 4.3.1 · the app", "inconclusive", None)}
    assert rows["4.0.0/3.9.0"]["dir"] == "brokers/4.0.0/subjects/3.9.0"
    assert rows["4.0.0/3.9.0"]["report"] == "brokers/4.0.0/report.html" and rows["4.1.1"]["dir"] == "brokers/4.1.1"
    assert combined["status"] == "failed" and combined["anomalies"]["lost"] == 3
    assert combined["inconclusive_reasons"] == [
        "4.3.1: no verdict: the checker's spark-submit exited with code 1 (see the validate task's log)"]
    assert combined["health"]["thread_deaths"] == 2
    assert combined["health"]["exceptions"]["InvalidTxnStateException"]["count"] == 2
    assert combined["health"]["incidents"][0]["what"] == "Apache Kafka 4.0.0: instance 1: stream thread died"
    assert set(combined["health"]["instances"]) == {"1/4.0.0", "1/4.1.1"}
    assert combined["quotas"] == [{"client_id": "app-1-producer", "setting": "producer_byte_rate",
                                   "cluster": "Apache Kafka 4.0.0"}]


def test_work_that_may_fail_on_one_cluster_alone_leaves_the_others_going_and_their_verdicts_standing(tmp_path):
    """The drain, the generator and a program step of a matrix: one cluster's failure is noted in its evidence and
    the others' results come back; that cluster's verdict is at best inconclusive, saying what failed, and the
    others keep theirs. Only a failure on every cluster fails the task."""
    plan = run_plan.check({"kafka_versions": ["4.1.1", "4.3.1"]})
    broken, healthy = broker_matrix.members(tmp_path, plan)
    for m in (broken, healthy):
        m.dir.mkdir(parents=True)

    def drain(member: ClusterMember) -> str:
        if member is broken:
            raise ConnectionError("no broker of the cluster answers")
        return "drained"

    assert broker_matrix.each([broken, healthy], drain, alone="the drain") == {"4.3.1": "drained"}
    assert matrix.failed_alone(broken) == ["the drain failed on this cluster: ConnectionError: no broker of the "
                                                  "cluster answers"]
    assert matrix.failed_alone(healthy) == []
    with pytest.raises(broker_matrix.MemberFailed, match="Apache Kafka 4.1.1: no broker"):
        broker_matrix.each([broken], drain, alone="the drain")
    with pytest.raises(broker_matrix.MemberFailed):
        broker_matrix.each([broken, healthy], drain)  # work that no cluster may fail alone (provision)
    for m in (broken, healthy):
        rundir.write_json(m.dir / rundir.VERDICT, verdict("passed", "the app", {"lost": 0}))
    rows = {row["version"]: row for row in matrix.combine(tmp_path, [broken, healthy], {})["matrix"]}
    assert (rows["4.1.1"]["status"], rows["4.3.1"]["status"]) == ("inconclusive", "passed")
    combined = matrix.combine(tmp_path, [broken, healthy], {})
    assert combined["inconclusive_reasons"] == ["4.1.1: the drain failed on this cluster: ConnectionError: no broker "
                                                "of the cluster answers"]
