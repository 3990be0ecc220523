"""bench/leak_night.py's reading of a run: the minute after an instance got to work at which the verdict's own rule
first says its leak grows, and never for a flat control."""

import sys

from support import ROOT

from kafka_soak.params import growth_bounds
from kafka_soak.shared import rundir

sys.path.insert(0, str(ROOT / "bench"))

import leak_night  # noqa: E402


def test_four_lives_are_three_rolling_restarts_in_two_hours_of_steps():
    steps = leak_night.program(4).split()
    assert len(steps) == 120 and [i for i, s in enumerate(steps) if s == "1"] == [0, 30, 31, 60, 61, 90, 91]
    assert leak_night.conf("worker", 1)["records"] == 20 * 60 * 30


def test_a_leak_is_caught_the_first_minute_the_rule_says_so_and_a_flat_control_never(tmp_path):
    bounds = growth_bounds({})  # a 10-minute warm-up; 200 MB/h and 100 MB of resident memory
    t0, every = 1_800_000_000.0, 5.0
    (tmp_path / "resources").mkdir()
    samples = []
    for i in range(int(40 * 60 / every)):
        at = t0 + i * every
        ready = at - t0 >= 30  # both got to work 30 s after their start
        for process, pid, rss in (("instance-1@worker", 11, 100 + (0.16 * (at - t0 - 30) if ready else 0)),
                                  ("instance-1@worker-no-leak", 12, 100.0)):
            samples.append({"at": at, "process": process, "pid": pid, "started": t0, "rss_mb": rss, "threads": 5,
                            "fds": 20, "heap_mb": None, "cpu": 0.1})
    for sample in samples:
        rundir.append_jsonl(tmp_path / "resources" / "samples.jsonl", sample)
    rundir.write_json(tmp_path / rundir.HEALTH, {"ready": {"11": t0 + 30, "12": t0 + 30}})
    (tmp_path / rundir.EVENTS).write_text("")
    lives = {life["process"]: life for life in leak_night.caught_after(tmp_path, bounds)}
    leak, control = lives["instance-1@worker"], lives["instance-1@worker-no-leak"]
    # 576 MB/h from 30 s on: the rise the rule counts (the last quarter's floor over the first's, three quarters of the
    # span) passes 100 MB some 14 minutes after the 10-minute warm-up
    assert leak["ready_after_s"] == 30.0 and leak["caught"]["resource"] == "rss_mb"
    assert leak["caught"]["minute"] == 24, leak["caught"]
    assert control["caught"] is None and control["most_rise"]["rss_mb"] == 0
