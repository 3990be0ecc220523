"""Validation at scale: the Spark + GX checker against a single-process Python checker, on the same history.

    python bench/validation.py --size quick   # 1M input records and as many outputs
    python bench/validation.py --size large   # 1M, then 10M

For each size: an Apache Kafka broker (backend local), a history with planted anomalies (``soak_history``), then the baseline
(``baseline_validator``) and the real Spark job (``spark-submit spark_jobs/validate_soak.py``, local[2], the
conf of the DAG's validate task), one after the other. Both must report the planted anomalies exactly.
Measured per checker: wall time, records/s, peak RSS of its process tree; for Spark also where the time
goes (the job logs ``phase <name>: <s> s``). Writes ``bench/results/validation.{json,md}``.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import baseline_validator
import common
import process_meter
import soak_history

from kafka_soak import run_plan
from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.checker import spark_kafka
from kafka_soak.checker.validate import CONF, JOB, driver_archive, job_args, shipped_modules, sized_conf
from kafka_soak.clients import subjects

SIZES = {"quick": (1_000_000,), "large": (1_000_000, 10_000_000)}
# The targets, by size: the Spark checker's time to the verdict at most this share of the baseline's.
TARGETS = {1_000_000: (3.0, "≤ 3 (fixed costs: a session, the suites' queries)"),
           10_000_000: (1.0, "≤ 1 (no slower than the baseline)")}
TIMEOUT_S = 2400
PHASE = re.compile(r"(?:phase (\w+):|(timeline) for the report in) ([\d.]+) s(?:, (\d+) Spark jobs)?")
GIB = 2**30


def child_env() -> dict[str, str]:
    plugins = str(common.ROOT / "plugins")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (plugins, os.environ.get("PYTHONPATH")))),
            "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONUNBUFFERED": "1"}


def topic_args(bootstrap: str, topics: dict[str, str]) -> list[str]:
    return ["--bootstrap", bootstrap, "--input-topic", topics["input"], "--output-topic", topics["output"],
            "--assertions-topic", topics["assertions"]]


def run_baseline(work: Path, bootstrap: str, topics: dict[str, str]) -> dict[str, Any]:
    log = work / "baseline.log"
    with children_cpu() as cpu:
        measured = process_meter.run([sys.executable, baseline_validator.__file__, *topic_args(bootstrap, topics)],
                                     log, child_env(), TIMEOUT_S)
    if measured.exit_code != 0:
        raise RuntimeError(f"baseline checker exited {measured.exit_code}; see {log}")
    result = json.loads(log.read_text().strip().splitlines()[-1])
    return {**result, "wall_s": measured.wall_s, "cpu_s": cpu["s"], "peak_rss_bytes": measured.peak_rss_bytes,
            "mean_load": round(measured.mean_load, 1), "log": str(log)}


@contextmanager
def children_cpu() -> Iterator[dict[str, float]]:
    """CPU seconds (user + system) of the child processes run inside the block, each tree waited for by its parent;
    in the yielded dict's ``s`` once the block ends."""
    before, spent = resource.getrusage(resource.RUSAGE_CHILDREN), {}
    yield spent
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent["s"] = round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1)


def reference_subjects(topics: dict[str, str]) -> list[dict[str, Any]]:
    """The reference worker's subject on ``topics`` (by role), as ``provision`` records it."""
    plan = run_plan.check({})
    return [s.as_dict() for s in subjects.build(plan, {role: topics.get(role, "") for role in subjects.topics(plan)})]


def spark_command(bootstrap: str, topics: dict[str, str], records: int, out: Path, conf: dict[str, str],
                  master: str = "local[2]", subjects: list[dict[str, Any]] | None = None) -> list[str]:
    """spark-submit of the validate job on one run's topics, as the DAG's validate task submits it, on ``master``:
    the reference app's output and assertions, or ``subjects`` as ``provision`` records them (a team's app's)."""
    cluster = {"bootstrap_servers": bootstrap, "topics": topics, "backend": "local",
               "subjects": subjects or reference_subjects(topics)}
    return submit_command(JOB, job_args(cluster, str(out), records), conf, master, "kafka-soak-validate-bench")


