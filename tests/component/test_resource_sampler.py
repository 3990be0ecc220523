"""The run's resource sampler on real processes of a run directory (the local runtime's, with their supervisors): a
process's memory and open files, a JVM's heap after its collections from the GC log the run's option makes it write,
the run directory's size, and the sampler's own life from provision's start to release's stop."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from support.waits import until

from kafka_soak.backends import kafka_jars
from kafka_soak.infra import resource_sampler
from kafka_soak.infra.runtime.local import LocalProcesses
from kafka_soak.shared import resources, rundir

HOLDER = """
import sys, time
kept = b"x" * (64 * 2**20)  # 64 MB, written: resident
files = [open(sys.argv[1]) for _ in range(20)]
print("ready", flush=True)
time.sleep(600)
"""
GROWER = """
public class Grower {
    public static void main(String[] args) throws Exception {
        java.util.List<byte[]> kept = new java.util.ArrayList<>();
        for (int round = 0; round < 6000; round++) {
            kept.add(new byte[1 << 20]);  // a megabyte more is live after each collection
            System.gc();
            System.out.println("round " + round);
            Thread.sleep(100);
        }
    }
}
"""


def collections(run_dir: Path, pid: int) -> int:
    path = run_dir / resources.DIR / resources.GC / f"{pid}.log"
    return path.read_text().count("Pause Full") if path.exists() else 0


def test_a_process_s_memory_and_files_and_a_jvm_s_heap_after_each_collection_are_sampled(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "kafka" / "node-1").mkdir(parents=True)
    (run_dir / "kafka" / "node-1" / "segment.log").write_bytes(b"\0" * 2**20)
    processes = LocalProcesses(run_dir)
    source = tmp_path / "Grower.java"
    source.write_text(GROWER)
    holder = processes.start("instance-1", [sys.executable, "-c", HOLDER, str(source)], run_dir / "logs" / "i1.log")
    grower = processes.start("kafka-1", [kafka_jars.java_executable(), resources.gc_option(run_dir), "-Xmx256m",
                                         str(source)], run_dir / "logs" / "k1.log")
    try:
        until(lambda: "ready" in (run_dir / "logs" / "i1.log").read_text(), "holder ready")
        sampler = resource_sampler.Sampler(run_dir)
        until(lambda: collections(run_dir, grower.pid) >= 3, "collections")
        sampler.sample_once(time.time())
        seen = collections(run_dir, grower.pid)
        until(lambda: collections(run_dir, grower.pid) >= seen + 5, "five more collections")
        sampler.sample_once(time.time())
    finally:
        for name in ("instance-1", "kafka-1"):
            processes.stop(name, timeout=10)
    samples = rundir.read_jsonl(run_dir / resources.DIR / resources.SAMPLES)
    by_name: dict[str, list[dict]] = {}
    for sample in samples:
        by_name.setdefault(sample["process"], []).append(sample)
    assert set(by_name) == {"instance-1", "instance-1.supervisor", "kafka-1", "kafka-1.supervisor"}
    first, second = by_name["instance-1"]
    assert first["pid"] == holder.pid and first["rss_mb"] >= 64 and first["fds"] >= 20 and first["heap_mb"] is None
    assert first["cpu"] is None and second["cpu"] is not None  # CPU is a rate: from the second sample of a life on
    jvm = by_name["kafka-1"]
    assert jvm[0]["threads"] > 5 and jvm[0]["heap_mb"] >= 3 and jvm[1]["heap_mb"] >= jvm[0]["heap_mb"] + 4, jvm
    supervisor = by_name["instance-1.supervisor"][0]
    assert supervisor["pid"] == processes.record("instance-1").supervisor and supervisor["rss_mb"] < 64
    [disk] = rundir.read_jsonl(run_dir / resources.DIR / resources.DISK)  # the first sample's, then every DISK_EVERY
    assert disk["broker-1_mb"] >= 1.0 and disk["run_dir_mb"] >= disk["broker-1_mb"]


def test_a_supervisor_s_cpu_is_its_own_not_that_of_the_process_it_reaped(tmp_path):
    """An instance that burns 2 s of CPU and fails, under a restart policy: once its supervisor reaped it (and waits
    out its backoff), the supervisor's CPU over the sample that saw it happen is the supervisor's own wait, not the
    instance's 2 s (which the kernel adds to its reaper's children's time)."""
    from kafka_soak.infra.runtime.spawn import Restart

    run_dir = tmp_path / "run"
    processes = LocalProcesses(run_dir)
    burner = "import sys, time\nprint('burning', flush=True)\nwhile time.process_time() < 2: pass\nsys.exit(1)"
    record = processes.start("instance-1", [sys.executable, "-c", burner], run_dir / "logs" / "i1.log",
                             restart=Restart(600, {"instance": 1, "log": "i1.log"}))
    try:
        until(lambda: "burning" in (run_dir / "logs" / "i1.log").read_text(), "the instance started")
        sampler = resource_sampler.Sampler(run_dir)
        sampler.sample_once(time.time())
        until(lambda: any(e["pid"] == record.pid for e in processes.registry.exits()), "the instance's exit")
        sampler.sample_once(time.time())
    finally:
        processes.stop("instance-1", timeout=10)
    first, second = [s for s in rundir.read_jsonl(run_dir / resources.DIR / resources.SAMPLES)
                     if s["process"] == "instance-1.supervisor"]
    assert second["pid"] == first["pid"] == record.supervisor
    assert second["cpu"] * (second["at"] - first["at"]) < 1.0, (first, second)  # CPU-seconds; the instance's were 2


def test_the_sampler_runs_from_its_start_to_its_stop_and_samples_itself(tmp_path):
    run_dir = tmp_path / "run"
    resource_sampler.start(run_dir, 1.0)
    resource_sampler.start(run_dir, 1.0)  # a retried provision: the one running goes on
    processes = LocalProcesses(run_dir)
    record = processes.record(resource_sampler.NAME)
    path = run_dir / resources.DIR / resources.SAMPLES
    try:
        until(lambda: path.exists() and len([s for s in rundir.read_jsonl(path)
                                             if s["process"] == resource_sampler.NAME]) >= 2, "two samples")
    finally:
        resource_sampler.stop(run_dir)
    assert not processes.is_alive(resource_sampler.NAME)
    own = [s for s in rundir.read_jsonl(path) if s["process"] == resource_sampler.NAME]
    assert {s["pid"] for s in own} == {record.pid} and all(s["rss_mb"] < 200 for s in own)
    assert json.loads((run_dir / "processes" / f"{resource_sampler.NAME}.json").read_text())["pid"] == record.pid
    assert "Traceback" not in (run_dir / rundir.LOGS / f"{resource_sampler.NAME}.log").read_text()
