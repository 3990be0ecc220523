"""Overhead: the wall time of a whole demo run minus the program's own duration, by task.

The demo runs through ``airflow dags test`` as ``make soak`` does (quick: the end-to-end tests' short
program, once; large: the ``make soak`` default, three times in a row, each held to the target). Every task
instance's start and end come from Airflow's database (``airflow tasks states-for-dag-run``); the time outside any
task is Airflow's own (start-up, scheduling between tasks, shutdown). Each part's overhead is its wall time minus the part of the
program window (T0 .. T0 + steps × interval) it covers, so the parts add up to wall − program.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from collections import defaultdict
from typing import Any

from common import DagsTest, figure, parse_size, runs_dir, write_results

DAG_ID = "soak_eos_id_assignment"
# The `make soak` default (--size large) may spend this much beyond its program (provisioning, validation, Airflow).
TARGET_OVERHEAD_S = 30
CONFS = {"quick": {"program": "1 2 1", "interval_s": 6, "records": 6000, "keys": 300, "partitions": 4},
         "large": {}}
RUN_TIMEOUT_S = 1200
# Runs per size, one after the other: the target holds in every one, not on average.
RUNS = {"quick": 1, "large": 3}
RUN_ID = re.compile(rf"<TaskInstance: {DAG_ID}\.\S+ (\S+) ")  # the [DAG TEST] lines name the run
# "[DAG TEST] starting" to the task's "Task started": Airflow bringing a task up before its code runs.
TASK_START = re.compile(r"^(\S+) \[\w+\s*\] (?:\[DAG TEST\] starting task_id=(\w+)|(Task started))", re.M)
VALIDATE_PHASE = re.compile(r"INFO (?:phase (\w+):|(timeline) for the report in) ([\d.]+) s")
STARTUP = "before the first task (CLI start, DAG parsing, run creation)"
BETWEEN = "between tasks (Airflow scheduling)"
AFTER = "after the last task (DAG callbacks, exit)"


def task_spans(run_id: str) -> list[dict[str, Any]]:
    """Start and end (epoch s) of every task instance of the run, from Airflow's database."""
    out = subprocess.run(["airflow", "tasks", "states-for-dag-run", DAG_ID, run_id, "--output", "json"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    rows = json.loads(out[out.index("["):])
    return sorted(({"task": r["task_id"], "map_index": r["map_index"], "state": r["state"],
                    "start": dt.datetime.fromisoformat(r["start_date"]).timestamp(),
                    "end": dt.datetime.fromisoformat(r["end_date"]).timestamp()}
                   for r in rows if r["start_date"] and r["end_date"]), key=lambda r: r["start"])


def task_startups(log: str) -> dict[str, float]:
    """Per task (mapped ones summed): seconds from the test runner starting it to the task reporting in."""
    startups: dict[str, float] = defaultdict(float)
    pending = None
    for ts, task, started in TASK_START.findall(log):
        when = dt.datetime.fromisoformat(ts).timestamp()
        if task:
            pending = (task, when)
        elif started and pending:
            startups[pending[0]] += when - pending[1]
            pending = None
    return dict(startups)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def breakdown(started: float, ended: float, spans: list[dict[str, Any]], window: tuple[float, float]
              ) -> dict[str, dict[str, float]]:
    """Wall time, program time and overhead per task (mapped tasks summed) and for the time between tasks."""
    parts: dict[str, dict[str, float]] = defaultdict(lambda: {"wall_s": 0.0, "program_s": 0.0, "count": 0})

    def add(name: str, begin: float, end: float) -> None:
        if end > begin:
            part = parts[name]
            part["wall_s"] += end - begin
            part["program_s"] += overlap((begin, end), window)
            part["count"] += 1

    cursor = started
    for span in spans:
        add(STARTUP if cursor == started else BETWEEN, cursor, span["start"])
        add(span["task"], max(span["start"], cursor), span["end"])
        cursor = max(cursor, span["end"])
    add(AFTER, cursor, ended)
    for part in parts.values():
        part["overhead_s"] = part["wall_s"] - part["program_s"]
    return dict(parts)


def measure(size: str) -> dict[str, Any]:
    """One demo run of ``size``: its wall time, program, overhead and the parts it goes to."""
    run = DagsTest(DAG_ID, CONFS[size], runs_dir("overhead"))
    run_dir, _, code, wall = run.run(lambda run_dir: None, RUN_TIMEOUT_S)
    log = run.log.read_text()
    run_id = RUN_ID.search(log)[1]
    program = json.loads((run_dir / "program.json").read_text())
    steps, interval = len(program["steps"]), program["replay_conf"]["interval_s"]
    duration = steps * interval
    verdict_path = run_dir / "verdict.json"
    return {"run_id": run_id, "run_dir": str(run_dir), "log": str(run.log), "airflow_exit_code": code,
            "outcome": run.outcome(code), "program": program["program"], "steps": steps, "interval_s": interval,
            "program_s": duration, "wall_s": wall, "overhead_s": wall - duration,
            "verdict": json.loads(verdict_path.read_text())["status"] if verdict_path.exists() else "none",
            "parts": breakdown(run.started, run.started + wall, task_spans(run_id),
                               (program["t0"], program["t0"] + duration)),
            "validate_phases": {name or other: float(s) for name, other, s in VALIDATE_PHASE.findall(log)},
            "airflow_task_start_s": task_startups(log)}


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    runs = [measure(size) for _ in range(RUNS[size])]
    target = size == "large"
    figures = [f for i, r in enumerate(runs, 1) for f in (
        figure(f"whole run {i}", r["wall_s"], "s", r["program_s"], "", None, "baseline: the program's own duration"),
        figure(f"overhead (run − program), run {i}", r["overhead_s"], "s", r["program_s"],
               f"≤ {TARGET_OVERHEAD_S} s" if target else "", r["overhead_s"] <= TARGET_OVERHEAD_S if target else None,
               "ratio: overhead per second of program"),
        figure(f"validate's share of the overhead, run {i}", r["parts"]["validate"]["overhead_s"], "s",
               r["overhead_s"], "", None, "ratio: its share"))]
    run = sorted(runs, key=lambda r: r["overhead_s"])[len(runs) // 2]  # the median run's parts
    overhead, parts = run["overhead_s"], run["parts"]
    ranked = sorted(parts.items(), key=lambda kv: -kv[1]["overhead_s"])
    slow_starts = {name: s for name, s in run["airflow_task_start_s"].items() if s >= 1}
    rows = ["| part | instances | wall | in program window | overhead | share of overhead |", "|---|---|---|---|---|---|"]
    rows += [f"| {name} | {p['count']} | {p['wall_s']:.1f} s | {p['program_s']:.1f} s | {p['overhead_s']:.1f} s "
             f"| {100 * p['overhead_s'] / overhead:.0f} % |" for name, p in ranked]
    phases = run["validate_phases"]
    biggest = ", ".join(f"{name} {p['overhead_s']:.0f} s" for name, p in ranked[:3])
    body = f"""
{len(runs)} runs one after the other, each `airflow dags test {DAG_ID} -c '{json.dumps(CONFS[size])}'` (program
`{run['program']}`, {run['steps']} steps × {run['interval_s']:g} s = {run['program_s']:g} s of program);
{"; ".join(f"run {i}: {r['outcome']}, verdict `{r['verdict']}`" for i, r in enumerate(runs, 1))}. Baseline of the
first two figures of each run: the program's own duration, the least any way of running it takes. The parts below are
the median run's ({overhead:.1f} s of overhead), from Airflow's task instances;
the "before", "between" and "after" rows are the time no task ran. Airflow bringing a task up (the test
runner's `[DAG TEST] starting` line to the task's `Task started` line; it straddles the task's start in the
database): {", ".join(f"{name} {s:.1f} s" for name, s in slow_starts.items()) or "none over 1 s"}, every
{"other " if slow_starts else ""}task under 1 s (the first task also brings up Airflow's in-process execution API).

{chr(10).join(rows)}

Biggest costs: {biggest}.
{"Inside validate (the job's own timings): " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items())
 + f"; the remaining {parts['validate']['wall_s'] - sum(phases.values()):.1f} s are spark-submit, JVM start and stop."
 if phases and "validate" in parts else ""}
Evidence: `{run['run_dir']}`, Airflow output `{run['log']}`.
"""
    write_results("overhead", "Run overhead", size, figures, body, {"conf": CONFS[size], "runs": runs})


if __name__ == "__main__":
    main()
