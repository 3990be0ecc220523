"""A night's soak on this machine, and what must hold of it: a pass on every record, and the suite's own processes,
evidence and report holding their size from the first hour to the second.

    python bench/night_soak.py --size large   # make soak SCENARIO=soak_nightly: 2 hours at 1 000 records/s
    python bench/night_soak.py --size quick   # the same scenario for 20 minutes (1 200 000 records)
    python bench/night_soak.py --size large --faults toggle,kill,stall,pause,broker,instance-cut   # drawn from these
    python bench/night_soak.py --size large --conf '{"streams_version": "3.7.2"}'   # params beside the scenario's
    python bench/night_soak.py --from RUN_DIR --watched FILE   # the figures of a soak started by hand, FILE from:
    python bench/night_soak.py --watch PID --out FILE          # PID: the soak's `python -m kafka_soak.cli soak`

The run samples its own processes (``resources/samples.jsonl``: the apps, the brokers, the generator, the sampler,
every supervisor) and its disk (``resources/disk.jsonl``). What it cannot sample is the process that runs it: the
CLI, ``airflow dags test`` (the DAG's tasks, their deferred steps' triggers) and what they start (Kafka's tools,
spark-submit); this benchmark samples that tree every 30 s beside the run. The suite's processes are those two
sets less the apps and the brokers (the verdict's ``resource_growth`` judges the apps; a broker's growth is
Kafka's). A process is compared with itself: the level it held in the second hour of load (the median of its
samples) against the first's (each life that lived through both); a task the runner runs holds a few more files while
it runs, which moves the most a process held in an hour but not its level. Writes ``bench/results/night_soak.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import common
import psutil
from support.browser import CHARTS_DRAWN, headless_chromium

from kafka_soak.admission import load_scenario
from kafka_soak.cli import SCENARIOS_DIR
from kafka_soak.infra import resource_sampler
from kafka_soak.shared import resources, rundir

SIZES = {"quick": 1_200_000, "large": 7_200_000}  # records at the scenario's 1 000 records/s
WATCH_INTERVAL_S = 30.0
HOUR_S = 3600.0
BOUND = 1.1  # the second hour against the first
OPENINGS = 3
CHECKER_MIB = 2048  # what kafka_soak.run_size leaves the checker at 10M records beside a run
NOT_SUITE = (resources.APP_PREFIX, "kafka-")  # the apps' and the brokers' lives, judged elsewhere


def kind(proc: psutil.Process) -> str:
    """What a process of the soak's own tree is, by its command line."""
    command = " ".join(proc.cmdline())
    for marker, name in (("kafka_soak.cli", "cli"), ("dags test", "airflow dags test"), ("spark", "spark"),
                         ("java", "java tool")):
        if marker in command:
            return name
    return proc.name()


def watch(root: int, out: Path, stop: threading.Event | None = None) -> None:
    """Sample ``root`` and its descendants every ``WATCH_INTERVAL_S`` into ``out`` (JSON lines, as the run's own
    samples) until ``root`` ends (or ``stop`` is set)."""
    top = psutil.Process(root)
    while top.is_running() and not (stop and stop.is_set()):
        at = time.time()
        for proc in [top, *top.children(recursive=True)]:
            try:
                with proc.oneshot():
                    row = {"at": round(at, 3), "process": kind(proc), "pid": proc.pid,
                           "started": round(proc.create_time(), 2), "rss_mb": round(proc.memory_info().rss / 2**20, 1),
                           "fds": proc.num_fds(), "threads": proc.num_threads()}
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                continue
            rundir.append_jsonl(out, row)
        time.sleep(WATCH_INTERVAL_S)


def suite_lives(run_dir: Path, watched: Path) -> dict[tuple[str, int, float], list[dict[str, Any]]]:
    """Each life of a suite process, its samples in time order: the run's own of its supervisors, sampler and
    generator, and the watched tree's."""
    own = [r for r in rundir.read_jsonl(run_dir / resources.DIR / resources.SAMPLES)
           if not r["process"].startswith(NOT_SUITE) or r["process"].endswith(resources.SUPERVISOR)]
    return resources.lives(own + rundir.read_jsonl(watched))


