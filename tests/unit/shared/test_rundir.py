"""Run directories: one per attempt of a DAG run, never shared by two run ids, never reached through a link."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.task_context import DAG, RUN, context

from kafka_soak import run_plan
from kafka_soak.evidence import RunEvidence, history
from kafka_soak.shared import resources, rundir


def test_run_ids_that_sanitize_alike_get_directories_of_their_own(root):
    names = {rundir.safe_name(r) for r in (RUN, RUN.replace(":", "_").replace("+", "_"), RUN.replace(":", "+"))}
    assert len(names) == 3
    assert rundir.safe_name("scheduled__2026-01-01") == "scheduled__2026-01-01"  # nothing to alter: as it is


@pytest.mark.parametrize("run_id", ["latest", ".hidden", "..", "x.attempt-2"])
def test_a_run_id_named_like_the_link_a_hidden_file_or_an_attempt_is_not_taken_as_one(root, run_id):
    name = rundir.safe_name(run_id)
    assert name not in ("latest", "..", ".") and not name.startswith(".") and not rundir.ATTEMPT.search(name)


def test_make_soak_finds_its_own_run_not_the_newest_of_the_dag(root):
    """A scheduled run of the same DAG started after ``make soak``'s: ``latest`` points at it, yet the CLI's Ctrl-C
    and verdict are its own run's (the one whose params.json names its launch)."""
    from kafka_soak.cli import own_run

    mine = rundir.for_context(context("manual__2026-11-23T12:00:00+00:00"), create=True)
    rundir.write_json(mine / rundir.PARAMS, {"run_id": "manual__2026-11-23T12:00:00+00:00", "launch": "abc"})
    other = rundir.for_context(context("scheduled__2026-11-23T12:00:05+00:00"), create=True)
    rundir.write_json(other / rundir.PARAMS, {"run_id": "scheduled__2026-11-23T12:00:05+00:00", "launch": ""})
    assert (root / DAG / "latest").resolve() == other
    assert own_run(root / DAG, "abc") == mine
    assert own_run(root / DAG, "nobody") is None and own_run(root / "soak_absent", "abc") is None


def append_many(path: str, writer: int) -> None:
    for n in range(40):
        rundir.append_jsonl(Path(path), {"writer": writer, "n": n, "details": ["x" * 1000] * 200})  # ~200 KB


def test_records_appended_by_runs_side_by_side_stay_whole(root):
    """alerts.jsonl is shared by every DAG's runs: records of ~200 KB (many writes each) from four processes at once
    are each read back whole."""
    from concurrent.futures import ProcessPoolExecutor

    path = root / "alerts.jsonl"
    with ProcessPoolExecutor(4) as pool:
        list(pool.map(append_many, [str(path)] * 4, range(4)))
    records = rundir.read_jsonl(path)
    assert sorted((r["writer"], r["n"]) for r in records) == [(w, n) for w in range(4) for n in range(40)]
    assert len(path.read_text().splitlines()) == 160


def test_the_previous_run_is_never_written_through_latest(root):
    first = rundir.for_context(context(), create=True)
    (first / "verdict.json").write_text("{}")
    second = rundir.for_context(context("latest"), create=True)
    assert second != first and second.parent == first.parent and not second.is_symlink()
    assert (root / DAG / "latest").resolve() == second
    assert list(second.iterdir()) == [] and (first / "verdict.json").exists()


def test_each_clear_is_a_fresh_attempt_and_keeps_the_earlier_ones(root):
    first = rundir.for_context(context(), create=True)
    (first / "program").mkdir()
    (first / "program" / "step-0.claim").write_text("{}")  # a claim that would block a re-run
    (first / "generator.json").write_text('{"state": "done"}')  # a "done" that would release await_generator
    second = rundir.for_context(context(clear_number=1), create=True)
    assert second.name == first.name + ".attempt-2" and list(second.iterdir()) == []
    assert (first / "generator.json").exists(), "an earlier attempt's evidence is kept"
    assert rundir.attempts(DAG, RUN) == [first, second]
    assert rundir.run_dir(DAG, RUN) == second  # the newest, for the UI and the overdue alert
    assert (root / DAG / "latest").resolve() == second
    # a task cleared on its own (check_params did not make a directory for attempt 3) works in the newest one
    assert rundir.for_context(context(clear_number=2)) == second


