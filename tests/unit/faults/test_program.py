import pytest

from kafka_soak.faults import program


def test_parse_string_and_list_agree():
    assert program.parse("1 2 1", 3) == program.parse([1, 2, 1], 3) == ["1", "2", "1"]
    assert program.parse("  1   0 2 ", 2) == ["1", "0", "2"]
    assert program.parse(["1", "k1", 1, "b1-", "b1+"], 2) == ["1", "k1", "1", "b1-", "b1+"]


@pytest.mark.parametrize("bad, fragment", [
    ("1 x", "token 'x' at position 2 is not an operation"),
    ("1 2.5", "token '2.5' at position 2 is not an operation"),
    ("1 k", "token 'k' at position 2 is not an operation"),
    ("1 b1", "token 'b1' at position 2 is not an operation"),
    ("1 4", "token '4' at position 2: instance 4 is out of range: this run has 3 instances"),
    ([1, -1], "token '-1' at position 2 is not an operation"),
    ("k2", "token 'k2' at position 1: cannot kill instance 2: it is stopped at that point"),
    ("1 r1", "token 'r1' at position 2: cannot resume instance 1: it is running at that point (it must be paused)"),
    ("1 p1 p1", "token 'p1' at position 3: cannot pause instance 1: it is paused at that point"),
    ("1 b1+", "token 'b1+' at position 2: broker 1 is already up at that point"),
    ("1 b2-", "token 'b2-' at position 2: broker 2 is out of range: this run has 1 broker(s)"),
    ("w1", "token 'w1' at position 1: cannot wait for instance 1: it is stopped at that point (it must be running)"),
    ("1 p1 w1", "token 'w1' at position 3: cannot wait for instance 1: it is paused at that point"),
    ("1 w4", "token 'w4' at position 2: instance 4 is out of range: this run has 3 instances"),
    ("wr 1", "token 'wr' at position 1: cannot wait for the app's group to rebalance: no instance runs at that point"),
])
def test_bad_programs_name_the_token_and_why(bad, fragment):
    with pytest.raises(program.ProgramError) as err:
        program.parse(bad, 3)
    assert fragment in str(err.value)


def test_unknown_tokens_list_what_is_allowed():
    with pytest.raises(program.ProgramError, match=r"N \(toggle instance N, 1..3\), 0 \(no-op\), kN \(kill -9\)"):
        program.parse("1 z9", 3)


def test_steps_carry_desired_states_not_flips():
    steps = program.schedule(["1", "2", "1", "0", "1"], t0=100.0, interval_s=10)
    assert [(s.instance, s.action) for s in steps] == [(1, "start"), (2, "start"), (1, "stop"), (0, "noop"),
                                                      (1, "start")]
    assert [s.planned_at for s in steps] == [100, 110, 120, 130, 140]
    assert steps[2].label == "step 2: stop instance 1"


def test_fault_operations_and_what_a_toggle_means_after_them():
    steps = program.schedule(program.parse("1 2 k1 1 p2 r2 p2 2 b1- b1+", 2))
    assert [(s.action, s.instance or s.broker) for s in steps] == [
        ("start", 1), ("start", 2), ("kill", 1), ("start", 1),  # a killed instance is stopped: 1 starts it
        ("pause", 2), ("resume", 2), ("pause", 2), ("stop", 2),  # toggling a paused instance stops it
        ("broker-down", 1), ("broker-up", 1)]
    assert [s.label for s in steps[2:3] + steps[8:9]] == ["step 2: kill -9 instance 1", "step 8: broker 1 down"]
    assert program.left(["1", "b1-"]).brokers_down == {1}
    assert program.left(["1", "b1-", "b1+"]).brokers_down == set()


