"""A rolling upgrade's steps: ``bN^V`` moves broker N to another Apache Kafka release, ``N^V`` instance N to another
version of the app. Each move is checked against what its target runs at that point of the program, by the rules Kafka
documents (a cluster's metadata.version, Kafka Streams' upgrade paths), and refused in one line naming the token."""

from __future__ import annotations

import json
import sys

import psutil
import pytest

from kafka_soak import preflight, run_plan
from kafka_soak.backends.kafka_releases import move_problem
from kafka_soak.clients import subjects
from kafka_soak.clients.instances import Instances
from kafka_soak.clients.reference import streams
from kafka_soak.faults import program, schedule
from kafka_soak.faults.kinds import upgrade
from kafka_soak.infra.cluster import Cluster, topic_names
from kafka_soak.plan import ParamsError

ROLLING = "1 2 3 0 b1^4.3.1 0 b2^4.3.1 0 b3^4.3.1 0 1^4.3.1 2^4.3.1 3^4.3.1 0"


def test_a_rolling_upgrade_of_brokers_and_app_reads_as_steps_of_their_own():
    plan = run_plan.check({"program": ROLLING, "brokers": 3, "kafka_version": "4.2.2", "app": "streams",
                           "streams_version": "4.2.2"})
    steps = program.schedule(plan["program"])
    assert [s.label for s in steps[4:5] + steps[10:11]] == ["step 4: broker 1 to Apache Kafka 4.3.1",
                                                            "step 10: instance 1 to version 4.3.1"]
    assert [(s.action, s.broker, s.instance) for s in steps[4:12:2]] == [
        ("broker-upgrade", 1, 0), ("broker-upgrade", 2, 0), ("broker-upgrade", 3, 0), ("upgrade", 0, 1)]
    left = program.left(plan["program"])
    assert left.releases == {1: "4.3.1", 2: "4.3.1", 3: "4.3.1"} and left.versions == {1: "4.3.1", 2: "4.3.1",
                                                                                      3: "4.3.1"}
    assert upgrade.targets(steps) == ({"4.3.1": "token 'b1^4.3.1' at position 5"},
                                      {"4.3.1": "token '1^4.3.1' at position 11"})


@pytest.mark.parametrize("conf, refusal", [
    ({"kafka_version": "4.2.2", "program": "1 b1^4.1.2"},
     "program: token 'b1^4.1.2' at position 2: Apache Kafka 4.1.2 cannot run this cluster: its metadata.version is "
     "4.2's (its storage was formatted on 4.2.2), which only 4.2 and later releases support, and Kafka cannot lower a "
     "metadata.version (allowed: 4.2.0 or later)"),
    ({"kafka_version": "4.2.2", "program": "1 b1^4.3.1 b1^4.3.1"},
     "program: token 'b1^4.3.1' at position 3: broker 1 already runs 4.3.1 at that point"),
    ({"program": "1 b1- b1^4.3.1"}, "program: token 'b1^4.3.1' at position 3: broker 1 is down at that point (a "
                                    "rolling upgrade restarts a broker that serves: bring it up first with b1+)"),
    ({"program": "1 b4^4.3.1"}, "program: token 'b4^4.3.1' at position 2: broker 4 is out of range"),
    ({"program": "1 b1^3.4.1"}, "program: token 'b1^3.4.1' at position 2: '3.4.1' is not an Apache Kafka KRaft release "
                                "number from 3.5 on"),
    ({"kafka_versions": ["4.1.1", "4.3.1"], "program": "1 b1^4.2.2"},
     "program: token 'b1^4.2.2' at position 2: Apache Kafka 4.2.2 cannot run this cluster: its metadata.version is "
     "4.3's (its storage was formatted on 4.3.1)"),
    ({"backend": "docker", "brokers": 1, "program": "1 b1^4.3.1"},
     "program: ['b1^4.3.1'] restart brokers on another release, which only backend 'local' can do (backend is "
     "'docker')"),
    ({"program": "1 1^2.14.0"}, "program: token '1^2.14.0' at position 2: the reference worker cannot move: it runs "
                                "this interpreter's confluent-kafka: set worker_versions to the one release it starts "
                                "on"),
    ({"worker_versions": ["2.13.2"], "program": "1 1^2.14"}, "program: token '1^2.14' at position 2: the release "
                                                             "moved to: '2.14' is not a confluent-kafka release"),
    ({"worker_versions": ["2.13.2", "2.14.0"], "program": "1 1^2.14.0"},
     "the reference worker cannot move: the run compares several releases side by side (worker_versions)"),
    ({"app_command": ["app", "{bootstrap_servers}"], "program": "1 1^2.0"},
     "program: token '1^2.0' at position 2: app_command's app has no versions to move to"),
    ({"app": "streams", "program": "2 1^4.3.1"}, "program: token '1^4.3.1' at position 2: cannot upgrade instance 1: it "
                                                 "is stopped at that point (it must be running)"),
    ({"app": "streams", "program": "1 p1 1^4.3.1"}, "cannot upgrade instance 1: it is paused at that point"),
    ({"app": "streams", "streams_version": "4.2.2", "program": "1 1^4.1.2"},
     "program: token '1^4.1.2' at position 2: Kafka Streams 4.1.2 is older than 4.2.2: Kafka Streams supports no "
     "downgrade but to another patch release of its line (allowed: 4.2.x or later)"),
    ({"app": "streams", "streams_version": "3.4.0", "program": "1 1^3.5.0"},
     "program: token '1^3.5.0' at position 2: Kafka Streams 3.4.0 -> 3.5.0 needs two rolling bounces, the first with "
     "upgrade.from=3.4 (KIP-904's formats, new in 3.5), which one restart is not"),
    ({"app": "streams", "streams_version": "4.2.2", "program": "1 1^4.3.1 1^4.3.1"},
     "program: token '1^4.3.1' at position 3: instance 1 already runs 4.3.1 at that point"),
    ({"app": "streams", "streams_versions": ["4.2.2", "4.3.1"], "program": "1 1^4.3.1"},
     "the run compares several Kafka Streams apps side by side (streams_versions, variants or workflow_designs); an "
     "upgrade moves the one app of a run"),
    ({"app": "streams", "streams_version": "4.2.2", "group_protocol": "streams", "program": "1 1^4.1.2"},
     "Kafka Streams 4.1.2 is older than 4.2.2"),
])
def test_a_move_kafka_does_not_support_is_refused_naming_its_token(conf, refusal):
    with pytest.raises(ParamsError) as refused:
        run_plan.check({"brokers": 3, **conf})
    assert refusal in str(refused.value)


