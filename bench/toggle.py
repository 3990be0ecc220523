"""Toggle precision: when program steps fire through ``airflow dags test``, against a plain sleep loop.

A 30-step program at a 2 s interval runs through the scenario DAG with a small load; every step records
planned vs. actual time in ``program.jsonl``. Side by side, from the same T0, this process runs what
the original coordinator did: ``time.sleep(interval)`` between steps, whose overshoot adds up.
Drift is the trend of lateness over the run: the least-squares slope times the steps it spans.
"""

from __future__ import annotations

import json
import time
from typing import Any

from common import DagsTest, figure, parse_size, percentile, runs_dir, slope, write_results

DAG_ID = "soak_eos_id_assignment"
STEPS, INTERVAL_S = 30, 2.0
# Three instances started and stopped in turn: every step does real work (a process start or a graceful stop).
PROGRAM = " ".join(str(i % 3 + 1) for i in range(STEPS))
CONF = {"program": PROGRAM, "interval_s": INTERVAL_S, "records": 3000, "keys": 100, "partitions": 4}
P95_TARGET_MS = 100.0
DRIFT_TARGET_MS = 10.0
RUN_TIMEOUT_S = 900
RUNS = {"quick": 1, "large": 3}  # DAG runs; each has its own sleep loop beside it


def sleep_loop(t0: float, steps: int, interval: float) -> list[float]:
    """The baseline: the original coordinator's ``sleep(interval)`` between steps; lateness (ms) per step."""
    time.sleep(max(t0 - time.time(), 0))
    late = [(time.time() - t0) * 1000]
    for i in range(1, steps):
        time.sleep(interval)
        late.append((time.time() - (t0 + i * interval)) * 1000)
    return late


def lateness(late_ms: list[float]) -> dict[str, float]:
    """p50, p95 and max of how late steps fired (ms)."""
    late = [abs(v) for v in late_ms]
    return {"p50": percentile(late, 50), "p95": percentile(late, 95), "max": max(late)}


def drift(late_ms: list[float]) -> float:
    """How much later the last step fires than the first, by the trend over the run (ms)."""
    return slope(late_ms) * (len(late_ms) - 1)


def measure() -> dict[str, Any]:
    """One DAG run and the sleep loop beside it: the step records, the loop's lateness, the run."""
    run = DagsTest(DAG_ID, CONF, runs_dir("toggle"))
    run_dir, baseline, code, wall = run.run(
        lambda run_dir: sleep_loop(json.loads((run_dir / "program.json").read_text())["t0"], STEPS, INTERVAL_S),
        RUN_TIMEOUT_S)
    steps = sorted((json.loads(line) for line in (run_dir / "program.jsonl").read_text().splitlines()),
                   key=lambda s: s["index"])
    if len(steps) != STEPS:
        raise SystemExit(f"only {len(steps)} of {STEPS} steps ran ({run.outcome(code)}); see {run_dir}")
    return {"run_dir": str(run_dir), "airflow": run.outcome(code), "wall_s": round(wall, 1),
            "steps": [{k: s.get(k) for k in ("index", "label", "jitter_ms", "took_s", "applied_by")} for s in steps],
            "baseline_late_ms": [round(v, 3) for v in baseline]}


def run_row(n: int, run: dict[str, Any]) -> str:
    steps, baseline = run["steps"], run["baseline_late_ms"]
    dag, loop = lateness([s["jitter_ms"] for s in steps]), lateness(baseline)
    late = [s["label"].split(":")[0] for s in steps if s["jitter_ms"] > P95_TARGET_MS]
    return (f"| {n} | {run['airflow']}, {run['wall_s']:.0f} s | {dag['p95']:.1f} / {dag['max']:.1f} ms "
            f"| {drift([s['jitter_ms'] for s in steps]):+.1f} ms | {loop['p95']:.1f} / {loop['max']:.1f} ms "
            f"| {drift(baseline):+.1f} ms | {max(s['took_s'] or 0 for s in steps):.2f} s | {', '.join(late) or 'none'} |")


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    runs = [measure() for _ in range(RUNS[size])]
    dag = lateness([s["jitter_ms"] for r in runs for s in r["steps"]])
    loop = lateness([v for r in runs for v in r["baseline_late_ms"]])
    dag_drift = max((drift([s["jitter_ms"] for s in r["steps"]]) for r in runs), key=abs)
    loop_drift = max((drift(r["baseline_late_ms"]) for r in runs), key=abs)
    figures = [figure(f"{q} lateness", dag[q], "ms", loop[q], f"≤ {P95_TARGET_MS:g} ms" if q == "p95" else "",
                      dag[q] <= P95_TARGET_MS if q == "p95" else None) for q in ("p50", "p95", "max")]
    figures.append(figure("drift over a run (the largest)", dag_drift, "ms", loop_drift,
                          f"within ±{DRIFT_TARGET_MS:g} ms", abs(dag_drift) <= DRIFT_TARGET_MS))
    took = [s["took_s"] or 0 for r in runs for s in r["steps"]]
    body = f"""
Program `{PROGRAM}` ({STEPS} steps, one every {INTERVAL_S:g} s: three instances started and stopped in
turn) through `airflow dags test {DAG_ID} -c '{json.dumps(CONF)}'`, with its own `SOAK_RUNS_DIR`,
{len(runs)} run(s); percentiles over the {STEPS * len(runs)} steps of all runs, drift the largest of a run.
Lateness is `actual − planned` of every step (`jitter_ms` in `program.jsonl`); the baseline is a
`time.sleep({INTERVAL_S:g})` loop in the benchmark's own process, started at the same T0 during the same run:
each sleep overshoots a little and the next one starts from there, so the loop drifts. Drift is the
least-squares slope of lateness over the step index times {STEPS - 1} steps.

| run | Airflow | p95 / max | drift | baseline p95 / max | baseline drift | longest action | steps > {P95_TARGET_MS:g} ms |
|---|---|---|---|---|---|---|---|
{chr(10).join(run_row(n, r) for n, r in enumerate(runs, 1))}

What limits the steps: a step fires on time only when the step before it is done. The longest action (a
graceful stop: SIGTERM, the instance commits and leaves its group) took {max(took):.2f} s of the
{INTERVAL_S:g} s interval (p50 of all actions {percentile(took, 50):.2f} s); an action longer than the interval
delays the next steps by the excess. Evidence: {', '.join(f"`{r['run_dir']}`" for r in runs)}
(`program.jsonl`; `dags-test.log` two levels up).
"""
    write_results("toggle", "Toggle precision", size, figures, body,
                  {"program": PROGRAM, "conf": CONF, "runs": runs})


if __name__ == "__main__":
    main()
