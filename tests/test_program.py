import pytest

from kafka_soak import program


def test_parse_string_and_list_agree():
    assert program.parse("1 2 1", 3) == program.parse([1, 2, 1], 3) == [1, 2, 1]
    assert program.parse("  1   0 2 ", 2) == [1, 0, 2]


@pytest.mark.parametrize("bad, fragment", [
    ("1 x", "token 'x' at position 2"),
    ("1 2.5", "token '2.5' at position 2"),
    ("1 4", "instance 4 at position 2 is out of range: this run has 3 instances"),
    ([1, -1], "instance -1 at position 2 is out of range"),
])
def test_bad_programs_name_the_token_and_what_is_allowed(bad, fragment):
    with pytest.raises(program.ProgramError) as err:
        program.parse(bad, 3)
    assert fragment in str(err.value)
    assert "instance numbers 1..3 or 0 for a no-op" in str(err.value)


def test_steps_carry_desired_states_not_flips():
    steps = program.steps([1, 2, 1, 0, 1], t0=100.0, interval_s=10)
    assert [(s.instance, s.action) for s in steps] == [(1, "start"), (2, "start"), (1, "stop"), (0, "noop"),
                                                      (1, "start")]
    assert [s.planned_at for s in steps] == [100, 110, 120, 130, 140]
    assert steps[2].label == "step 2: stop instance 1"


def test_retrying_a_step_converges():
    """Applying a step twice leaves the same state as applying it once (desired state, not a toggle)."""
    state: set[int] = set()

    def apply(step):
        if step.action == "start":
            state.add(step.instance)
        elif step.action == "stop":
            state.discard(step.instance)

    for step in program.steps([1, 2, 1]):
        apply(step)
        apply(step)  # the retry
    assert state == {2} == program.running_after([1, 2, 1])


def test_random_program_is_seeded_and_valid():
    first = program.random_program(seed=7, instances=3)
    assert first == program.random_program(seed=7, instances=3)
    assert first != program.random_program(seed=8, instances=3)
    assert len(first) == 6 and all(1 <= n <= 3 for n in first)