def submit_command(job: Path, args: list[str], conf: dict[str, str], master: str, name: str) -> list[str]:
    """spark-submit of ``job`` as the validate task ships the checker: ``conf``, Spark's Kafka source, its modules."""
    return [str(Path(sys.executable).parent / "spark-submit"), "--master", master,
            *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")),
            "--name", name, "--jars", ",".join(map(str, spark_kafka.resolve())),
            "--py-files", py_files(), str(job), *args]


@cache
def py_files() -> str:
    """The validate task's ``--py-files`` (``validate.shipped_modules``), made once for this benchmark's process."""
    shipped = ExitStack()
    atexit.register(shipped.close)
    return shipped.enter_context(shipped_modules())


def run_spark(work: Path, bootstrap: str, topics: dict[str, str], records: int,
              subjects: list[dict[str, Any]] | None = None, name: str = "spark") -> dict[str, Any]:
    """The validate job on the run's topics (``spark_command``), its evidence under ``work`` as ``name``: its verdict,
    time to it, phases, CPU seconds and peak RSS."""
    log, out = work / f"{name}.log", work / f"{name}-run"
    archive = driver_archive("local[2]", spark_kafka.resolve())  # mapped as the DAG's task maps it, once dumped
    command = spark_command(bootstrap, topics, records, out, {**sized_conf(records, archive), **CONF},
                            subjects=subjects)
    with children_cpu() as cpu:  # spark-submit's tree: each process waits for its own
        measured = process_meter.run(command, log, child_env(), TIMEOUT_S)
    archive.keep()
    verdict_file = out / "verdict.json"
    if measured.exit_code not in (0, 2, 3) or not verdict_file.exists():
        raise RuntimeError(f"spark job exited {measured.exit_code} without a verdict; see {log}")
    verdict = json.loads(verdict_file.read_text())
    text = log.read_text()
    phases: dict[str, float] = {}
    jobs: dict[str, int] = {}
    for name, timeline, seconds, count in PHASE.findall(text):
        phases[name or timeline] = phases.get(name or timeline, 0.0) + float(seconds)
        jobs[name or timeline] = jobs.get(name or timeline, 0) + int(count or 0)
    # Launch to the driver's first line: spark-submit, the JVM, the Python driver and its imports.
    phases["launch"] = float(re.search(r"driver started at ([\d.]+)", text).group(1)) - measured.started_at
    return {"status": verdict["status"], "anomalies": verdict["anomalies"], "records": verdict["records"],
            "wall_s": measured.wall_s, "to_verdict_s": verdict["validated_at"] - measured.started_at,
            "cpu_s": cpu["s"],
            "peak_rss_bytes": measured.peak_rss_bytes, "mean_load": round(measured.mean_load, 1),
            "phases": {k: round(v, 2) for k, v in phases.items()}, "jobs": jobs,
            "subjects": [{"label": m["label"], "status": m["status"], "anomalies": m["anomalies"]}
                         for m in verdict.get("matrix", [])],
            "log": str(log)}


def measure(records: int) -> dict[str, Any]:
    """One size: set the history up, run both checkers, check they agree with what was planted."""
    work = common.runs_dir(f"validation-{records}")
    history = soak_history.History.of(records)
    backend = LocalKafkaBackend(work)
    try:
        cluster = backend.provision({"input": history.partitions, "output": history.partitions, "assertions": 1},
                                    prefix=f"bench-{records}")
        started = time.monotonic()
        sent = soak_history.write(cluster.bootstrap_servers, cluster.topics, history)
        setup_s = time.monotonic() - started
        print(f"{records}: history written in {setup_s:.0f} s ({sent}, {history.partitions} partitions), "
              f"planted {history.planted}", flush=True)
        baseline = run_baseline(work, cluster.bootstrap_servers, cluster.topics)
        print(f"{records}: baseline {baseline['wall_s']:.1f} s", flush=True)
        spark = run_spark(work, cluster.bootstrap_servers, cluster.topics, records)
        print(f"{records}: spark {spark['wall_s']:.1f} s ({spark['phases']})", flush=True)
    finally:
        backend.release(None)
    for name, counts in (("baseline", baseline["anomalies"]), ("spark", spark["anomalies"])):
        found = {anomaly: n for anomaly, n in counts.items() if n}  # the checker also counts what was not planted
        if found != history.planted:
            raise RuntimeError(f"{records}: the {name} checker found {found}, planted {history.planted}")
    return {"records": records, "records_read": sent["input"] + sent["output"] + sent["assertions"],
            "partitions": history.partitions, "keys": history.keys, "planted": history.planted,
            "setup_s": round(setup_s, 1), "work_dir": str(work), "baseline": baseline, "spark": spark}


