"""A fault kind is one unit: registered once in ``faults.kinds.KINDS``, it is parsed, checked against the backend's
capabilities, applied by the step task, undone by the drain and drawn by the report, none of which names it."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kafka_soak import drain, run_plan
from kafka_soak.backends import registry
from kafka_soak.evidence import LANES, RunEvidence
from kafka_soak.faults import kinds, program, schedule
from kafka_soak.faults.kind import Lane, Limits, ProgramState, Step, Target
from kafka_soak.plan import ParamsError


class Freeze:
    """A kind of the test's own, as a contributor would add one: ``fN`` freezes broker N's disk, ``uN`` thaws it."""

    name = "freeze"
    pattern = re.compile(r"^(?P<op>[fu])(?P<n>[0-9]{1,4})$")
    grammar = "fN / uN (freeze / thaw broker N's disk)"
    actions = ("freeze", "thaw")
    needs, needs_why = "broker_faults", "freeze brokers' disks"
    grace = {"freeze": 5.0}
    lanes = {"freeze": Lane(opens="frozen"), "thaw": Lane(ends=lambda _event: "thawed")}

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        limits.broker(int(match["n"]), position)
        return Target("freeze" if match["op"] == "f" else "thaw", broker=int(match["n"]))

    def describe(self, target: Target) -> str:
        return f"{target.action} broker {target.broker}'s disk"

    def apply(self, step: Step, instances: Any, kafka: Any) -> dict[str, Any]:
        kafka.frozen = step.action == "freeze"
        return {"frozen": kafka.frozen}

    def restore(self, left: ProgramState, instances: Any, kafka: Any) -> dict[str, list[int]]:
        kafka.frozen = False
        return {"thawed": [1]}


@pytest.fixture
def with_freeze(monkeypatch):
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, Freeze()))


def test_the_kinds_split_the_tokens_and_the_actions_between_them():
    tokens = {"1": "toggle", "0": "toggle", "k1": "kill", "p1": "pause", "r1": "pause", "b1-": "broker", "b1+": "broker",
              "n1-": "instance-cut", "n1+": "instance-cut", "nb1-": "broker-cut", "nb1+": "broker-cut", "s1@commit:5": "stall",
              "b1^4.3.1": "broker-upgrade", "1^4.3.1": "app-upgrade", "12^v2": "app-upgrade", "w1": "wait",
              "wr": "rebalance-wait"}
    assert {token: kinds.matching(token)[0].name for token in tokens} == tokens
    actions = [action for kind in kinds.KINDS for action in kind.actions]
    assert len(actions) == len(set(actions)), "an action belongs to one kind"
    assert all(kinds.of(action).name == kind.name for kind in kinds.KINDS for action in kind.actions)
    assert all(not kind.needs or hasattr(registry.kind("local"), kind.needs) for kind in kinds.KINDS)
    assert drain.FAULT_GRACE_S == {"kill": 115.0, "stall": 115.0, "pause": 115.0, "broker-down": 30.0, "cut": 115.0,
                                   "broker-cut": 30.0}
    assert set(LANES) == {"start", "stop", "kill", "pause", "resume", "stall-armed", "stalled", "resumed", "broker-down",
                          "broker-up", "link-cut", "link-healed", "broker-upgrading", "broker-upgraded", "upgrade",
                          "broker-resumed", "at-work"}


def test_a_kind_registered_once_is_parsed_refused_where_the_backend_cannot_applied_and_undone(with_freeze, tmp_path):
    assert "fN / uN (freeze / thaw broker N's disk)" in program.allowed(2, 3)
    steps = program.schedule(program.parse("1 f2 u2", 2, brokers=3))
    assert [(s.action, s.broker, s.label) for s in steps[1:]] == [
        ("freeze", 2, "step 1: freeze broker 2's disk"), ("thaw", 2, "step 2: thaw broker 2's disk")]
    with pytest.raises(program.ProgramError, match="token 'f4' at position 2: broker 4 is out of range"):
        program.parse("1 f4", 2, brokers=3)
    with pytest.raises(ParamsError, match=r"program: \['f1'\] freeze brokers' disks, which only backend 'local' can do "
                                          r"\(backend is 'docker'\)"):
        run_plan.check({"program": "1 f1", "backend": "docker"})

    kafka = SimpleNamespace(frozen=False)
    instances = SimpleNamespace(stall_dirs=lambda: [], record=lambda n: None, is_running=lambda n: False, sync_logs=lambda: None,
                                running=lambda: [1], paused=lambda: [], run_dir=tmp_path, subjects=[])
    outcome = schedule.apply(steps[1], instances, kafka, {"by": "test"})
    assert outcome["frozen"] is True and kafka.frozen
    assert drain.restore_service(instances, kafka, ["1", "f2"])["thawed"] == [1] and not kafka.frozen


def test_the_report_draws_each_kind_s_events_on_its_target_s_lane(tmp_path: Path):
    events = [{"t": 1.0, "event": "start", "instance": 1}, {"t": 2.0, "event": "pause", "instance": 1},
              {"t": 3.0, "event": "resume", "instance": 1}, {"t": 4.0, "event": "kill", "instance": 1},
              {"t": 5.0, "event": "broker-down", "broker": 2}, {"t": 6.0, "event": "broker-up", "broker": 2},
              # a cut link, on a row of its own under its target's lane: it overlaps the lane's own states
              {"t": 2.5, "event": "link-cut", "instance": 1}, {"t": 4.5, "event": "link-healed", "instance": 1},
              {"t": 5.5, "event": "link-cut", "broker": 2}, {"t": 7.0, "event": "link-healed", "broker": 2}]
    events += [{"t": 7.0, "event": "broker-upgrading", "broker": 3, "release": "4.3.1"},
               {"t": 9.0, "event": "broker-upgraded", "broker": 3, "release": "4.3.1", "from": "4.2.2"}]
    evidence = RunEvidence(run_dir=tmp_path, dag_id="d", run_id="r", events=events)
    assert [(i.lane, i.state, i.start, i.end, i.ended_by) for i in evidence.intervals()] == [
        ("broker 2", "down", 5.0, 6.0, "up again"),
        ("broker 2 network", "cut", 5.5, 7.0, "healed"),
        ("broker 3", "down", 7.0, 9.0, "up on Apache Kafka 4.3.1"),
        ("instance 1", "running", 1.0, 2.0, "paused"),
        ("instance 1", "paused", 2.0, 3.0, "resumed"),
        ("instance 1", "running", 3.0, 4.0, "killed (kill -9)"),
        ("instance 1 network", "cut", 2.5, 4.5, "healed")]
    from kafka_soak.evidence.charts import Datasets, program_chart

    data = Datasets()
    program_chart(evidence, data, [0.0, 10_000.0]).to_dict()
    assert {"lane": "broker 3", "t": 9000.0, "text": "4.3.1"} in data["moved"], "the release beside the broker's lane"


def test_the_program_param_tells_a_trigger_every_kind_s_tokens():
    """``params`` is a leaf that imports no kind, so the trigger form's description of param program is held to the
    kinds here: a new kind's tokens must be in it."""
    from kafka_soak.params import PARAMS

    described = PARAMS["program"].schema["description"]
    tokens = [token for kind in kinds.KINDS
              for forms in re.findall(r"(?:^|, )([^\s(,]+(?: / [^\s(,]+)*) \(", kind.grammar)
              for token in forms.split(" / ")]
    assert tokens == ["N", "0", "kN", "sN@POINT:SECONDS", "sbN@append:SECONDS", "pN", "rN", "bN-", "bN+", "nN-",
                      "nN+", "nbN-", "nbN+", "bN^V", "N^V", "wN", "wr"]
    assert [token for token in tokens if token not in described] == []
