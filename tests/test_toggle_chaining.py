"""A step task applies the steps that fall due soon after its own: nobody else may be awake for them."""

import time

from kafka_soak import program
from kafka_soak.operators.toggle import ToggleStepOperator


def operator(step: program.Step) -> ToggleStepOperator:
    return ToggleStepOperator(task_id="toggle", step=step.as_dict(), cluster={}, plan={}, app_id="app",
                              defer_above_s=5.0)


def test_short_intervals_chain_the_steps_due_within_the_deferral_threshold():
    steps = program.steps(["1", "2", "1", "2", "0"], time.time() + 1, interval_s=2)
    assert operator(steps[0]).last_step(steps, 0) == 2  # steps 1 and 2 are due within 5 s, step 3 in 7 s
    steps = program.steps(["1", "2", "1", "2", "0"], time.time() - 6, interval_s=2)
    assert operator(steps[3]).last_step(steps, 3) == 4  # step 3 is due now: on to the end of the program


def test_long_intervals_leave_each_step_to_its_own_task():
    steps = program.steps(["1", "2", "1"], time.time() + 1, interval_s=10)
    assert [operator(s).last_step(steps, s.index) for s in steps] == [0, 1, 2]
