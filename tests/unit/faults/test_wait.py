"""``wN`` holds the program until instance N got to work, and every later step keeps its distance to that moment."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.waits import until

from kafka_soak import run_plan
from kafka_soak.faults import program
from kafka_soak.faults.kinds import wait
from kafka_soak.faults.schedule import StepBook
from kafka_soak.faults.step_operator import ProgramStepOperator
from kafka_soak.plan import ParamsError
from kafka_soak.shared import rundir

# The lines each reference app writes when it got to work (copied from their logs): Kafka Streams' own, with an offset,
# and the worker's first assignment, in local time.
STREAMS_RUNNING = ("{stamp}+0000 [app-1-StreamThread-1] INFO KafkaStreams - stream-client [app-1] State transition "
                   "from REBALANCING to RUNNING\n")
WORKER_ASSIGNED = "{stamp} INFO [instance 2] assigned partitions [2, 3]: none from standby replicas\n"


def stamp(at: float, utc: bool) -> str:
    moment = time.gmtime(at) if utc else time.localtime(at)
    return time.strftime("%Y-%m-%dT%H:%M:%S" if utc else "%Y-%m-%d %H:%M:%S", moment) + \
        ("." if utc else ",") + f"{int(at * 1000) % 1000:03d}"


class Lives:
    """Stands in for ``Instances`` (which needs a provisioned run): each subject's current life of instance 1, as the
    runtime's registry records it, and its log file, which the test writes as the app would."""

    def __init__(self, run_dir: Path, subjects: list[str], ready: str = "") -> None:
        self.run_dir, self.started, self.app = run_dir, time.time(), SimpleNamespace(ready=ready)
        (run_dir / rundir.LOGS).mkdir(parents=True, exist_ok=True)
        self.logs = {s: run_dir / rundir.LOGS / f"app{s}-1.0.log" for s in subjects}
        for log in self.logs.values():
            log.write_text("starting\n")
        self.alive = set(subjects)
        self.subjects = [SimpleNamespace(name=s) for s in subjects]

    def lives(self, instance: int) -> dict[str, SimpleNamespace]:
        return {s: SimpleNamespace(log=str(log), started_at=self.started) for s, log in self.logs.items()
                if s in self.alive}

    def sync_logs(self) -> None:
        pass


def step(token: str = "w1") -> program.Step:
    return program.schedule(["1", token], t0=time.time())[1]


def test_a_wait_returns_once_every_version_s_instance_got_to_work_and_marks_each_moment(tmp_path):
    lives = Lives(tmp_path, ["4.2.1", "4.2.2"])
    # an earlier life's line (before this life started) does not count
    lives.logs["4.2.1"].write_text(STREAMS_RUNNING.format(stamp=stamp(lives.started - 60, utc=True)))

    def at_work(subject: str, line: str, utc: bool) -> None:
        with lives.logs[subject].open("a") as log:
            log.write(line.format(stamp=stamp(time.time(), utc)))

    def one_then_the_other() -> None:
        """4.2.2 gets to work; once the wait has seen it, 4.2.1 does (the order is the events', not a timer's)."""
        at_work("4.2.2", STREAMS_RUNNING, True)
        until(lambda: rundir.read_jsonl(tmp_path / rundir.EVENTS), "event of 4.2.2's wait")
        at_work("4.2.1", WORKER_ASSIGNED, False)

    writer = threading.Thread(target=one_then_the_other)
    writer.start()
    outcome = wait.AT_WORK.apply(step(), lives, kafka=None)
    writer.join()
    events = rundir.read_jsonl(tmp_path / rundir.EVENTS)
    assert [(e["event"], e["instance"], e["subject"]) for e in events] == [("at-work", 1, "4.2.2"),
                                                                          ("at-work", 1, "4.2.1")]
    assert outcome["waited_s"] >= events[1]["waited_s"] >= events[0]["waited_s"]


def test_a_wait_fails_the_step_naming_the_instance_that_exited_or_never_got_to_work(tmp_path, monkeypatch):
    lives = Lives(tmp_path, [""])
    monkeypatch.setattr(wait, "LIMIT_S", 0.5)
    with pytest.raises(wait.WaitedInVain, match=r"step 1: wait until instance 1 is at work: the app: instance 1 did "
                                                     r"not get to work: its log has no line that says so .* within 0 s"):
        wait.AT_WORK.apply(step(), lives, kafka=None)
    lives.alive.clear()
    with pytest.raises(wait.WaitedInVain, match=r"instance 1 \(the app\) exited before it got to work"):
        wait.AT_WORK.apply(step(), lives, kafka=None)