def test_a_link_where_an_attempt_would_go_is_refused(root, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (root / DAG).mkdir(parents=True)
    (root / DAG / rundir.attempt_name(RUN, 2)).symlink_to(outside)
    with pytest.raises(FileExistsError, match="is a link"):
        rundir.for_context(context(clear_number=1), create=True)


def test_the_report_and_history_show_attempts(root):
    for clear_number in (0, 1):
        run_dir = rundir.for_context(context(clear_number=clear_number), create=True)
        rundir.write_json(run_dir / "params.json", {"dag_id": DAG, "run_id": RUN, "attempt": clear_number + 1})
    second = RunEvidence.load(rundir.run_dir(DAG, RUN))
    assert second.attempt == 2 and second.other_attempts == [rundir.safe_name(RUN)]
    runs = history.scenarios(root)[DAG]
    assert sorted(r.attempt for r in runs) == [1, 2] and {r.run_id for r in runs} == {RUN}


def test_the_history_counts_each_app_s_reproduction_rate_over_its_runs(root):
    """Per version of a matrix (and per scenario app without one): runs, caught, passed, stalled, not judged."""
    rows = {"3.4.0": ("failed", {"stale_state": 2}), "4.3.1": ("passed", {})}
    outcomes = [rows, {**rows, "4.3.1": ("failed", {"stalled": 1, "unprocessed": 40})},
                {**rows, "3.4.0": ("passed", {})}]
    for n, outcome in enumerate(outcomes):
        run_dir = root / DAG / f"run-{n}"
        run_dir.mkdir(parents=True)
        rundir.write_json(run_dir / "params.json", {"dag_id": DAG, "run_id": f"run-{n}"})
        rundir.write_json(run_dir / "verdict.json", {
            "status": "failed", "anomalies": {}, "records": {},
            "matrix": [{"version": v, "label": f"Kafka Streams {v}", "status": status, "anomalies": found,
                        "records": {"output": 1}} for v, (status, found) in outcome.items()]})
    (root / DAG / "run-3").mkdir()
    rundir.write_json(root / DAG / "run-3" / "params.json", {"dag_id": DAG, "run_id": "run-3", "plan": {"app": "worker"}})
    table = {r.app: (r.runs, r.caught, r.passed, r.stalled, r.no_verdict) for r in history.rates(history.scenarios(root)[DAG])}
    assert table == {"Kafka Streams 3.4.0": (3, 2, 1, 0, 0), "Kafka Streams 4.3.1": (3, 1, 2, 1, 0),
                     "worker": (1, 0, 0, 0, 1)}
    page = history.render_history(root)
    assert '<tr data-app="Kafka Streams 4.3.1"><td><b>Kafka Streams 4.3.1</b></td><td class="num">3</td>' in page


def test_the_history_shows_each_night_s_growth_by_its_fastest_instance(root):
    """A row per night with, per resource, the app instance that rose fastest (a broker's growth is Kafka's: left out);
    a growth past its bounds stands out."""
    nights = {"night-1": [("instance-1", "rss_mb", 12.5, False), ("instance-2", "rss_mb", 30.0, False),
                          ("kafka-1", "rss_mb", 900.0, False), ("instance-2", "heap_mb", -4.0, False)],
              "night-2": [("instance-3", "rss_mb", 5650.7, True), ("instance-1", "threads", 2.0, False)]}
    for n, (name, rows) in enumerate(nights.items()):
        run_dir = root / DAG / name
        run_dir.mkdir(parents=True)
        rundir.write_json(run_dir / "params.json", {"dag_id": DAG, "run_id": name})
        rundir.write_json(run_dir / "program.json", {"t0": 1000.0 + n})
        rundir.write_json(run_dir / "verdict.json", {"status": "passed", "anomalies": {}, "records": {}, "growth": [
            {"process": p, "pid": 7, "resource": r, "unit": resources.JUDGED[r], "per_hour": rate, "rise": 1.0,
             "rising": True, "grows": grows} for p, r, rate, grows in rows]})
    runs = {r.run_id: r for r in history.scenarios(root)[DAG]}
    assert {k: (v["process"], v["per_hour"]) for k, v in runs["night-1"].growth.items()} == {
        "rss_mb": ("instance-2", 30.0)}
    assert list(runs["night-2"].growth) == ["rss_mb", "threads"]
    page = history.render_history(root)
    assert "RSS +30 MB/h" in page and 'class="bad" title="instance-3 (pid 7): rose 1.0 MB at 5650.7 MB/h">RSS +5650.7 MB/h' \
        in page and "threads +2 threads/h" in page


def test_the_next_run_stops_what_an_ended_run_left_running_and_leaves_a_live_one_alone(root):
    """Real detached processes registered by two earlier runs and an earlier attempt of this run, which got as far as
    starting its app (its teardowns run from its files: the instance stopped and judged). Airflow's answer to "is that
    DAG run over" (``ti.get_dagrun_state``, which needs a task supervisor) is the one stand-in."""
    import json

    import psutil

    from kafka_soak import reaper
    from kafka_soak.clients import subjects
    from kafka_soak.clients.instances import Instances
    from kafka_soak.infra.runtime.local import LocalProcesses

    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    runs = {"ended": "manual__ended", "running": "manual__running", RUN: RUN}
    plan = run_plan.check({"app_command": sleeper, "instances": 1, "program": "1"})
    names = {role: f"soak.test.{role}" for role in subjects.topics(plan)}
    cluster = {"backend": "local", "bootstrap_servers": "127.0.0.1:9", "topics": names,
               "subjects": [s.as_dict() for s in subjects.build(plan, names)]}
    dirs = {}
    for key, run_id in runs.items():
        dirs[key] = rundir.for_context(context(run_id), create=True)
        if key == RUN:  # provisioned, program started
            rundir.write_json(dirs[key] / "params.json", {"dag_id": DAG, "run_id": run_id, "plan": plan})
            rundir.write_json(dirs[key] / "cluster.json", cluster)
            Instances.for_run(dirs[key], cluster, plan).start(1, 0)
        else:
            rundir.write_json(dirs[key] / "params.json", {"dag_id": DAG, "run_id": run_id})
            LocalProcesses(dirs[key]).start("instance-1", sleeper, dirs[key] / "logs" / "i.log")
    pids = {key: LocalProcesses(d).record("instance-1").pid for key, d in dirs.items()}
    current = rundir.for_context(context(clear_number=1), create=True)  # a Clear of RUN: a new attempt
    try:
        reaped = reaper.reap_earlier(current, RUN, is_over=lambda run_id: run_id == "manual__ended")
        assert reaped == {dirs["ended"].name: ["instance-1"], dirs[RUN].name: ["instance-1"]}
        gone = [k for k, pid in pids.items() if not psutil.pid_exists(pid) or
                psutil.Process(pid).status() == psutil.STATUS_ZOMBIE]
        assert sorted(gone) == sorted(["ended", RUN])
        event = json.loads((dirs["ended"] / "events.jsonl").read_text().splitlines()[-1])
        assert event["event"] == "reaped" and event["processes"] == ["instance-1"] and current.name in event["why"]
        events = [json.loads(line) for line in (dirs[RUN] / "events.jsonl").read_text().splitlines()]
        assert [e["event"] for e in events] == ["start", "stop", "released", "torn-down"], "its teardowns left nothing to reap"
        assert events[-1]["instances"] == ["instance-1"] and current.name in events[-1]["why"]
        assert (dirs[RUN] / "health.json").exists()
        assert reaper.leftovers(dirs["running"]) == ["instance-1"]
    finally:
        for d in dirs.values():
            reaper.reap(d, "test teardown", timeout=5)


def test_nothing_of_an_attempt_starts_once_its_teardown_stopped_the_app(root):
    """A task still running when its run was marked failed (the drain replacing an instance) starts nothing after the
    teardown stopped the app; provision, run again by a task cleared on its own, opens the attempt again."""
    from kafka_soak import reaper, teardowns
    from kafka_soak.clients import subjects
    from kafka_soak.clients.instances import Instances

    plan = run_plan.check({"app_command": [sys.executable, "-c", "import time; time.sleep(120)"], "instances": 1,
                              "program": "1"})
    names = {role: f"soak.test.{role}" for role in subjects.topics(plan)}
    cluster = {"backend": "local", "bootstrap_servers": "127.0.0.1:9", "topics": names,
               "subjects": [s.as_dict() for s in subjects.build(plan, names)]}
    attempt = rundir.for_context(context(RUN), create=True)
    instances = Instances.for_run(attempt, cluster, plan)
    instances.start(1, 0)
    teardowns.stop_app(attempt, plan, cluster)
    assert not reaper.leftovers(attempt)
    with pytest.raises(rundir.AppClosed, match=f"not starting instance 1: the teardown of {attempt.name} has stopped"):
        instances.start(1, "drain")
    assert not reaper.leftovers(attempt) and rundir.read_jsonl(attempt / rundir.EVENTS)[-1]["event"] == "stop"
    rundir.reopen_app(attempt)
    try:
        assert instances.start(1, 1) is not None and reaper.leftovers(attempt) == ["instance-1"]
    finally:
        reaper.reap(attempt, "test teardown", timeout=5)