def load_start(run_dir: Path) -> float:
    """When the load began: the generator's start."""
    return min(r["started"] for r in rundir.read_jsonl(run_dir / resources.DIR / resources.SAMPLES)
               if r["process"] == "generator")


def hours_compared(lives: dict[tuple[str, int, float], list[dict[str, Any]]], t0: float,
                   measure: str) -> list[dict[str, Any]]:
    """Per life that lived through both hours of load: the level of ``measure`` it held in each (the median of its
    samples: a task the runner runs for a minute holds a few more files meanwhile, which is no growth; a leak moves
    the level), their ratio, and the most it held in each."""
    rows = []
    for (name, pid, _), samples in lives.items():
        first = [s[measure] for s in samples if t0 <= s["at"] < t0 + HOUR_S and s.get(measure) is not None]
        second = [s[measure] for s in samples if t0 + HOUR_S <= s["at"] < t0 + 2 * HOUR_S and s.get(measure) is not None]
        if first and second:
            level = statistics.median(first), statistics.median(second)
            rows.append({"process": name, "pid": pid, "first": level[0], "second": level[1],
                         "ratio": round(level[1] / level[0], 3), "most": [max(first), max(second)]})
    return sorted(rows, key=lambda r: -r["ratio"])


def checker_peak_mb(watched: Path) -> float | None:
    """The most the checker's process tree held at once (spark-submit, its JVM, the Python driver), as the watch
    sampled it (every 30 s: a floor of its peak)."""
    at: dict[float, float] = {}
    for row in rundir.read_jsonl(watched):
        if row["process"] == "spark":
            at[row["at"]] = at.get(row["at"], 0.0) + row["rss_mb"]
    return max(at.values(), default=None)


def disk_per_record(run_dir: Path, t0: float, rate: float) -> dict[str, dict[str, float]]:
    """Bytes per record the run directory grew by in each hour of load: Kafka's logs (every replica), and the rest
    (the evidence and the apps' state), from the run's disk samples (every 30 s) at a constant ``rate``."""
    rows = rundir.read_jsonl(run_dir / resources.DIR / resources.DISK)

    def at(t: float) -> dict[str, float]:
        row = min(rows, key=lambda r: abs(r["at"] - t))
        kafka = sum(v for k, v in row.items() if k.startswith("broker-"))
        return {"kafka": kafka, "rest": row["run_dir_mb"] - kafka}

    marks = [at(t0 + h * HOUR_S) for h in (0, 1, 2)]
    return {part: {f"hour {h + 1}": round((marks[h + 1][part] - marks[h][part]) * 2**20 / (rate * HOUR_S), 1)
                   for h in (0, 1)} for part in ("kafka", "rest")}


def sizes(run_dir: Path) -> dict[str, int]:
    """The disk the run directory takes once the run has ended, in bytes (as the run's own disk samples count it:
    ``resource_sampler.size_mb``): Kafka's logs, the apps' state stores, and the evidence (the rest: logs, journal,
    samples, verdict, report)."""
    def size(path: Path) -> int:
        return round(resource_sampler.size_mb(path) * 2**20)

    parts = {"kafka": size(run_dir / "kafka"), "state": size(run_dir / rundir.STATE)}
    return {**parts, "evidence": size(run_dir) - sum(parts.values())}


def report_opened(run_dir: Path) -> list[float]:
    """Seconds until the report's charts are drawn in headless Chromium, ``OPENINGS`` times."""
    browser = headless_chromium()
    browser.set_script_timeout(60)
    try:
        opened = []
        for _ in range(OPENINGS):
            browser.get((run_dir / rundir.REPORT).as_uri())
            opened.append(float(browser.execute_async_script(CHARTS_DRAWN)) / 1000)
        return opened
    finally:
        browser.quit()


