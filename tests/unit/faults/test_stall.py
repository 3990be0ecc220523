"""The stall kind (``sN@POINT:SECONDS``): its grammar and checks before anything starts, the protocol an instance
keeps with the step that arms it (``shared/stalls.py``), and the Java agent's rules (``toolchain/stall_agent.py``).
A JVM really stalled by them: tests/e2e/test_known_bugs.py (KAFKA-20785 and KAFKA-19690)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafka_soak import drain, run_plan
from kafka_soak.evidence import RunEvidence
from kafka_soak.faults import program
from kafka_soak.faults.kind import Limits, ProgramError
from kafka_soak.faults.kinds import stall
from kafka_soak.plan import ParamsError
from kafka_soak.shared import rundir, stalls
from kafka_soak.toolchain import stall_agent


def test_a_stall_token_arms_a_stall_of_a_running_instance_and_leaves_its_state():
    steps, left = program.run(["1", "s1@commit:20", "s1@process:5", "s1@com.example.App#handle:3", "1"],
                              limits=Limits(instances=1))
    assert [s.action for s in steps] == ["start", "stall", "stall", "stall", "stop"]
    assert steps[1].label == "step 1: stall a thread of instance 1 at commit for 20 s"
    assert left.instances == {}


@pytest.mark.parametrize(("tokens", "said"), [
    (["s1@commit:5"], "token 's1@commit:5' at position 1: cannot stall instance 1: it is stopped"),
    (["1", "p1", "s1@commit:5"], "position 3: cannot stall instance 1: it is paused at that point (it must be running)"),
    (["1", "s2@commit:5"], "position 2: instance 2 is out of range: this run has 1 instances"),
    (["1", "s1@flush:5"], "'flush' is no point a thread can be stalled at; allowed: commit, process, or a JVM app's"),
    (["1", "s1@App#run:5"], "'App#run' is no point"),  # a class must be fully qualified
    (["1", "s1@commit:0"], "a stall of 0 s; allowed: 1 to 3600 s"),
    (["1", "s1@commit:3601"], "a stall of 3601 s; allowed: 1 to 3600 s"),
    (["1", "s1@commit"], "token 's1@commit' at position 2 is not an operation; allowed: tokens separated by spaces:"),
])
def test_a_stall_that_cannot_be_is_refused_naming_its_token_and_position(tokens, said):
    with pytest.raises(ProgramError, match=None) as refused:
        program.parse(tokens, instances=1)
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_grammar_a_refusal_lists_names_the_stall():
    assert "sN@POINT:SECONDS" in program.allowed(2)


def test_the_plan_carries_the_program_s_stalls_for_the_instances_to_start_ready():
    plan = run_plan.check({"program": "1 2 s2@commit:20 s1@process:4 1 2", "instances": 2})
    assert plan["stalls"] == [{"step": 2, "instance": 2, "point": "commit", "seconds": 20, "broker": 0},
                              {"step": 3, "instance": 1, "point": "process", "seconds": 4, "broker": 0}]
    assert run_plan.check({"program": "1 1"})["stalls"] == []


def test_a_broker_s_thread_is_stalled_at_append_on_a_release_whose_log_has_the_point():
    plan = run_plan.check({"program": "1 sb2@append:15 1", "brokers": 3, "kafka_versions": ["4.1.0", "4.1.1"]})
    assert plan["stalls"] == [{"step": 1, "instance": 0, "point": "append", "seconds": 15, "broker": 2}]
    steps = program.schedule(plan["program"])
    assert steps[1].label == "step 1: stall a request handler thread of broker 2 at append for 15 s"


@pytest.mark.parametrize(("params", "said"), [
    ({"program": "1 sb1@commit:5"}, "position 2: 'commit' is no point a broker's thread can be stalled at; allowed: "
                                    "append"),
    ({"program": "1 sb4@append:5", "brokers": 3}, "position 2: broker 4 is out of range: this run has 3 broker(s)"),
    ({"program": "1 b1- sb1@append:5 b1+", "brokers": 3}, "position 3: cannot stall a thread of broker 1: it is down "
                                                          "at that point (bring it up first with b1+)"),
    ({"program": "1 sb1@append:5", "kafka_versions": ["4.0.0", "4.1.1"]},
     "position 2: a stall of a broker needs Apache Kafka 4.1 or later (the method it stalls at is of the broker's "
     "Java log from 4.1 on); kafka_versions has 4.0.0"),
    ({"program": "1 sb1@append:5", "backend": "docker"}, "a stall of a broker needs backend 'local'"),
])
def test_a_broker_stall_that_cannot_be_is_refused_naming_its_token(params, said):
    with pytest.raises((ParamsError, ProgramError)) as refused:
        run_plan.check(params)
    assert said in str(refused.value)


@pytest.mark.parametrize(("params", "said"), [
    ({"app_command": ["/bin/sleep", "60"]}, "position 2: the app under test (own app) cannot be stalled: its profile "
                                            "says no way (app_profile.stall: 'jvm' for a JVM app"),
    ({"program": "1 s1@com.example.App#run:5"}, "a method (com.example.App#run) is a point of a JVM app only; worker is "
                                                "stalled by its own protocol at commit, process"),
    ({"runtime": "docker"}, "a stall needs runtime 'local'"),
])
def test_an_app_the_suite_cannot_stall_is_refused_before_the_run(params, said):
    with pytest.raises(ParamsError) as refused:
        run_plan.check({"program": "1 s1@commit:5", **params})
    assert said in str(refused.value)


def test_a_team_s_profile_says_how_its_app_is_stalled(tmp_path):
    profile = {"name": "orders", "group_id": "orders", "command": ["java", "-jar", "orders.jar", "{properties_file}"],
               "inputs": [{"topic": "orders", "value": {"encoding": "json", "template": {"orderId": "{id}"}}}],
               "outputs": [{"topic": "out", "contract": "one-to-one", "of": "orders"}], "stall": "jvm"}
    plan = run_plan.check({"app_profile": profile, "program": "1 s1@com.example.Orders#handle:5"})
    assert plan["app_profile"]["stall"] == "jvm"
    with pytest.raises(ParamsError, match=r"app_profile.stall: 'gdb' is no way to stall the app; allowed: 'jvm'"):
        run_plan.check({"app_profile": {**profile, "stall": "gdb"}, "program": "1"})


def test_an_armed_stall_is_taken_once_by_the_first_thread_at_its_point(tmp_path):
    stalls.arm(tmp_path, stalls.Stall(step=3, instance=1, point="commit", seconds=1))
    app = stalls.Stalls(str(tmp_path))
    app.at("process")  # another point: not this stall's
    assert stalls.arm_path(tmp_path, 3).exists()
    taken = []

    def commit() -> None:
        app.at("commit")
        taken.append(threading.current_thread().name)

    threads = [threading.Thread(target=commit, name=f"t{n}") for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not stalls.arm_path(tmp_path, 3).exists()
    [trace] = stalls.traced(tmp_path)
    assert trace["step"] == 3 and trace["thread"] in taken and trace["resumed"] - trace["stalled"] >= 1.0
    assert (tmp_path / "step-3.trace").read_text().count("stalled") == 1  # one thread stalled, once


def test_the_drain_disarms_what_no_thread_reached(tmp_path):
    for step in (2, 5):
        stalls.arm(tmp_path, stalls.Stall(step, 1, "commit", 30))
    (tmp_path / "step-7.trace").write_text("stalled 1000 StreamThread-1\n")
    assert stalls.disarm(tmp_path) == [2, 5]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-7.trace"]
    assert stalls.traced(tmp_path) == [{"step": 7, "thread": "StreamThread-1", "stalled": 1.0, "resumed": None}]


def test_a_stall_armed_when_the_program_ends_stays_armed_until_the_app_caught_up(tmp_path):
    """A slow machine may get the app to its point only after the program's last step (seen: a Kafka Streams
    instance's first commit 0.05 s after the drain began): the drain's restore leaves the arm, so the thread's next
    pass takes it; only its conclusion, once the app caught up, disarms what is left and writes the traces."""
    directory = tmp_path / "stalls" / "instance-1"
    stalls.arm(directory, stalls.Stall(2, 1, "commit", 1))
    stalls.arm(directory, stalls.Stall(4, 1, "process", 1))
    broker = stalls.Stall(5, 0, "append", 1, broker=2)
    stalls.arm(stalls.broker_dir(tmp_path, 2), broker)  # no broker's thread got there
    (stalls.broker_dir(tmp_path, 2) / "step-3.trace").write_text("stalled 1000 data-plane-kafka-request-handler-4\n"
                                                                  "resumed 21000\n")  # an earlier one did
    instances = SimpleNamespace(run_dir=tmp_path, stalls=[stalls.Stall(2, 1, "commit", 1), broker],
                                stall_dirs=lambda: [(SimpleNamespace(name=""), 1, directory)], is_running=lambda n: True)
    assert stall.KIND.restore(program.left(["1", "s1@commit:1"]), instances, None) == {}
    stalls.Stalls(str(directory)).at("commit")  # during the drain: the thread's next pass takes it
    assert drain.conclude_faults(instances) == {"stalls_disarmed": [4, 5], "stalls_traced": [2, 3]}
    assert not list(directory.glob("step-[0-9]")) and not list(stalls.broker_dir(tmp_path, 2).glob("step-[0-9]"))
    events = [json.loads(line) for line in (tmp_path / rundir.EVENTS).read_text().splitlines()]
    assert [(e["event"], e["step"], e.get("instance"), e.get("broker")) for e in events] == [
        ("stalled", 2, 1, None), ("resumed", 2, 1, None), ("stalled", 3, None, 2), ("broker-resumed", 3, None, 2)]
    # the broker's lane draws the stall and nothing after it, as it draws an outage
    spans = RunEvidence.load(tmp_path).intervals()
    assert [(s.lane, s.state, s.start, s.end) for s in spans if s.lane == "broker 2"] == [("broker 2", "stalled", 1.0, 21.0)]


def test_a_python_app_outside_a_stalling_run_never_looks(monkeypatch):
    monkeypatch.delenv(stalls.DIR_ENV, raising=False)
    assert stalls.Stalls().directory is None


def test_the_agent_s_rules_stall_at_kafka_clients_own_methods(tmp_path):
    planned = [stalls.Stall(2, 1, "commit", 20), stalls.Stall(4, 1, "process", 25),
               stalls.Stall(6, 1, "com.example.Orders#handle", 3)]
    options = stall_agent.java_options(Path("/opt/byteman.jar"), tmp_path, planned)
    rules = (tmp_path / stall_agent.RULES_FILE).read_text()
    assert options == f"-javaagent:/opt/byteman.jar=script:{tmp_path / stall_agent.RULES_FILE}"
    assert rules.count("\nENDRULE") == 6  # three stalls, and the three that tell when a transaction holds a record
    commit, process, own = (rules.split("RULE kafka-soak: program step ")[n] for n in (1, 2, 3))
    assert "CLASS org.apache.kafka.clients.producer.KafkaProducer\nMETHOD commitTransaction\nAT ENTRY" in commit
    assert f'BIND arm:java.io.File = new java.io.File("{tmp_path}/step-2")\nIF arm.delete()' in commit
    assert "delay(20000L)" in commit
    assert "IF flagged($0) && arm.delete()" in process
    assert "CLASS com.example.Orders\nMETHOD handle\n" in own
    assert "flag($0)" not in stall_agent.script(tmp_path, planned[:1])  # no process stall: no bookkeeping


@pytest.mark.parametrize(("release", "records", "after_guard"), [
    ((4, 1), "org.apache.kafka.common.record", ""),
    ((4, 2), "org.apache.kafka.common.record", ", short"),  # the transaction version
    ((4, 3), "org.apache.kafka.common.record.internal", ", short"),  # the record classes moved
])
def test_a_broker_s_rule_stalls_an_unverified_transactional_append_before_the_log_s_lock(tmp_path, release, records,
                                                                                       after_guard):
    """The method's signature is each line's own (read in its jars with javap): a rule of another line's would never
    fire, and the drain would say the stall was not applied."""
    stall_agent.java_options(Path("/opt/byteman.jar"), tmp_path, [stalls.Stall(1, 0, "append", 15, broker=2)], release)
    rule = (tmp_path / stall_agent.RULES_FILE).read_text()
    assert (f"CLASS org.apache.kafka.storage.internals.log.UnifiedLog\nMETHOD appendAsLeader({records}.MemoryRecords, "
            "int, org.apache.kafka.storage.internals.log.AppendOrigin, org.apache.kafka.server.common.RequestLocal, "
            f"org.apache.kafka.storage.internals.log.VerificationGuard{after_guard})\n") in rule
    assert f"batch:{records}.RecordBatch = $1.batches().iterator().next()" in rule
    assert ("IF $3 == org.apache.kafka.storage.internals.log.AppendOrigin.CLIENT && batch.isTransactional() && "
            "$0.hasOngoingTransaction(batch.producerId(), batch.producerEpoch()) && arm.delete()") in rule
    assert "delay(15000L)" in rule


@pytest.mark.parametrize("runs", ["/srv/soak runs", '/srv/"soak"', "/srv/soak\\runs"])
def test_a_runs_directory_the_agent_s_options_cannot_hold_is_refused_before_the_run(runs):
    with pytest.raises(stall_agent.StallAgentError, match=r"program: a stall of a JVM app loads the suite's Java agent "
                                                          r"through JAVA_TOOL_OPTIONS, which cannot take the runs dir"):
        stall_agent.check(Path("/opt/byteman.jar"), Path(runs))
    stall_agent.check(Path("/opt/byteman.jar"), Path("/srv/soak-runs"))
