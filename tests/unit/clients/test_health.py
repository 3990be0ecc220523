"""App health from what a run leaves behind: the journal, the exits its supervisors recorded, the instance logs."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

from support.waits import until

from kafka_soak.clients import health
from kafka_soak.infra.runtime.local import LocalProcesses
from kafka_soak.infra.runtime.registry import Registry
from kafka_soak.shared.rundir import journal

STREAMS_LOG = """\
2026-11-23T08:40:03.018+0000 [app-1-StreamThread-1] INFO SoakStreamsApp - state REBALANCING -> RUNNING
2026-11-23T08:40:05.056+0000 [app-1-StreamThread-1] WARN StreamThread - Detected that the thread is being fenced.
org.apache.kafka.streams.errors.TaskMigratedException: Producer got fenced trying to commit a transaction
\tat org.apache.kafka.streams.processor.internals.StreamsProducer.commitTransaction(StreamsProducer.java:312)
Caused by: org.apache.kafka.common.errors.ProducerFencedException: There is a newer producer
\t... 10 more
2026-11-23T08:40:06.100+0000 [app-1-StreamThread-1] ERROR IdAssigner - !!! BROKEN !!! Expected 11 but found 19 partition: 1
2026-11-23T08:40:07.000+0000 [app-1-StreamThread-2] ERROR SoakStreamsApp - stream thread app-1-StreamThread-2 died: \
org.apache.kafka.streams.errors.TaskCorruptedException: Tasks [0_1] are corrupted; replacing it
org.apache.kafka.streams.errors.TaskCorruptedException: Tasks [0_1] are corrupted
\tat org.apache.kafka.streams.processor.internals.TaskManager.commit(TaskManager.java:1)
2026-11-23T08:40:08.000+0000 [app-1-StreamThread-1] WARN StreamThread - fenced again
org.apache.kafka.streams.errors.TaskMigratedException: fenced again
2026-11-23T08:40:08.500+0000 [app-1-StreamThread-1] ERROR ProcessorStateManager - Failed to flush cache of store ids:
org.apache.kafka.streams.errors.TaskMigratedException: Error encountered sending record to topic app-ids-changelog
Caused by: org.apache.kafka.common.errors.InvalidProducerEpochException: Producer attempted to produce with an old epoch
2026-11-23T08:40:08.800+0000 [app-1-StreamThread-1] ERROR ConsumerCoordinator - [Consumer clientId=app-1-StreamThread-\
1-consumer, groupId=app] LeaveGroup request with Generation{generationId=4, memberId='app-1-StreamThread-1-consumer-\
001f', protocol='stream'} failed with error: The coordinator is not aware of this member.
2026-11-23T08:40:09.000+0000 [app-1-StreamThread-1] ERROR TaskManager - stream-thread [app-1-StreamThread-1] Task 0_2 \
should have been committed when it was suspended, but it reports non-empty offsets {in-2=OffsetAndMetadata{offset=1000, \
leaderEpoch=0, metadata=''}} to commit; this means it failed during last commit and hence should be closed dirty
"""

WORKER_LOG = """\
2026-11-23 08:40:03,018 INFO [instance 2] instance 2 of app started at step 1
2026-11-23 08:40:09,500 ERROR [instance 2] fatal: KafkaError{code=_FENCED,val=-144,str="Producer fenced"}
Traceback (most recent call last):
  File "worker.py", line 1, in run
confluent_kafka.KafkaException: KafkaError{code=_FENCED}
"""


def run_dir_with(tmp_path: Path) -> Path:
    """Instance 1 (Kafka Streams log) started at step 0 and stopped by the program; instance 2 (worker log) started
    at step 1 and crashed by itself."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "app-1.0.log").write_text(STREAMS_LOG)
    (tmp_path / "logs" / "app-2.1.log").write_text(WORKER_LOG)
    journal(tmp_path, "start", instance=1, subject="", step="0", log="app-1.0.log", pid=101)
    journal(tmp_path, "start", instance=2, subject="", step="1", log="app-2.1.log", pid=202)
    journal(tmp_path, "stop", instance=1, subject="", exit_code=0, pid=101)
    registry = Registry(tmp_path)
    registry.add_exit({"pid": 101, "code": 0, "signal": None, "at": time.time()})
    registry.add_exit({"pid": 202, "code": 1, "signal": None, "at": time.time()})
    registry.add_exit({"pid": 999, "code": 0, "signal": None, "at": time.time()})  # the generator: not the app
    return tmp_path


