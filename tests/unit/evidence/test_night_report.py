"""The report of a night: hours of evidence draw as a few hundred points a series, each dataset held once, every
fault of the program labelled on the time axis and the no-ops not drawn; the page stays a few MB."""

from __future__ import annotations

import json
import re

from support import night_evidence

from kafka_soak.evidence import RunEvidence, charts, report


def test_a_two_hour_night_draws_a_few_hundred_points_a_series_and_each_fault_on_the_axis(tmp_path):
    run_dir = night_evidence.write(tmp_path / "night", hours=2.0)
    evidence = RunEvidence.load(run_dir)
    assert len(evidence.timeline["produced"]) == 7200 and len(evidence.samples) == 16 * 1440  # what a night writes
    spec = charts.timeline_spec(evidence)
    data = spec["datasets"]
    lives = {(s["process"], s["pid"]) for s in evidence.samples}
    assert len(lives) == 2 * (5 + 3 * 12)  # each process and its supervisor; an instance lives 10 minutes
    # rows for the time each life ran, on the run's grid: as many as 16 processes living the whole night would have
    assert len(data["resources"]) <= 16 * (charts.RESOURCE_BUCKETS + 1) + len(lives)
    assert {"rss_mb_low", "rss_mb_high", "heap_mb_high", "cpu_high", "fds_low"} <= set(data["resources"][0])
    assert charts.bucket_s(evidence) == 25  # 7 200 s of program (and its drain's samples) in 300 buckets
    assert len(data["produced"]) <= charts.BUCKETS + 1 and len(data["committed"]) <= 3 * (charts.BUCKETS + 1)
    assert [r["n"] for r in data["produced"][1:-1]] == [1000.0] * (len(data["produced"]) - 2)  # records/s, averaged
    assert len(data["lag"]) <= charts.BUCKETS + 1 + 30 and len(data["disk"]) <= 4 * charts.BUCKETS
    faults = [s for s in evidence.steps if s["action"] != "noop"]
    assert [r["token"] for r in data["labels"]] == [s["token"] for s in faults] and len(faults) < len(evidence.steps)
    assert {r["token"][0] for r in data["labels"]} >= {"k", "p", "r", "s", "b", "n"}  # every kind on the axis
    as_text = json.dumps(spec)
    assert '"values"' not in as_text  # no panel carries rows of its own: each names a dataset of the spec
    html = report.render(run_dir)
    assert len(html.encode()) < 3_000_000, len(html.encode())
    assert re.search(r"random\(seed=\d+\)", html)  # the night's seed, to replay it