def us_per_record(run: dict[str, Any], wall_s: float) -> float:
    return wall_s / run["records_read"] * 1e6


def label(records: int) -> str:
    return f"{records / 1e6:g}M"


def size_figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Figures of one size, the time to the verdict judged against the size's target (``TARGETS``) if it has one."""
    spark, base, n = run["spark"], run["baseline"], label(run["records"])
    share, target = TARGETS.get(run["records"], (None, ""))
    return [
        common.figure(f"wall time to verdict, {n}", spark["to_verdict_s"], "s", base["wall_s"], target,
                      None if share is None else spark["to_verdict_s"] <= share * base["wall_s"],
                      "spark-submit start to verdict.json"),
        common.figure(f"wall time of the whole job, {n}", spark["wall_s"], "s", base["wall_s"], "", None,
                      "adds timeline.json and the JVM's exit"),
        common.figure(f"records/s, {n}", run["records_read"] / spark["to_verdict_s"], "records/s",
                      run["records_read"] / base["wall_s"], "", None, "input + output records read and judged"),
        common.figure(f"cost per record, {n}", us_per_record(run, spark["to_verdict_s"]), "µs",
                      us_per_record(run, base["wall_s"]), "", None),
        common.figure(f"CPU seconds per record, {n}", us_per_record(run, spark["cpu_s"]), "µs",
                      us_per_record(run, base["cpu_s"]), "≤ 1 (no more CPU per record)",
                      spark["cpu_s"] <= base["cpu_s"], "the whole job's process tree, timeline.json included"),
        common.figure(f"peak RSS of the process tree, {n}", spark["peak_rss_bytes"] / GIB, "GiB",
                      base["peak_rss_bytes"] / GIB, "", None, "JVM + Python driver + Python workers"),
    ]


def scale_figures(small: dict[str, Any], large: dict[str, Any]) -> list[dict[str, Any]]:
    """How cost per record and memory change from the small size to the large one."""
    step = f"{label(small['records'])} → {label(large['records'])}"
    cost = (us_per_record(large, large["spark"]["to_verdict_s"]) / us_per_record(small, small["spark"]["to_verdict_s"]),
            us_per_record(large, large["baseline"]["wall_s"]) / us_per_record(small, small["baseline"]["wall_s"]))
    rss = (large["spark"]["peak_rss_bytes"] / small["spark"]["peak_rss_bytes"],
           large["baseline"]["peak_rss_bytes"] / small["baseline"]["peak_rss_bytes"])
    return [
        common.figure(f"cost per record, {step}", cost[0], "×", cost[1], "≤ 1 (no dearer at scale)", cost[0] <= 1),
        common.figure(f"peak RSS, {step}", rss[0], "×", rss[1], "bounded: < 2× for 10× the records", rss[0] < 2),
    ]


PHASES = (("launch", "spark-submit, JVM and Python driver start"), ("session", "SparkSession"),
          ("read", "Kafka read + JSON parse, cached"), ("frames", "anomaly frames, cached"),
          ("gx_setup", "GX import and context"), ("suites", "GX suites"), ("data_docs", "Data Docs"),
          ("timeline", "timeline.json (report)"))