def test_exceptions_are_counted_by_class_with_their_first_trace_and_exits_judged(tmp_path):
    found = health.assess(run_dir_with(tmp_path), allowance=0)
    exceptions = found["exceptions"]
    assert {cls: seen["count"] for cls, seen in exceptions.items()} == {
        "TaskMigratedException": 3, "ProducerFencedException": 1, "TaskCorruptedException": 1, "KafkaException": 1,
        "InvalidProducerEpochException": 1}
    assert exceptions["TaskCorruptedException"]["errors"] == 1 and exceptions["TaskMigratedException"]["errors"] == 1
    first = exceptions["TaskMigratedException"]["first"]
    assert first["instance"] == 1 and first["level"] == "WARN" and first["log"] == "app-1.0.log"
    assert any("Caused by: org.apache.kafka.common.errors.ProducerFencedException" in line for line in first["trace"])
    assert found["thread_deaths"] == 1
    # the self-check is a data anomaly (stale_state), never a health incident; a fenced producer logged at ERROR is
    # Kafka Streams recovering by design (counted above), not an incident either, nor is a consumer failing to leave
    # the group that its session's end had already removed it from (seen after a pause past the session), nor a task
    # closed dirty because its commit failed when its producer was fenced (seen after a network cut)
    assert [i["kind"] for i in found["incidents"]] == ["thread_death", "error", "unexpected_exit"]
    assert found["unexpected_exits"] == 1 and found["errors"] == 2
    assert found["instances"]["1"] == {"starts": 1, "restarts": 0, "exits": [
        {**found["instances"]["1"]["exits"][0], "code": 0, "expected": True, "by": "a graceful stop"}]}
    crash = found["instances"]["2"]["exits"][0]
    assert (crash["code"], crash["expected"], crash["by"]) == (1, False, "nobody: it exited by itself")
    assert "exited by itself with exit code 1" in found["incidents"][-1]["what"]
    assert health.one_line(found).startswith("2 instance exits (1 unexpected), 2 error incidents, 1 stream thread "
                                            "deaths; exceptions: TaskMigratedException x3")


def test_injected_crashes_and_restarts_are_counted_and_only_other_exits_are_incidents(tmp_path):
    """With crash_probability the worker exits with its crash code; its supervisor restarts it (``restart`` events).
    Those crashes are the soak's faults, counted but not incidents; an exit with another code still is one."""
    from kafka_soak.clients.reference.worker import CRASH_EXIT_CODE

    (tmp_path / "logs").mkdir()
    journal(tmp_path, "start", instance=1, subject="", step="0", log="app-1.0.log", pid=101)
    journal(tmp_path, "restart", instance=1, subject="", step="0", log="app-1.0.log", pid=102, restart=1)
    journal(tmp_path, "restart", instance=1, subject="", step="0", log="app-1.0.log", pid=103, restart=2)
    journal(tmp_path, "stop", instance=1, subject="", exit_code=0, pid=103)
    journal(tmp_path, "stop", instance=1, subject="", exit_code=None, pid=101)  # a stop during 101's restart backoff
    registry = Registry(tmp_path)
    for pid, code in ((101, CRASH_EXIT_CODE), (102, 1), (103, 0)):
        registry.add_exit({"pid": pid, "code": code, "signal": None, "at": time.time()})
    found = health.assess(tmp_path, crash_code=CRASH_EXIT_CODE)
    assert (found["instances"]["1"]["starts"], found["restarts"], found["injected_crashes"]) == (1, 2, 1)
    assert [e["by"] for e in found["instances"]["1"]["exits"]] == [
        "an injected crash (crash_probability)", "nobody: it exited by itself", "a graceful stop"]
    assert [i["what"] for i in found["incidents"]] == [
        "instance 1 (started at step 0) exited by itself with exit code 1"]
    assert health.one_line(found).startswith("3 instance exits (1 unexpected, 1 injected crashes), 2 restarts, ")
    without = health.assess(tmp_path)  # a run that injects no crash: exit code 86 is nothing special
    assert without["unexpected_exits"] == 1 and without["injected_crashes"] == 0  # 102; 101 is named by the stop


