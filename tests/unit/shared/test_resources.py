"""The verdict on growth (shared.resources): a leak that keeps rising past its bounds is named with its rate, its rise
and the sample that shows it; a collector's saw-tooth, a warm-up, a process restarted and a broker are not a leak."""

from __future__ import annotations

import random

from kafka_soak.params import GROWTH_DEFAULTS, growth_bounds
from kafka_soak.shared import resources

BOUNDS = growth_bounds({"warmup_s": 60, "per_hour": {"rss_mb": 100}, "total": {"rss_mb": 20}})


def life(process: str, pid: int, started: float, rss: list[float], every: float = 5.0, **others: list[float]) -> list:
    """Samples of one process life, one every ``every`` seconds from its start."""
    return [{"at": started + i * every, "process": process, "pid": pid, "started": started, "rss_mb": value,
             "threads": others.get("threads", [20] * len(rss))[i], "fds": 50, "heap_mb": None, "cpu": 0.1}
            for i, value in enumerate(rss)]


def test_a_leak_that_keeps_rising_past_both_bounds_grows_and_is_said_with_its_rate():
    # 300 MB + 0.1 MB/s (360 MB/h) for 10 minutes after a minute's warm-up; a saw-tooth of +-15 MB on top
    rss = [300 + 0.1 * 5 * i + (15 if i % 2 else -15) for i in range(132)]
    [row] = [r for r in resources.growth(life("instance-2", 41, 1000.0, rss), BOUNDS) if r["resource"] == "rss_mb"]
    assert row["grows"] and row["rising"] and row["process"] == "instance-2" and row["pid"] == 41
    assert 340 < row["per_hour"] < 380 and 40 < row["rise"] < 60
    assert row["since"] == 1060.0 and row["until"] == 1000.0 + 131 * 5 and row["last"] == rss[-1]
    assert resources.describe(row).startswith("instance-2 (pid 41): RSS rose ")
    assert "(bound 100 MB/h and 20 MB in all)" in resources.describe(row)


def test_a_saw_tooth_a_warm_up_and_a_slow_rise_do_not_grow():
    rng = random.Random(7)
    flat = [400 + rng.uniform(-60, 60) for _ in range(132)]  # a collector's saw-tooth around a level
    warm = [100 + 3 * i if i < 12 else 136 for i in range(132)]  # climbs in the first minute (warm-up) only
    slow = [300 + 0.01 * 5 * i for i in range(132)]  # keeps rising, 36 MB/h: under the rate's bound
    rows = resources.growth(life("instance-1", 1, 0.0, flat) + life("instance-2", 2, 0.0, warm)
                            + life("instance-3", 3, 0.0, slow), BOUNDS)
    assert {r["process"] for r in rows} == {"instance-1", "instance-2", "instance-3"}
    assert not any(r["grows"] for r in rows), [r for r in rows if r["grows"]]
    assert [r["rising"] for r in rows if r["process"] == "instance-3" and r["resource"] == "rss_mb"] == [True]


def test_each_life_is_judged_on_its_own_and_the_brokers_only_when_asked():
    leak = [200 + 0.5 * i for i in range(132)]
    restarted = life("instance-1", 10, 0.0, leak[:60]) + life("instance-1", 11, 300.0, leak[:60])
    broker = life("kafka-1", 5, 0.0, leak)
    rows = resources.growth(restarted + broker, BOUNDS)
    assert {(r["process"], r["pid"]) for r in rows} == {("instance-1", 10), ("instance-1", 11)}
    assert all(r["since"] >= {10: 60.0, 11: 360.0}[r["pid"]] for r in rows)
    assert resources.growth(life("instance-1.supervisor", 12, 0.0, leak), BOUNDS) == []  # the suite's, not the app's
    judged = resources.growth(broker, {**BOUNDS, "brokers": True})
    assert [(r["process"], r["resource"], r["grows"]) for r in judged if r["resource"] == "rss_mb"] == \
        [("kafka-1", "rss_mb", True)]


