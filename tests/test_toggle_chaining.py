"""A step task applies the steps that fall due soon after its own: nobody else may be awake for them."""

import time

from kafka_soak import program
from kafka_soak.operators.toggle import ToggleStepOperator


def operator(step: program.Step, defer_above_s: float) -> ToggleStepOperator:
    return ToggleStepOperator(task_id="toggle", step=step.as_dict(), cluster={}, plan={},
                              defer_above_s=defer_above_s)


def test_short_intervals_chain_the_steps_due_within_the_deferral_threshold():
    tokens = ["1", "2", "1", "2", "0"]
    steps = program.steps(tokens, time.time() + 1, interval_s=20)
    assert operator(steps[0], 50).last_step(steps, 0) == 2  # steps 1 and 2 are due within 50 s, step 3 in 61 s
    steps = program.steps(tokens, time.time() - 60, interval_s=20)
    assert operator(steps[3], 50).last_step(steps, 3) == 4  # step 3 is due now: on to the end of the program


def test_long_intervals_leave_each_step_to_its_own_task():
    steps = program.steps(["1", "2", "1"], time.time() + 1, interval_s=60)
    assert [operator(s, 5).last_step(steps, s.index) for s in steps] == [0, 1, 2]