def phase_table(runs: list[dict[str, Any]]) -> str:
    head = "| phase | " + " | ".join(label(r["records"]) for r in runs) + " |"
    rows = [head, "|---|" + "---|" * len(runs)]
    for key, what in PHASES:
        cells = []
        for r in runs:
            seconds = r["spark"]["phases"].get(key)
            share = 100 * seconds / r["spark"]["wall_s"] if seconds is not None else None
            jobs = r["spark"].get("jobs", {}).get(key)
            cells.append("—" if seconds is None else f"{seconds:.1f} s ({share:.0f} %)"
                         + (f", {jobs} Spark jobs" if jobs else ""))
        rows.append(f"| {what} (`{key}`) | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def largest_phase(run: dict[str, Any]) -> str:
    key, seconds = max(((k, run["spark"]["phases"].get(k, 0.0)) for k, _ in PHASES), key=lambda kv: kv[1])
    return f"{label(run['records'])}: `{key}` {seconds:.0f} s of {run['spark']['wall_s']:.0f} s"


def body(runs: list[dict[str, Any]]) -> str:
    setup = "\n".join(f"- {label(r['records'])}: {r['partitions']} partitions per topic, {r['keys']} keys, history "
                      f"written in {r['setup_s']:.0f} s, planted {r['planted']}; mean 1-min load average during the "
                      f"baseline {r['baseline']['mean_load']}, during Spark {r['spark']['mean_load']}" for r in runs)
    fixed = ", ".join(f"{sum(r['spark']['phases'].get(k, 0.0) for k in ('launch', 'session', 'gx_setup')):.0f} s at "
                      f"{label(r['records'])}" for r in runs)
    return f"""Both checkers read the same history from the Apache Kafka broker and reported exactly the planted anomalies
(the benchmark stops otherwise). Spark: `spark-submit spark_jobs/validate_soak.py`, `local[2]`, the DAG's conf
(default 1 GiB driver). Baseline: `bench/baseline_validator.py`, one Python process, confluent-kafka + dicts/sets.
Peak RSS is the sum over each checker's process tree, sampled every {process_meter.SAMPLE_EVERY_S} s. The
machine is shared: a load average above 2 means the checker had less than the two cores.

{setup}

Where the Spark job's time goes (seconds, share of its wall time); largest: {"; ".join(map(largest_phase, runs))}.

{phase_table(runs)}

What limits the figures:
- Kafka read: the baseline reads each partition from its low to its high watermark with confluent-kafka, one
  partition at a time; Spark reads with its own Kafka source (the JVM's Kafka client, `read_committed`), two
  partitions at a time (one task per partition on `local[2]`), and parses the JSON in the JVM into the columnar
  cache: no Python worker touches a record.
- Anomaly frames: one hash aggregation by id over inputs and outputs (2N rows in, a row per id out: counts and
  where the id's first output sits, all fixed-width so Spark does not sort), a broadcast of the few ids the run
  got wrong to the outputs, one window by key over the outputs (N rows, a shuffle and a sort: the seq order the
  reordered check needs) and the distinct (key, assigned id) pairs, reduced where the outputs are read, for both
  id-reuse frames; shuffle partitions sized to the run (`ValidateOperator`: one per 250 000 records, at least 8).
  They are computed and cached once; the GX suites then only scan them.
- GX suites: about a hundred small Spark jobs (GX's metrics, a few per expectation), some 0.1 s each whatever the
  run's size.
- Memory: the driver's heap is fixed (1 GiB); what grows with the run is the cache (spilled to disk past the
  heap's share) and the Spark Kafka source's pools, which the job empties after a second (at 10M records,
  167 partitions a topic, they exhausted the heap before).
- Fixed costs (launch, session, GX import: {fixed}) do not depend on the size and weigh on small runs;
  like every figure here they swing with the machine's load (the load averages above): with two cores
  shared, a run's ratios hold for that run, not beyond it.
- `timeline.json` (the report's data, written after the verdict) is outside "to verdict" and inside "the
  whole job".
"""


def main() -> int:
    size = common.parse_size(__doc__.splitlines()[0])
    runs, missing = [], []
    for records in SIZES[size]:
        try:
            runs.append(measure(records))
        except (RuntimeError, TimeoutError) as exc:  # a size that does not fit or finish is reported, not hidden
            print(f"{records}: not measured: {exc}", flush=True)
            missing.append({"records": records, "error": str(exc)})
    if not runs:
        return 1
    report(size, runs, missing)
    return 1 if missing else 0


def report(size: str, runs: list[dict[str, Any]], missing: list[dict[str, Any]]) -> None:
    """The figures, tables and findings of the measured sizes, into ``bench/results/validation.{json,md}``."""
    figures = [f for run in runs for f in size_figures(run)]
    if len(runs) > 1:
        figures += scale_figures(runs[0], runs[-1])
    text = body(runs) + "".join(f"\n**Not measured: {label(m['records'])}**: {m['error']}\n" for m in missing)
    common.write_results("validation", "Validation at scale", size, figures, text,
                         {"versions": common.versions(), "runs": runs, "not_measured": missing})


if __name__ == "__main__":
    sys.exit(main())