def measured(run_dir: Path, watched: Path) -> dict[str, Any]:
    verdict = rundir.read_json(run_dir / rundir.VERDICT) or {}
    params = (rundir.read_json(run_dir / rundir.PARAMS) or {})["params"]
    program = rundir.read_json(run_dir / "program.json") or {}
    t0, hours = load_start(run_dir), params["records"] / params["rate"] / HOUR_S
    lives = suite_lives(run_dir, watched)
    faults: dict[str, int] = {}
    for step in program.get("steps", []):
        if step["action"] not in ("noop", "start"):
            faults[step["action"]] = faults.get(step["action"], 0) + 1
    return {"run_dir": str(run_dir), "status": verdict.get("status"), "records": verdict.get("records"),
            "anomalies": verdict.get("anomalies"), "growth": verdict.get("growth"),
            "validation_seconds": verdict.get("validation_seconds"), "checker_peak_mb": checker_peak_mb(watched),
            "program": program.get("source"), "streams_version": params.get("streams_version"),
            "kafka_version": params.get("kafka_version"), "faults": faults, "rate": params["rate"],
            "brokers": params["brokers"], "records_asked": params["records"],
            **({"rss": hours_compared(lives, t0, "rss_mb"), "fds": hours_compared(lives, t0, "fds"),
                "disk": disk_per_record(run_dir, t0, params["rate"])} if hours >= 2 else {}),
            "sizes": sizes(run_dir), "report_bytes": (run_dir / rundir.REPORT).stat().st_size,
            "report_opened_s": report_opened(run_dir)}


