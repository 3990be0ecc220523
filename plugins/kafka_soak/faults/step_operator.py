"""The ``program_step`` task: a deferrable operator, one mapped task instance per step of the toggle program (start, stop,
kill, pause or resume an instance, stop or start a broker)."""

from __future__ import annotations

import dataclasses
import gc
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from kafka_soak.faults.kind import Step
from kafka_soak.faults.kinds.wait import LIMIT_S as WAIT_LIMIT_S
from kafka_soak.faults.schedule import StepBook, Targets, read_steps, sleep_until
from kafka_soak.faults.triggers import StepCountdownTrigger
from kafka_soak.load.process import Load
from kafka_soak.shared import rundir

if TYPE_CHECKING:
    from kafka_soak.plan import Plan


def under_dags_test() -> bool:
    """Whether this process is `airflow dags test` (``make soak``, the end-to-end tests), which runs a DAG's tasks
    itself, one after the other, with no scheduler."""
    return sys.argv[1:3] == ["dags", "test"]


def free_runner_garbage() -> None:
    """Free what `airflow dags test` (``make soak``) keeps of the task runs before this one. It gives every task run and
    every trigger it runs inline a supervisor of its own (Airflow 3.3's ``InProcessTestSupervisor``), with a selector
    that nothing closes: an epoll descriptor, freed with the supervisor's reference cycle only by a full garbage
    collection, which a process of Airflow's size seldom runs. A night's soak defers a few hundred steps: its runner
    held one more descriptor every two steps (the first 2-hour night: 21 at its start, 80 at most in its first hour,
    111 in its second). A step
    that defers has seconds to spare: it collects then. The first collection, of everything Airflow has made so far
    (about a second), freezes what survives it, so each later one looks only at what the run made since (a few
    milliseconds)."""
    if not under_dags_test():
        return  # a scheduler's task runs in a process of its own, which ends with it
    gc.collect()
    if not gc.get_freeze_count():
        gc.freeze()


class ProgramStepOperator(BaseOperator):
    """Apply program ``step`` at its planned time (and any earlier step nobody applied yet).

    Waits longer than ``defer_above_s`` are deferred to the triggerer, which wakes the task
    ``wake_early_s`` before the deadline; the task then sleeps to the deadline itself, so a step fires
    within milliseconds of its plan however late the resume was. Once its own step is applied, the task
    also applies the next steps due within ``defer_above_s``: no other step task can be relied on to be
    awake that soon (``airflow dags test`` runs one task at a time, and a task's start takes seconds).

    :param step: the step this task instance stands for (mapped over ``schedule_program``'s output)
    :param cluster: the run's Kafka (``provision``'s output: each cluster of a broker version matrix, whose every
        cluster gets the step at the same moment)
    :param plan: the resolved params (``check_params``'s output)
    """

    template_fields: Sequence[str] = ("step", "cluster", "plan")
    ui_color = "#f4d58d"

    def __init__(self, *, step: dict[str, Any], cluster: dict[str, Any], plan: Plan,
                 defer_above_s: float = 5.0, wake_early_s: float = 2.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.step, self.cluster, self.plan = step, cluster, plan
        self.defer_above_s, self.wake_early_s = defer_above_s, wake_early_s

    def execute(self, context: Any) -> dict[str, Any]:
        return self.advance(context)

    def advance(self, context: Any, event: Any = None) -> dict[str, Any]:
        context["step_label"] = Step(**self.step).label  # map_index_template: the grid shows the step's label
        run_dir = rundir.for_context(context)
        book = StepBook(run_dir)
        steps = read_steps(run_dir)
        mine = self.step["index"]
        targets = Targets(run_dir, self.plan, self.cluster)
        first = targets.members[0]  # whose generator's progress the countdown shows
        progress = str(Load(first.dir, first.cluster(self.cluster), first.plan).progress_file)
        me = {"map_index": context["ti"].map_index, "try": context["ti"].try_number}
        while (pending := book.next_pending(self.last_step(steps, mine, book.delay(mine)))) is not None:
            book.refuse_after_failure(pending)
            delayed = book.delay(pending)
            step = dataclasses.replace(steps[pending], planned_at=steps[pending].planned_at + delayed)
            wait = step.planned_at - time.time()
            if wait > self.defer_above_s:
                free_runner_garbage()
                self.log.info("%s in %.1f s (deferring until %.0f s before)", step.label, wait, self.wake_early_s)
                self.defer(trigger=StepCountdownTrigger(step.planned_at - self.wake_early_s, step.label, progress),
                           method_name="advance")
            sleep_until(step.planned_at)
            if book.claim(pending, me):
                try:
                    book.record(step, {**targets.apply(step, me), **({"delayed_s": round(delayed, 3)} if delayed else {})})
                except Exception as exc:
                    book.record(step, {"applied_by": me, "failed": f"{type(exc).__name__}: {exc}"})
                    raise
            else:
                self.wait_for(book, pending)
        book.refuse_after_failure(mine)
        result = book.result(mine)
        if result["applied_by"]["map_index"] != me["map_index"]:
            self.log.info("%s was applied by the task of step %s at %+.1f ms", result["label"],
                          result["applied_by"]["map_index"], result["jitter_ms"])
        return result

    def last_step(self, steps: list[Step], mine: int, delayed: float) -> int:
        """The last step this task applies now: its own, and the steps after it already due within ``defer_above_s``
        (``delayed``: how much later than planned the program runs, as far as its waits are known)."""
        last = mine
        while last + 1 < len(steps) and steps[last + 1].planned_at + delayed - time.time() <= self.defer_above_s:
            last += 1
        return last

    def wait_for(self, book: StepBook, index: int, timeout: float = WAIT_LIMIT_S + 120.0) -> None:
        """Another step task claimed ``index``: wait until it has recorded the result (a step may take as long as a
        wait's limit)."""
        deadline = time.monotonic() + timeout
        while book.result(index) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"step {index} was claimed by {book.claimant(index)} but has no result after "
                                   f"{timeout:.0f} s")
            time.sleep(0.1)