def test_retrying_a_step_converges():
    """Applying a step twice leaves the same state as applying it once (desired state, not a toggle)."""
    running: set[int] = set()
    paused: set[int] = set()

    def apply(step):
        if step.action == "start":
            running.add(step.instance)
        elif step.action in ("stop", "kill"):
            running.discard(step.instance)
            paused.discard(step.instance)
        elif step.action == "pause" and step.instance in running:
            paused.add(step.instance)
        elif step.action == "resume":
            paused.discard(step.instance)

    for step in program.schedule(program.parse("1 2 1 p2 3 k3 r2", 3)):
        apply(step)
        apply(step)  # the retry
    assert running == {2} and paused == set()


def test_random_program_is_seeded_and_valid():
    first = program.random_program(seed=7, instances=3)
    assert first == program.random_program(seed=7, instances=3)
    assert first != program.random_program(seed=8, instances=3)
    assert len(first) == 6 and program.parse(first, 3) == first


def test_a_random_program_with_faults_takes_each_kind_in_turn_and_undoes_each_fault_before_the_next():
    from kafka_soak.faults import kinds
    from kafka_soak.params import RANDOM_FAULTS

    assert tuple(kinds.DRAWN) == RANDOM_FAULTS  # the param's enum is the kinds that can draw
    drawn = program.random_program(11, 3, 73, 3, RANDOM_FAULTS, 5, 30.0)
    assert drawn == program.random_program(11, 3, 73, 3, RANDOM_FAULTS, 5, 30.0)
    assert drawn != program.random_program(12, 3, 73, 3, RANDOM_FAULTS, 5, 30.0)
    assert len(drawn) == 73 and drawn[:3] == ["1", "2", "3"] and program.parse(drawn, 3, 3) == drawn
    faults = [drawn[i] for i in range(3, 73, 5)]  # one every 5 steps after the starts: two rounds of 7 kinds
    assert not any(t == "0" for t in faults) and all(t == "0" for i, t in enumerate(drawn[3:]) if i % 5 > 1
                                                     and not t.startswith("s"))
    kind_of = {t: kinds.matching(t)[0].name for t in faults}
    first, second = [kind_of[t] for t in faults[:7]], [kind_of[t] for t in faults[7:14]]
    assert sorted(first) == sorted(second) == sorted(RANDOM_FAULTS) and first != second  # a round each, reordered
    assert any(t.startswith("s") and t.endswith("@process:15") for t in faults)  # half a 30 s step
    left = program.left(drawn)
    assert left.running() == [1, 2, 3] and not left.brokers_down and not left.cut  # nothing left to undo


def test_a_kind_nothing_can_take_leaves_its_turn_quiet():
    assert program.random_program(1, 2, 8, 1, ["broker"], 2) == ["1", "2", "0", "0", "0", "0", "0", "0"]
    cut = program.random_program(1, 1, 6, 1, ["instance-cut", "broker-cut"], 2)
    assert cut == ["1", "0", "0", "n1-", "n1+", "0"]  # one broker: no broker to cut from the others


def test_drain_grace_covers_faults_and_streams_closes() -> None:
    """Kills, pauses and broker outages earn the drain extra time; so does a graceful stop of a Kafka Streams
    instance, which keeps its partitions until its session times out (it does not leave its group)."""
    from kafka_soak.drain import FAULT_GRACE_S, STREAMS_CLOSE_GRACE_S, fault_grace_s

    assert fault_grace_s(["1", "2", "1"]) == (0.0, "")
    grace, why = fault_grace_s(program.parse("1 2 k1 1 p2 r2 b1- b1+", 2))
    assert grace == max(FAULT_GRACE_S.values()) and "broker-down, kill, pause" in why
    grace, why = fault_grace_s(["1", "2", "1"], stop_leaves_group=False)
    assert grace == STREAMS_CLOSE_GRACE_S and "does not leave its group" in why
    assert fault_grace_s(["1", "2"], stop_leaves_group=False) == (0.0, "")  # nothing stops
    upgrade = program.parse("1 1^4.3.1", 1)  # an upgrade stops the instance gracefully too
    assert fault_grace_s(upgrade, stop_leaves_group=False)[0] == STREAMS_CLOSE_GRACE_S
    assert fault_grace_s(upgrade) == (0.0, ""), "a worker that leaves its group costs the drain nothing"