def soak(records: int, faults: list[str] | None, params: dict[str, Any], out: Path) -> Path:
    """``make soak SCENARIO=soak_nightly`` of ``records`` in a runs directory of its own (its faults drawn from
    ``faults``, else the scenario's; ``params`` over the scenario's), watched; its run directory."""
    runs = common.runs_dir("night-soak")
    drawn = load_scenario(SCENARIOS_DIR / "soak_nightly.yaml")["params"]["random_program"]
    shape = {"random_program": {**drawn, "faults": faults}} if faults else {}  # the scenario's, but these kinds
    conf = json.dumps({**params, "records": records, **shape})
    env = {**os.environ, "SOAK_RUNS_DIR": str(runs), "CONF": conf, "SCENARIO": "soak_nightly"}
    with open(runs / "make-soak.log", "wb") as log:
        make = subprocess.Popen(["make", "-s", "soak"], cwd=common.ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        cli = None
        while cli is None and make.poll() is None:  # past make's set-up (the CLI's kafka-jars, streams-app, …)
            cli = next((p for p in psutil.Process(make.pid).children(recursive=True)
                        if "kafka_soak.cli soak" in " ".join(p.cmdline())), None)
            time.sleep(0.5)
        if cli is not None:
            watch(cli.pid, out)
        make.wait()
    run_dir = (runs / "soak_nightly" / "latest").resolve()
    if not (run_dir / rundir.PARAMS).exists():
        raise SystemExit(f"make soak ended with {make.returncode} before the run began; its output: {runs}/make-soak.log")
    return run_dir


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    records, hours = run["records"] or {}, run["records_asked"] / run["rate"] / HOUR_S
    opened = statistics.median(run["report_opened_s"])
    rows = [common.figure(f"records in and out, {hours:g} h at {run['rate']} records/s", records.get("output", 0),
                          "records", records.get("input"), f"verdict passed, {run['records_asked']} in and out",
                          run["status"] == "passed" and records.get("output") == records.get("input")
                          == run["records_asked"]),
            common.figure("the checker on the whole run", run["validation_seconds"] or 0, "s", None, "—", None),
            common.figure("the checker's process tree, most resident memory seen (every 30 s)",
                          run["checker_peak_mb"] or 0, "MB", CHECKER_MIB, "≤ the 2 GiB run_size leaves it",
                          (run["checker_peak_mb"] or 0) <= CHECKER_MIB)]
    if "rss" in run:
        rss, fds = run["rss"][0], run["fds"][0]
        rows += [common.figure(f"RSS a suite process held in the second hour, median (worst: {rss['process']})",
                               rss["second"], "MB", rss["first"], f"≤ {BOUND}× the first hour's", rss["ratio"] <= BOUND,
                               f"most in each hour: {rss['most'][0]:g} → {rss['most'][1]:g} MB"),
                 common.figure(f"open files a suite process held in the second hour, median (worst: {fds['process']})",
                               fds["second"], "fds", fds["first"], f"≤ {BOUND}× the first hour's", fds["ratio"] <= BOUND,
                               f"most in each hour: {fds['most'][0]:g} → {fds['most'][1]:g}")]
        rows += [common.figure("run directory but Kafka's logs: bytes per record, second hour",
                               run["disk"]["rest"]["hour 2"], "B", run["disk"]["rest"]["hour 1"], "grows with the data",
                               None),
                 common.figure(f"Kafka's logs ({run['brokers']} brokers): bytes per record, second hour",
                               run["disk"]["kafka"]["hour 2"], "B", run["disk"]["kafka"]["hour 1"], "—", None)]
    evidence = run["sizes"]["evidence"] / max(1, records.get("input") or 0)
    return rows + [common.figure("evidence (the run directory but Kafka's logs and the apps' state): bytes per record",
                                 evidence, "B", None, "—", None),
                   common.figure("report: page size", run["report_bytes"] / 1e6, "MB", None, "under a few MB",
                                 run["report_bytes"] < 3e6),
                   common.figure("report: charts drawn in headless Chromium", opened, "s", None, "< 2 s", opened < 2)]


def body(run: dict[str, Any]) -> str:
    faults = ", ".join(f"{n} {action}" for action, n in sorted(run["faults"].items()))
    lives = ", ".join(f"{r['process']} {r['first']:g} → {r['second']:g} MB" for r in run.get("rss", [])) or "none"
    files = ", ".join(f"{r['process']} {r['first']:g} → {r['second']:g} (most {r['most'][0]:g} → {r['most'][1]:g})"
                      for r in run.get("fds", [])[:3]) or "none"
    return (f"One run of `soak_nightly` (`{run['program']}`, Kafka Streams {run['streams_version']} on brokers "
            f"{run['kafka_version']}, a fault every 5 steps of 30 s: {faults}; anomalies "
            f"{run['anomalies']}). Suite processes: the run's supervisors, sampler and generator (its own samples, "
            "every 5 s) and the process tree that ran it (the CLI, `airflow dags test`: sampled every 30 s by this "
            "benchmark); per life that lived through both hours, the level it held (the median of its samples) in "
            f"the second hour against the first: resident memory {lives}; open files, the three highest ratios: "
            f"{files}. Bytes per record: the growth of the run directory over each hour of load (its disk "
            "samples, every 30 s) over the records of that hour. The report opened "
            f"{len(run['report_opened_s'])} times (median).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=common.SIZES)
    parser.add_argument("--from", dest="run_dir", type=Path, help="a soak_nightly run directory, started by hand")
    parser.add_argument("--watched", type=Path, help="--watch's samples of that run")
    parser.add_argument("--watch", type=int, help="sample this process and its tree until it ends")
    parser.add_argument("--out", type=Path, help="where --watch writes")
    parser.add_argument("--faults", type=lambda text: text.split(","),
                        help="the kinds the night's program draws from, comma-separated (default: the scenario's)")
    parser.add_argument("--conf", type=json.loads, default={},
                        help="params over the scenario's, a JSON object (as make soak's CONF), e.g. "
                             "'{\"streams_version\": \"3.7.2\"}'")
    args = parser.parse_args()
    if args.watch:
        watch(args.watch, args.out)
        return
    if args.run_dir:
        run_dir, watched, size = args.run_dir.resolve(), args.watched, "large"
        cmd = f"python bench/night_soak.py --from {args.run_dir} --watched {args.watched}"
    else:
        size = args.size or "quick"
        watched = common.runs_dir("night-soak-watch") / "watched.jsonl"
        run_dir = soak(SIZES[size], args.faults, args.conf, watched)
        cmd = (f"python bench/night_soak.py --size {size}" + (f" --faults {','.join(args.faults)}" if args.faults else "")
               + (f" --conf '{json.dumps(args.conf)}'" if args.conf else ""))
    run = measured(run_dir, watched)
    common.write_results("night_soak", "A night's soak", size, figures(run), body(run), {"runs": [run]}, cmd)


if __name__ == "__main__":
    main()