def test_crash_draws_are_replayed_from_the_seed_and_drawn_anew_for_each_restart_step_and_instance():
    """crash_probability's draws: a process of a run replayed with the same seed crashes after as many records; its
    restart (``SOAK_RESTART``), another step's start of it or another instance does not crash at the same count."""
    from kafka_soak.clients.reference.worker import chaos

    def draws(*process: object) -> list[float]:
        rng = chaos(*process)
        return [rng.random() for _ in range(5)]

    assert draws(7, 1, "0", 0) == draws(7, 1, "0", 0)
    others = [draws(7, 1, "0", 1), draws(7, 1, "3", 0), draws(7, 2, "0", 0), draws(8, 1, "0", 0)]
    assert all(other != draws(7, 1, "0", 0) for other in others) and len({tuple(o) for o in others}) == 4


def test_the_supervisor_records_how_a_detached_process_ended(tmp_path):
    """Exit codes and signals of processes nobody waits for: the local runtime's supervisor writes them."""
    processes = LocalProcesses(tmp_path)
    processes.start("quits", ["sh", "-c", "exit 3"], tmp_path / "quits.log")
    slow = processes.start("sleeps", ["sleep", "30"], tmp_path / "sleeps.log")
    assert processes.kill("sleeps") == -9
    until(lambda: len(Registry(tmp_path).exits()) >= 2, "two exits recorded")
    ends = {e["pid"]: e for e in Registry(tmp_path).exits()}
    assert (ends[slow.pid]["code"], ends[slow.pid]["signal"]) == (None, "SIGKILL")
    quits = next(e for pid, e in ends.items() if pid != slow.pid)
    assert (quits["code"], quits["signal"]) == (3, None)
    assert json.loads((tmp_path / "processes" / "exits.jsonl").read_text().splitlines()[0])["at"] > 0


def test_a_streak_of_aborts_without_a_commit_is_told_once_when_it_is_long_in_count_and_in_time():
    """The worker's liveness signal: five aborts in a row are not enough within 15 s, nor is 15 s with four; the
    streak is told once, on the abort that makes it long, however long it goes on."""
    from kafka_soak.clients.reference.worker import ABORT_STREAK_MIN, ABORT_STREAK_S, AbortStreak

    quick = AbortStreak()
    assert not any(quick.note(t) for t in range(ABORT_STREAK_MIN * 2))  # ten aborts within 10 s
    slow = AbortStreak()
    assert [slow.note(t * ABORT_STREAK_S / 3) for t in range(ABORT_STREAK_MIN - 1)] == [False] * 4  # 4 over 15 s
    long = AbortStreak()
    told = [long.note(t * ABORT_STREAK_S / (ABORT_STREAK_MIN - 1)) for t in range(ABORT_STREAK_MIN + 3)]
    assert told == [False] * (ABORT_STREAK_MIN - 1) + [True] + [False] * 3
    assert long.lasted == ABORT_STREAK_S * (ABORT_STREAK_MIN + 2) / (ABORT_STREAK_MIN - 1)


def test_each_life_is_ready_at_its_own_first_work_and_a_life_that_never_got_there_is_left_out(tmp_path):
    (tmp_path / "logs").mkdir()
    # two lives of a Kafka Streams instance in one log (a restart appends to it), the second slow to restore; a third
    # that never got to work; a worker's first assignment
    (tmp_path / "logs" / "app-1.0.log").write_text(
        "2026-11-23T08:40:03.018+0000 [main] INFO KafkaStreams - stream-client [app-1] State transition from CREATED "
        "to REBALANCING\n"
        "2026-11-23T08:40:40.500+0000 [app-1-StreamThread-1] INFO KafkaStreams - stream-client [app-1] State "
        "transition from REBALANCING to RUNNING\n"
        "2026-11-23T08:40:55.000+0000 [app-1-StreamThread-1] INFO KafkaStreams - stream-client [app-1] State "
        "transition from REBALANCING to RUNNING\n"
        "2026-11-23T08:42:10.250+0000 [app-1-StreamThread-1] INFO KafkaStreams - stream-client [app-1] State "
        "transition from REBALANCING to RUNNING\n")
    (tmp_path / "logs" / "app-2.1.log").write_text(
        "2026-11-23 08:40:03,018 INFO [instance 2] instance 2 of app started at step 1\n"
        "2026-11-23 08:40:11,389 INFO [instance 2] assigned partitions [0, 1]: none from standby replicas\n")
    at = dt.datetime(2026, 11, 23, 8, 40, tzinfo=dt.UTC).timestamp()
    starts = [{"event": "start", "pid": 101, "t": at + 2, "log": "app-1.0.log"},
              {"event": "restart", "pid": 102, "t": at + 60, "log": "app-1.0.log"},
              {"event": "start", "pid": 103, "t": at + 180, "log": "app-1.0.log"},
              {"event": "start", "pid": 201, "t": at + 2, "log": "app-2.1.log"}]
    assert health.readiness(tmp_path, starts) == {"101": at + 40.5, "102": at + 130.25, "201": at + 11.389}


