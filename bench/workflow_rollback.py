"""Workflow rollback rates: the original's KTable self-join against a single writer (soak_workflow_rollback).

Every run is one DAG run of the scenario with both designs side by side on the same input and the same program, so
each run measures both rates under identical conditions: how often, and for what share of its executions, the
self-join design rolls an execution back, and how often the single writer passes. One more run per size is the
control the original describes ("works well when sequential"): the self-join with one task per execution.
quick: 3 runs of a 60 s program at the scenario's 20 records/s; large: 5 runs of the scenario's defaults.
"""

from __future__ import annotations

import json
from typing import Any

from common import DagsTest, figure, parse_size, runs_dir, write_results

DAG_ID = "soak_workflow_rollback"
SEED_DESIGN, SINGLE_WRITER = "ktable-self-join", "single-writer"
SIZES: dict[str, tuple[int, dict[str, Any]]] = {
    "quick": (3, {"program": "1 2 0 2 0 0", "interval_s": 10, "records": 1200, "rate": 20}),
    "large": (5, {}),
}
CONTROL = {"workflow_designs": [SEED_DESIGN], "parallel_tasks": 1}
RUN_TIMEOUT_S = 1200


def one_run(conf: dict[str, Any]) -> dict[str, Any]:
    """One run: per design its status, anomaly counts and executions, plus the run's outcome."""
    test = DagsTest(DAG_ID, conf, runs_dir("workflow-rollback"))
    run_dir, _, code, wall = test.run(lambda _: None, RUN_TIMEOUT_S)
    verdict_file = run_dir / "verdict.json"
    verdict = json.loads(verdict_file.read_text()) if verdict_file.exists() else {}
    rows = verdict.get("matrix") or ([{"version": conf["workflow_designs"][0], **verdict}] if verdict else [])
    designs = {m["version"]: {"status": m["status"], "executions": m["records"].get("executions", 0),
                              **m["anomalies"]} for m in rows}
    row = {"run_dir": str(run_dir), "wall_s": round(wall, 1), "outcome": test.outcome(code), "conf": conf,
           "designs": designs}
    print(f"{DAG_ID}: {json.dumps(row)}", flush=True)
    return row


def rolled_back_share(row: dict[str, Any], design: str) -> float:
    found = row["designs"].get(design, {})
    return found.get("rolled_back", 0) / max(1, found.get("executions", 0))


def cell(row: dict[str, Any], design: str) -> str:
    """One design's outcome in a run, for the table."""
    found = row["designs"].get(design)
    if found is None:
        ran = row["conf"].get("workflow_designs", (SEED_DESIGN, SINGLE_WRITER))
        return f"no verdict ({row['outcome']})" if design in ran else "not run"
    anomalies = {a: c for a, c in found.items() if a not in ("status", "executions") and c}
    return f"{found['status']} {anomalies or ''} ({found['executions']} executions)"


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    count, conf = SIZES[size]
    runs = [one_run(conf) for _ in range(count)]
    control = one_run({**conf, **CONTROL})
    judged = [r for r in runs if r["designs"]]
    caught = sum(r["designs"].get(SEED_DESIGN, {}).get("status") == "failed"
                 and r["designs"][SEED_DESIGN].get("rolled_back", 0) > 0 for r in judged)
    clean = sum(r["designs"].get(SINGLE_WRITER, {}).get("status") == "passed" for r in judged)
    shares = [rolled_back_share(r, SEED_DESIGN) for r in judged]
    sequential = control["designs"].get(SEED_DESIGN, {})
    n = max(1, len(judged))
    figures = [
        figure(f"{SEED_DESIGN}: executions rolled back, runs that caught it", caught / n, "of runs", None,
               "every run (1.0)", caught == len(judged) and bool(judged), f"{caught} of {len(judged)} runs"),
        figure(f"{SEED_DESIGN}: share of executions rolled back (lowest run)", min(shares, default=0), "of executions",
               None, "—", None, ", ".join(f"{s:.2f}" for s in shares)),
        figure(f"{SINGLE_WRITER}: passed", clean / n, "of runs", None, "every run (1.0)",
               clean == len(judged) and bool(judged), f"{clean} of {len(judged)} runs"),
        figure(f"{SEED_DESIGN} with one task per execution (control): rolled back",
               rolled_back_share(control, SEED_DESIGN), "of executions", None, "—", None,
               f"status {sequential.get('status', 'no verdict')}, {sequential.get('rolled_back', 0)} rolled back and "
               f"{sequential.get('lost', 0)} lost of {sequential.get('executions', 0)} executions"),
    ]
    lines = ["| run | load | wall | " + SEED_DESIGN + " | " + SINGLE_WRITER + " |", "|---|---|---|---|---|"]
    for n_run, r in enumerate([*runs, control], start=1):
        tasks = r["conf"].get("parallel_tasks", 3)
        lines.append(f"| {n_run} | {tasks} task(s) per execution | {r['wall_s']:.0f} s | {cell(r, SEED_DESIGN)} | "
                     f"{cell(r, SINGLE_WRITER)} |")
    body = (f"Each run: `{DAG_ID}` with {json.dumps(conf) if conf else 'its defaults'}, both designs side by side; "
            "the last row is the control, the self-join alone with one task per execution. caught = the self-join "
            "failed with rolled_back > 0; passed = the single writer's verdict passed. No baseline: the rate is the "
            "figure.\n\n" + "\n".join(lines))
    write_results("workflow_rollback", "Workflow rollback: KTable self-join against a single writer", size, figures,
                  body, {"runs": runs, "control": control})


if __name__ == "__main__":
    main()