def test_a_life_is_judged_until_the_suite_asked_it_to_stop_not_over_its_shutdown():
    # a leak to 112 MB whose last sample, taken while the process shut down, fell to 42 (seen in a run: a Python
    # worker gives its memory back as it exits)
    leak = life("instance-1", 7, 0.0, [20 + 0.5 * i for i in range(131)] + [42.0])
    events = [{"event": "start", "pid": 7, "t": 0.0}, {"event": "stop", "pid": 7, "asked": 652.0, "t": 656.0},
              {"event": "kill", "pid": 8, "asked": 10.0, "t": 10.2}]
    asked = resources.ends(events)
    assert asked == {7: [652.0], 8: [10.0]}
    [row] = [r for r in resources.growth(leak, BOUNDS, asked) if r["resource"] == "rss_mb"]
    assert row["grows"] and row["until"] == 650.0 and row["last"] == 20 + 0.5 * 130
    [unended] = [r for r in resources.growth(leak, BOUNDS) if r["resource"] == "rss_mb"]
    assert not unended["rising"]  # what the shutdown's sample alone would have made of it
    # the same pid given out again to a later life: that life ends at its own request
    reused = life("instance-1", 7, 1000.0, [20 + 0.5 * i for i in range(40)])
    later = [r for r in resources.growth(leak + reused, BOUNDS, {7: [652.0, 1150.0]}) if r["resource"] == "rss_mb"]
    assert [(r["since"], r["until"]) for r in later] == [(60.0, 650.0), (1060.0, 1145.0)]


def test_the_warm_up_begins_when_a_life_got_to_work():
    # a JVM that climbs for its first 400 s while it joins its group and restores its state, then holds: judged from
    # 60 s after its start it keeps rising; judged from 60 s after it got to work (400 s), it holds
    starting = life("instance-1", 9, 0.0, [100 + min(i, 80) for i in range(132)])
    [from_start] = [r for r in resources.growth(starting, BOUNDS) if r["resource"] == "rss_mb"]
    assert from_start["grows"] and from_start["since"] == 60.0
    [from_ready] = [r for r in resources.growth(starting, BOUNDS, ready={"9": 400.0}) if r["resource"] == "rss_mb"]
    assert not from_ready["rising"] and from_ready["since"] == 460.0
    # a readiness before this life began is another life's
    [other] = [r for r in resources.growth(starting, BOUNDS, ready={"9": -500.0}) if r["resource"] == "rss_mb"]
    assert other["since"] == 60.0


def test_a_life_too_short_after_its_warm_up_is_not_judged():
    assert resources.growth(life("instance-1", 1, 0.0, [100 + i for i in range(19)]), BOUNDS) == []


def test_threads_that_pile_up_grow_as_memory_does():
    threads = [20 + i // 4 for i in range(132)]  # a thread every 20 s: 180 an hour
    rows = resources.growth(life("instance-1", 1, 0.0, [300] * 132, threads=threads), BOUNDS)
    assert [(r["resource"], r["grows"]) for r in rows] == [("rss_mb", False), ("threads", True), ("fds", False)]


def test_the_bounds_left_out_of_the_param_keep_their_defaults():
    assert BOUNDS["per_hour"] == {**GROWTH_DEFAULTS["per_hour"], "rss_mb": 100}
    assert BOUNDS["total"]["heap_mb"] == GROWTH_DEFAULTS["total"]["heap_mb"] and BOUNDS["brokers"] is False


def test_the_heap_after_the_last_collection_is_read_from_a_gc_log():
    lines = ["[2026-11-28T15:17:07.139+0000] Using G1",
             "[2026-11-28T15:17:08.001+0000] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->8M(256M) 3.120ms",
             "[2026-11-28T15:17:09.512+0000] GC(1) Pause Young (Concurrent Start) (G1 Humongous Allocation) "
             "1G->512M(2G) 9.001ms",
             "[2026-11-28T15:17:09.600+0000] GC(2) Concurrent Mark Cycle"]
    assert resources.heap_after_gc(lines[:2]) == 8.0
    assert resources.heap_after_gc(lines) == 512.0
    assert resources.heap_after_gc(lines[:1]) is None


def test_hours_of_samples_come_down_to_buckets_that_keep_each_spike():
    points = [(float(t), 100.0) for t in range(7200)]
    points[5000] = (5000.0, 900.0)
    down = resources.downsampled(points, 300)
    assert len(down) == 300 and max(high for _, _, high in down) == 900.0
    assert resources.downsampled(points[:10], 300) == [(t, v, v) for t, v in points[:10]]


def test_no_gc_log_where_the_jvm_option_cannot_name_the_path(tmp_path):
    assert resources.gc_option(tmp_path / "run") == f"-Xlog:gc:file={tmp_path}/run/resources/gc/%p.log:time"
    assert (tmp_path / "run" / "resources" / "gc").is_dir()
    assert resources.gc_option(tmp_path / "a run:1") is None