def test_a_team_app_s_own_log_layout_and_ready_line_are_read_like_the_reference_apps(tmp_path):
    """A Kafka Streams app on Kafka's own log4j layout (``[%d] %p %m (%c)%n``), and an app whose timestamps carry
    microseconds and a ``Z``: their errors are incidents, and each life is ready at the line its profile names."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "orders-1.0.log").write_text(
        "[2026-11-23 08:40:03,018] INFO Started OrdersApp on 4 threads (com.example.orders.OrdersApp)\n"
        "[2026-11-23 08:40:09,500] ERROR stream-thread [orders-1-StreamThread-2] Encountered the following exception "
        "during processing and the thread is going to shut down:  (org.apache.kafka.streams.processor.internals."
        "StreamThread)\n"
        "java.lang.IllegalStateException: order 77 seen twice\n"
        "\tat com.example.orders.Enricher.process(Enricher.java:41)\n")
    (tmp_path / "logs" / "orders-2.1.log").write_text(
        "2026-11-23T08:40:05.250123Z WARN rebalancing\n"
        "2026-11-23T08:40:06.250123Z INFO Started OrdersApp on 4 threads\n")
    at = dt.datetime(2026, 11, 23, 8, 40, tzinfo=dt.UTC).timestamp()
    local = dt.datetime(2026, 11, 23, 8, 40, 3, 18000).timestamp()  # the first log's lines: no offset, local time
    journal(tmp_path, "start", instance=1, subject="", step="0", log="orders-1.0.log", pid=101, t=local - 1)
    journal(tmp_path, "start", instance=2, subject="", step="1", log="orders-2.1.log", pid=202, t=at + 1)
    found = health.assess(tmp_path, ready=health.at_work("Started OrdersApp"))
    assert [(i["kind"], i["instance"]) for i in found["incidents"]] == [("error", 1)]
    assert found["exceptions"]["IllegalStateException"]["first"]["trace"][-1].endswith("(Enricher.java:41)")
    assert found["ready"] == {"101": local, "202": at + 6.25}  # to the millisecond, in UTC (Z)
    # without the profile's line neither life says it got to work
    assert health.assess(tmp_path)["ready"] == {}


def test_a_send_kafka_streams_handles_as_a_fenced_producer_is_no_incident_and_the_same_exception_alone_is(tmp_path):
    """Kafka Streams turns an OutOfOrderSequenceException on a send into a task migration (seen 27 s after a 30 s
    network cut of an instance); a producer of another app that logs the same exception at ERROR is in trouble."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "app-1.0.log").write_text(
        "2026-11-29T00:22:57.026+0000 [kafka-producer-network-thread | app-1-StreamThread-1-producer] ERROR "
        "RecordCollectorImpl - stream-thread [app-1-StreamThread-1] stream-task [0_3] Error encountered sending record "
        "to topic out for task 0_3 due to:\n"
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: The broker received an out of order sequence "
        "number.\n"
        "Written offsets would not be recorded and no more records would be sent since the producer is fenced, "
        "indicating the task may be migrated out\n")
    (tmp_path / "logs" / "app-2.1.log").write_text(
        "2026-11-29T00:22:58.000+0000 [main] ERROR Pipeline - send failed\n"
        "org.apache.kafka.common.errors.OutOfOrderSequenceException: The broker received an out of order sequence "
        "number.\n")
    journal(tmp_path, "start", instance=1, subject="", step="0", log="app-1.0.log", pid=101)
    journal(tmp_path, "start", instance=2, subject="", step="1", log="app-2.1.log", pid=202)
    found = health.assess(tmp_path)
    assert found["exceptions"]["OutOfOrderSequenceException"]["count"] == 2
    assert [(i["kind"], i["instance"]) for i in found["incidents"]] == [("error", 2)]
