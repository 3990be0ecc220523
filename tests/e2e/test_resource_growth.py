"""End to end: what the run's processes use over a run, and anomaly resource_growth. A planted leak (bug switch
``leak``) is caught, with the resource, the instance, the rate and the sample that shows it; the same app without the
switch, beside it in the same run (param variants: same input, program and machine), passes. The worker's run and the
Kafka Streams app's go side by side (``leak_runs``), so they cost about one run's time. Warm-up and bounds are
shortened to a minute's run (the params' defaults are a night's).

Each life is judged from a warm-up after it got to work (its first assignment; Kafka Streams' RUNNING), not after its
start: on a busy machine a Kafka Streams JVM took 41 s from its start to RUNNING, its threads and open files rising all
the while (a control judged from its start failed on them). So the load begins once the app is at work (``w1``), and
the app processes it at the generator's pace however long its start took.

The leaks are far from the bounds either way: the worker keeps 16 KB a record (100 records/s: its resident memory rose
50 MB at 5.6 GB/h against bounds of 20 MB and 300 MB/h, the control's not at all; a life is judged until the suite
asked it to stop, as a worker shutting down gives its memory back). Kafka Streams keeps an open iterator a record,
which holds a copy of the keys its partition's cache has: over 1 500 keys (about 250 cached per partition) at 200
records/s its heap after GC rose 36, 90 and 51 MB (3.4 to 10.8 GB/h) in three runs against 10 MB and 200 MB/h, the
control's 2 MB (over 300 keys the leak's rise was 11 and 20 MB in two runs and under its bound in a third: heap after
GC moves only when the JVM collects). A Kafka Streams JVM's resident memory grows for minutes on its own (heap G1 grows
into, JIT, RocksDB), and the leak's with its heap, so that run judges the heap alone."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.soak_runs import soak

from kafka_soak.shared import resources

pytestmark = pytest.mark.xdist_group(name="resource-growth")

# 100 records/s for 50 s from when the app is at work (``w1``, in the leak and its control; load that came while a slow
# machine still started the app would be a backlog processed inside the warm-up: seen, 13 s late, a rise of 37 MB judged
# as no growth): the worker keeps 16 KB of each; its control beside it; each sampled every second, judged from 10 s
# after its first assignment
LEAK_RUN = {"program": "1 w1 0 0 0 0", "interval_s": 10, "records": 5000, "keys": 300, "partitions": 4,
            "phases": [{"records": 5000, "after_step": 1, "rate": 100}],
            "sample_interval_s": 1, "bug": "leak", "variants": [{"name": "no-leak", "bug": "none"}],
            "resource_growth": {"warmup_s": 10, "per_hour": {"rss_mb": 300}, "total": {"rss_mb": 20}}}
# 200 records/s for 80 s over 1 500 keys: an open iterator each; the control's heap flat after its first seconds.
# Resident memory is not judged here (bounds out of reach): see above.
STREAMS_LEAK_RUN = {**LEAK_RUN, "app": "streams", "program": "1 w1 0 0 0 0 0 0 0", "records": 16_000, "keys": 1500,
                    "phases": [{"records": 16_000, "after_step": 1, "rate": 200}],
                    "resource_growth": {"warmup_s": 5, "per_hour": {"heap_mb": 200, "rss_mb": 1_000_000},
                                        "total": {"heap_mb": 10, "rss_mb": 1_000_000}}}


@pytest.fixture(scope="module")
def leak_runs(runs_dir: Path) -> SimpleNamespace:
    """The worker with bug switch leak beside its control, and the Kafka Streams app with it beside its control, each
    run in a runs directory of its own, side by side."""
    with ThreadPoolExecutor(2) as pool:
        worker = pool.submit(soak, runs_dir / "worker-leak", app="worker", **LEAK_RUN)
        streams = pool.submit(soak, runs_dir / "streams-leak", **STREAMS_LEAK_RUN)
        return SimpleNamespace(worker=worker.result(), streams=streams.result())


def caught_beside_control(run: tuple, leak: str, control: str) -> dict:
    """The run failed on the leak's growth alone; its control passed; the leak's one growth sample."""
    code, run_dir, verdict = run
    table = {row["version"]: row for row in verdict["matrix"]}
    assert table[leak]["status"] == "failed", table[leak]["anomalies"]
    assert {k: v for k, v in table[leak]["anomalies"].items() if v} == {"resource_growth": 1}
    assert table[control]["status"] == "passed", table[control]["anomalies"]
    assert code == 1 and verdict["status"] == "failed"
    [sample] = verdict["samples"]["resource_growth"]
    return sample


def test_the_worker_s_planted_leak_is_caught_with_its_rate_and_the_worker_without_it_passes(leak_runs):
    sample = caught_beside_control(leak_runs.worker, "worker", "worker-no-leak")
    assert (sample["process"], sample["resource"]) == ("instance-1@worker", "rss_mb")
    assert sample["per_hour"] > 1000 and sample["rise"] > 40, sample  # 16 KB a record at 100 records/s: 5.6 GB/h
    _, run_dir, verdict = leak_runs.worker
    samples = [json.loads(line) for line in (run_dir / "resources" / "samples.jsonl").read_text().splitlines()]
    sampled = {s["process"] for s in samples}
    assert {"instance-1@worker-no-leak", "instance-1@worker-no-leak.supervisor", "kafka-1", "generator",
            "resource-sampler"} <= sampled, sampled
    broker = [s for s in samples if s["process"] == "kafka-1"]
    assert broker[-1]["heap_mb"] is not None and broker[-1]["threads"] > 20  # a JVM's heap from its GC log
    control = [g for g in verdict["growth"] if g["process"] == "instance-1@worker-no-leak" and g["resource"] == "rss_mb"]
    assert control and not control[0]["grows"], verdict["growth"]  # judged, and within its bounds
    report = (run_dir / "report.html").read_text()
    assert "Resources: RSS of each process" in report and "resources/samples.jsonl" in report
    assert resources.describe(sample).startswith("instance-1@worker (pid ")


def test_the_kafka_streams_app_s_leaked_iterators_are_caught_in_its_heap_beside_a_control_that_passes(leak_runs):
    sample = caught_beside_control(leak_runs.streams, "4.3.1", "4.3.1-no-leak")
    assert (sample["process"], sample["resource"]) == ("instance-1@4.3.1", "heap_mb") and sample["rise"] > 10, sample
    _, run_dir, verdict = leak_runs.streams
    ready = json.loads((run_dir / "health.json").read_text())["ready"]
    starts = [e for e in map(json.loads, (run_dir / "events.jsonl").read_text().splitlines()) if e["event"] == "start"]
    assert sorted(ready) == sorted(str(e["pid"]) for e in starts), (ready, starts)  # each life's RUNNING found
    [control] = [g for g in verdict["growth"] if g["process"] == "instance-1@4.3.1-no-leak" and g["resource"] == "heap_mb"]
    assert control["since"] >= ready[str(control["pid"])] + 5 and not control["grows"], control  # judged once running
    logs = [p.read_text() for p in (run_dir / "logs").glob("*-app-*.log")]
    assert sorted("bug=leak" in text for text in logs) == [False, True] and any("bug=none" in text for text in logs)