def test_the_reference_worker_moves_between_confluent_kafka_releases_from_the_one_it_starts_on():
    """The worker keeps no state of its own: any confluent-kafka release moves to any other, each a virtualenv built
    before the run (``preflight``), the instance's command on the release it was moved to."""
    plan = run_plan.check({"worker_versions": ["2.13.2"], "program": "1 2 1^2.14.0 2^2.12.0 1 1"})
    assert subjects.matrix(plan) == [] and program.left(plan["program"]).versions == {1: "2.14.0", 2: "2.12.0"}
    assert upgrade.targets(program.schedule(plan["program"]))[1] == {
        "2.14.0": "token '1^2.14.0' at position 3", "2.12.0": "token '2^2.12.0' at position 4"}


def test_broker_moves_follow_the_cluster_s_metadata_version():
    """A cluster keeps the metadata.version it was formatted with: any release of that line or a newer one runs it (a
    rolling upgrade, and a move back within the line or to any newer release than the formatting one), none older."""
    assert move_problem("3.5.2", "4.3.1") == move_problem("3.5.2", "3.6.2") == move_problem("4.2.2", "4.2.0") == ""
    assert move_problem("4.1.2", "4.2.0") == move_problem("4.1.2", "4.1.0") == ""
    assert "cannot run this cluster" in move_problem("3.6.2", "3.5.2")
    assert "not an Apache Kafka KRaft release" in move_problem("4.3.1", "4.3")


def test_kafka_streams_moves_follow_its_upgrade_guide():
    assert streams.move_problem("4.2.2", "4.3.1") == streams.move_problem("3.5.2", "4.3.1") == ""
    assert streams.move_problem("3.3.2", "3.4.0") == streams.move_problem("4.3.1", "4.3.0") == ""
    assert "needs two rolling bounces" in streams.move_problem("3.4.1", "4.3.1")
    assert "older than" in streams.move_problem("4.0.0", "3.9.1")
    assert "not a Kafka Streams release from 3.3 on" in streams.move_problem("4.2.2", "3.2.3")


SLEEPER = [sys.executable, "-c", "import sys, time; time.sleep(60)", "{version}"]
PROFILE = {"name": "orders", "group_id": "orders", "command": SLEEPER, "versions": ["1.0", "2.0"],
           "inputs": [{"topic": "in", "value": {"encoding": "json", "template": {"id": "{id}"}}}],
           "outputs": [{"topic": "out", "contract": "one-to-one", "of": "in"}]}


def test_an_instance_moved_to_a_version_keeps_it_through_its_later_restarts(tmp_path):
    """A profile's versions are what its one app moves between when the program upgrades it (it starts on the first,
    no matrix); the version an instance was moved to is what its next start runs, as a host keeps what was deployed."""
    with pytest.raises(ParamsError, match=r"token '1\^3.0' at position 2: '3.0' is not one of app_profile's versions "
                                          r"\(allowed: 1.0, 2.0\)"):
        run_plan.check({"app_profile": PROFILE, "program": "1 1^3.0"})
    plan = run_plan.check({"app_profile": PROFILE, "program": "1 1^2.0", "instances": 1})
    assert subjects.matrix(plan) == [] and subjects.profile(plan).versions == ["1.0"]
    names = topic_names(subjects.topics(plan), "soak.d.r", subjects.app_names(plan), owned=True)
    [subject] = subjects.build(plan, names)
    instances = Instances(tmp_path, Cluster("local", "127.0.0.1:9", names), plan, [subject])
    ran = []
    try:
        for step in program.schedule(plan["program"]):
            outcome = schedule.apply(step, instances, None, {"by": "test"})
            ran.append((psutil.Process(instances.record(1).pid).cmdline()[-1], outcome.get("version")))
    finally:
        instances.stop_all(timeout=5)
    assert ran == [("1.0", None), ("2.0", "2.0")]
    assert instances.command(subject, 1, "drain")[-1] == "2.0", "a later start (a toggle, the drain's) runs 2.0"
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(e["event"], e.get("version")) for e in events][:4] == [
        ("start", None), ("stop", None), ("start", None), ("upgrade", "2.0")]
    assert preflight.moved_to(upgrade.targets(program.schedule(plan["program"]))[1]) == {
        "2.0": "program: token '1^2.0' at position 2"}
