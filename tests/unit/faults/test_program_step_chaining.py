"""A step task applies the steps that fall due soon after its own: nobody else may be awake for them; a step another
task claimed is waited for, but not for ever."""

import threading
import time

import pytest

from kafka_soak.faults import program
from kafka_soak.faults.schedule import StepBook
from kafka_soak.faults.step_operator import ProgramStepOperator


def operator(step: program.Step, defer_above_s: float) -> ProgramStepOperator:
    return ProgramStepOperator(task_id="program_step", step=step.as_dict(), cluster={}, plan={},
                              defer_above_s=defer_above_s)


def test_short_intervals_chain_the_steps_due_within_the_deferral_threshold():
    tokens = ["1", "2", "1", "2", "0"]
    steps = program.schedule(tokens, time.time() + 1, interval_s=20)
    assert operator(steps[0], 50).last_step(steps, 0, 0.0) == 2  # steps 1 and 2 are due within 50 s, step 3 in 61 s
    steps = program.schedule(tokens, time.time() - 60, interval_s=20)
    assert operator(steps[3], 50).last_step(steps, 3, 0.0) == 4  # step 3 is due now: on to the end of the program


def test_long_intervals_leave_each_step_to_its_own_task():
    steps = program.schedule(["1", "2", "1"], time.time() + 1, interval_s=60)
    assert [operator(s, 5).last_step(steps, s.index, 0.0) for s in steps] == [0, 1, 2]


def test_a_step_claimed_by_another_task_is_awaited_until_a_deadline_that_names_the_claimant(tmp_path):
    book, steps = StepBook(tmp_path), program.schedule(["1", "2"], time.time(), interval_s=10)
    assert book.claim(1, {"map_index": 1, "try": 1})
    assert not book.claim(1, {"map_index": 0, "try": 1}), "another task's claim stands"
    assert book.claim(1, {"map_index": 1, "try": 2}), "the claimant's own retry takes its step back"
    waiter = operator(steps[0], 5)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"step 1 was claimed by \{'map_index': 1, 'try': 1\} but has no result "
                                           r"after 1 s"):
        waiter.wait_for(book, 1, timeout=1.0)
    assert time.monotonic() - started < 60, "it gave up (after its 1 s, however busy the machine), not never"
    threading.Timer(0.3, book.record, (steps[1], {"applied_by": {"map_index": 1}})).start()
    waiter.wait_for(book, 1)  # returns once the claimant records the result, long before its own limit
    assert book.result(1)["label"] == steps[1].label