def test_a_team_app_is_waited_for_at_the_line_its_profile_names_on_kafka_s_own_log_layout(tmp_path, monkeypatch):
    """``app_profile.ready``: the team's app says it got to work in its own words; the reference apps' lines do not
    count for it, and a wait that did not see its line says which line it waited for."""
    lives = Lives(tmp_path, [""], ready="Started OrdersApp")
    monkeypatch.setattr(wait, "LIMIT_S", 0.5)
    with lives.logs[""].open("a") as log:
        log.write(STREAMS_RUNNING.format(stamp=stamp(time.time(), utc=True)))
    with pytest.raises(wait.WaitedInVain, match=r"did not get to work: its log has no line that says so "
                                                     r"\(app_profile.ready 'Started OrdersApp' on a line that begins"):
        wait.AT_WORK.apply(step(), lives, kafka=None)
    with lives.logs[""].open("a") as log:
        log.write(f"[{stamp(time.time(), utc=False).replace('T', ' ')}] INFO Started OrdersApp on 4 threads "
                  "(com.example.orders.OrdersApp)\n")
    wait.AT_WORK.apply(step(), lives, kafka=None)  # its first look sees the line: within any limit
    assert [e["event"] for e in rundir.read_jsonl(tmp_path / rundir.EVENTS)] == ["at-work"]


def record(book: StepBook, s: program.Step, actual: float, took: float, delayed: float = 0.0) -> None:
    book.record(s, {"actual_at": actual, "took_s": took, **({"delayed_s": delayed} if delayed else {})})


def test_the_steps_after_a_wait_keep_their_distance_to_the_moment_it_ended(tmp_path):
    book = StepBook(tmp_path)
    steps = program.schedule(["1", "w1", "0", "k1", "1"], t0=1000.0, interval_s=15)
    assert [s.planned_at for s in steps[:4]] == [1000, 1015, 1030, 1045]
    record(book, steps[0], 1000.01, 2.0)
    assert book.delay(1) == 0.0, "a step that is not a wait moves nothing"
    record(book, steps[1], 1015.02, 0.1)  # at work already: no-op
    assert book.delay(2) == pytest.approx(0.12), "a wait that held nothing moves the rest by its own few ms"
    record(book, steps[2], 1030.0, 0.0, delayed=0.12)
    record(book, steps[3], 1045.0, 0.5, delayed=0.12)
    assert book.delay(4) == pytest.approx(0.12), "what earlier waits held is carried on"

    book = StepBook(tmp_path / "slow")
    record(book, steps[0], 1000.0, 9.0)
    record(book, steps[1], 1015.0, 41.0)  # the instance got to work 56 s in: 41 s after the wait was due
    assert book.delay(2) == pytest.approx(41.0)
    record(book, dataclasses.replace(steps[2], planned_at=1071.0), 1071.0, 0.0, delayed=41.0)
    assert book.delay(3) == pytest.approx(41.0), "the kill comes 30 s after the instance got to work, not 4 s"


def test_a_step_task_looks_ahead_from_where_the_waits_moved_the_program():
    steps = program.schedule(["1", "w1", "0", "k1"], time.time() - 20, interval_s=15)  # step 2 was due 10 s ago
    task = ProgramStepOperator(task_id="program_step", step=steps[2].as_dict(), cluster={}, plan={}, defer_above_s=5)
    assert task.last_step(steps, 2, delayed=0.0) == 2, "the kill is 5 s away: its own task will be awake for it"
    assert task.last_step(steps, 2, delayed=12.0) == 2
    assert task.last_step(steps, 1, delayed=-20.0) == 3


def test_a_rebalance_wait_is_refused_where_the_coordinator_s_group_states_are_not_the_classic_protocol_s():
    refusal = ("program: ['wr'] wait for the app's group to rebalance, which is read for group_protocol 'classic' only "
               "(group_protocol is 'consumer')")
    with pytest.raises(ParamsError, match=re.escape(refusal)):
        run_plan.check({"program": "1 2 wr 1", "group_protocol": "consumer"})
    assert run_plan.check({"program": "1 2 wr 1"})["program"] == ["1", "2", "wr", "1"]
