"""What the drain counts as work the app has not finished: stalled partitions and backlogs (its wait on a real broker
is in component/test_drain_broker.py)."""

from __future__ import annotations

from kafka_soak.drain import backlog, stall_threshold_s, stalled_partitions, worked_off


def test_a_partition_stalls_when_it_has_not_moved_for_the_stall_time_and_still_lags():
    """At the drain's timeout: 0 lags and has not moved for 130 s (stalled at 120); 1 lags but moved 30 s ago (a
    backlog); 2 has not moved for long but is done."""
    positions = {0: (10, 50), 1: (40, 90), 2: (70, 70)}
    still = {0: (10, 1000.0), 1: (40, 1100.0), 2: (70, 900.0)}
    assert stalled_partitions(positions, still, now=1130.0, threshold_s=120.0) == [0]
    assert stalled_partitions(positions, still, now=1130.0, threshold_s=20.0) == [0, 1]


def test_a_backlog_is_one_the_group_works_off_within_another_drain():
    """At the pace the group committed during the drain, the rest must clear within another drain_timeout_s: an app a
    quota slows a little clears 1 800 left in about a minute; one fenced in a loop that commits a scrap now and then
    (500 in a 600 s drain, 18 200 left) would need six hours, and one that committed nothing never clears."""
    slowed = backlog("slowed", {0: 1800}, {0: 17_400}, 600.0)
    assert (slowed["records_per_s"], slowed["clears_in_s"]) == (29.0, 62.1) and worked_off(slowed, 600.0)
    fenced = backlog("fenced", {0: 18_200}, {0: 500}, 600.0)
    assert fenced["clears_in_s"] == 21_840.0 and not worked_off(fenced, 600.0)
    assert not worked_off(backlog("still", {0: 3}, {0: 0}, 600.0), 600.0)


def test_a_backlog_clears_when_its_slowest_partition_does():
    """Three partitions fly and one crawls: the group's pace would clear the 4 000 left in 104 s, but partition 3
    has 3 700 of them at 0.5 records/s (two hours): no worked-off backlog. A done partition that committed nothing
    does not hold the group back."""
    crawling = backlog("crawling", {0: 100, 1: 100, 2: 100, 3: 3700}, {0: 7000, 1: 7000, 2: 7000, 3: 300}, 600.0)
    assert crawling["lag"] == 4000 and crawling["records_per_s"] == 35.5
    assert crawling["partitions"][3] == {"lag": 3700, "committed": 300, "records_per_s": 0.5, "clears_in_s": 7400.0}
    assert crawling["clears_in_s"] == 7400.0 and not worked_off(crawling, 600.0)
    done = backlog("done", {0: 0, 1: 90}, {0: 0, 1: 900}, 600.0)
    assert done["clears_in_s"] == 60.0 and worked_off(done, 600.0)


def test_a_slow_healthy_app_is_not_stalled_before_a_few_of_its_commit_intervals():
    """The stall time is stall_timeout_s, or the whole drain if shorter, but at least three commit intervals: an app
    that commits once a minute has not stalled in a 30 s drain, nor in 120 s."""
    assert stall_threshold_s(120.0, 600.0, 0.1) == 120.0
    assert stall_threshold_s(120.0, 30.0, 0.1) == 30.0
    assert stall_threshold_s(120.0, 30.0, 60.0) == 180.0
    positions, still = {0: (10, 50)}, {0: (10, 1000.0)}
    assert stalled_partitions(positions, still, now=1130.0, threshold_s=stall_threshold_s(120.0, 130.0, 60.0)) == []
