"""The network cuts' tokens (kind instance-cut: ``nN-``/``nN+``, kind broker-cut: ``nbN-``/``nbN+``): read, checked
against the program's state, refused by name where the backend or runtime cannot cut links, healed by the drain (how
the report draws them: test_fault_kinds)."""

from __future__ import annotations

import pytest

from kafka_soak import drain, run_plan
from kafka_soak.backends import registry
from kafka_soak.faults import program
from kafka_soak.plan import ParamsError


def test_cuts_and_heals_of_instances_and_brokers_are_steps_with_their_targets():
    steps = program.schedule(program.parse("1 n1- n1+ nb2- nb2+ n3- 3 n3+", 3, brokers=3))
    assert [(s.action, s.instance, s.broker) for s in steps[1:]] == [
        ("cut", 1, 0), ("heal", 1, 0), ("broker-cut", 0, 2), ("broker-heal", 0, 2), ("cut", 3, 0), ("start", 3, 0),
        ("heal", 3, 0)]
    assert [s.label for s in steps[1:5]] == [
        "step 1: cut instance 1's network to the brokers", "step 2: heal instance 1's network to the brokers",
        "step 3: cut broker 2 from the other brokers", "step 4: heal broker 2 from the other brokers"]
    assert program.left(["1", "n1-", "nb3-"]).cut == {"instance 1", "broker 3"}
    assert program.left(["1", "n1-", "nb3-", "n1+", "nb3+"]).cut == set()


@pytest.mark.parametrize("bad, brokers, fragment", [
    ("1 n1+", 3, "token 'n1+' at position 2: the network of instance 1 is not cut at that point"),
    ("n2- 1 n2-", 3, "token 'n2-' at position 3: the network of instance 2 is already cut at that point"),
    ("nb1- nb1-", 3, "token 'nb1-' at position 2: the network of broker 1 is already cut at that point"),
    ("1 nb1-", 1, "token 'nb1-' at position 2: cutting broker 1 from the other brokers needs 2 brokers or more; this "
                  "run has 1 (param 'brokers')"),
    ("nb4-", 3, "token 'nb4-' at position 1: broker 4 is out of range: this run has 3 broker(s)"),
    ("n4-", 3, "token 'n4-' at position 1: instance 4 is out of range: this run has 3 instances"),
    ("nb2- b2- b2+", 3, "token 'b2+' at position 3: broker 2 cannot come up while it is cut from the other brokers"),
    ("nb2- b2^4.3.1", 3, "token 'b2^4.3.1' at position 2: broker 2 is cut from the other brokers at that point: "
                         "restarted, it could not rejoin the controller quorum (heal it first with nb2+)"),
    ("1 n1", 3, "token 'n1' at position 2 is not an operation"),
    ("1 nb-", 3, "token 'nb-' at position 2 is not an operation"),
])
def test_a_cut_that_cannot_be_is_refused_naming_its_token_and_position(bad, brokers, fragment):
    with pytest.raises(program.ProgramError) as err:
        program.parse(bad, 3, brokers=brokers)
    assert fragment in str(err.value)


@pytest.mark.parametrize("params, refusal", [
    ({"backend": "docker"}, "program: ['n1-', 'n1+'] cut network links, which only backend 'local' can do (backend is "
                            "'docker')"),
    ({"backend": "external"}, "program: ['n1-', 'n1+'] cut network links, which only backend 'local' can do (backend "
                              "is 'external')"),
    ({"runtime": "docker"}, "program: ['n1-', 'n1+'] cut network links, which only runtime 'local' can do (runtime is "
                            "'docker')"),
])
def test_backends_and_runtimes_that_cannot_cut_links_refuse_the_tokens_by_name(params, refusal):
    with pytest.raises(ParamsError) as err:
        run_plan.check({"program": "1 n1- n1+", **params})
    assert refusal in str(err.value)


def test_the_plan_says_what_its_program_needs_and_only_then_the_local_backend_gives_hosts_networks(tmp_path):
    plans = {program_: run_plan.check({"program": program_, "brokers": 3, "instances": 2})
             for program_ in ("1 2 1", "1 b2- b2+", "1 nb2- nb2+ n1- n1+ b1- b1+")}
    assert [p["program_needs"] for p in plans.values()] == [[], ["broker_faults"], ["broker_faults", "network_faults"]]
    assert [registry.create(p, tmp_path).hosts for p in plans.values()] == [0, 0, 2]


def test_the_drain_waits_out_a_cut_member_s_session_and_a_cut_broker_s_leaders():
    grace, why = drain.fault_grace_s(program.parse("1 n1- n1+", 3))
    assert grace == drain.FAULT_GRACE_S["kill"] and "the program has cut" in why
    assert drain.fault_grace_s(program.parse("1 nb1- nb1+", 3, brokers=3))[0] == drain.FAULT_GRACE_S["broker-down"]



def test_each_kind_of_cut_heals_its_own_hosts_as_the_network_says(monkeypatch, tmp_path):
    """The drain heals what is cut now, whatever the program says was left (a failed step may leave another state):
    a broker's cut and an instance's, each by its kind, into drain.json's record of what it did."""
    from types import SimpleNamespace

    from kafka_soak.faults.kinds import network
    from kafka_soak.shared import rundir

    cut = ["i1", "b2"]
    fake = SimpleNamespace(cut_hosts=lambda: list(cut), heal=cut.remove)
    monkeypatch.setattr(network.RunNetwork, "load", lambda _run_dir: fake)
    instances = SimpleNamespace(run_dir=tmp_path)
    assert network.BROKERS.restore(program.left(["1"]), instances, None) == {"brokers_healed": [2]} and cut == ["i1"]
    assert network.INSTANCES.restore(program.left(["1"]), instances, None) == {"instances_healed": [1]} and cut == []
    assert [(e["event"], e.get("broker"), e.get("instance")) for e in rundir.read_jsonl(tmp_path / rundir.EVENTS)] == [
        ("link-healed", 2, None), ("link-healed", None, 1)]
