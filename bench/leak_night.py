"""The planted leaks at a night's length and the default bounds: how long after an instance got to work its leak is
caught, in each of its lives, and that its control beside it, over the same run, never is.

    python bench/leak_night.py --size quick   # one life of 30 minutes
    python bench/leak_night.py --size large   # 2 hours: four lives of 30 minutes (a rolling restart between them)
    APPS=worker python bench/leak_night.py --size large       # that app's run again; the other's last rows are kept
    APPS=streams python bench/leak_night.py --size large --from streams=RUN_DIR   # its figures from a run that ended

Two runs side by side, as ``tests/e2e/test_resource_growth.py`` runs them for a minute: the reference worker with bug
switch ``leak`` beside its control (param ``variants``: same input, program and machine), and the Kafka Streams app
likewise; param ``resource_growth`` left at its defaults (a 10-minute warm-up; 200 MB/h and 100 MB of resident
memory, 100 MB/h and 50 MB of heap after GC). Each at a rate whose leak outgrows its bound a few times over: the
worker keeps 16 KB a record (20 records/s: about 1.15 GB/h of resident memory), the Kafka Streams app an open iterator
a record, each holding a copy of its partition's cached keys (12 records/s over 1 500 keys: its heap after GC rose
676–720 MB/h in the 2-hour run, so each life ran out of its 256 MB heap 22–25 minutes after it got to work and died
of it, after it was caught). The rule counts the rise of a life's floor from its first quarter to its last, so a leak
of r MB/h passes a bound of b MB about 4b/(3r) hours after the warm-up: 7 minutes for the worker's, 6 for Kafka
Streams'. A life too short to be caught (the drain's start of an instance after the last one died) is not judged.
When it was caught: the verdict's own rule
(``resources.growth`` with the run's bounds, readiness and stops) on the samples up to each minute of the run, the
first minute that life's row grows. Writes ``bench/results/leak_night.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import SIZES, DagsTest, figure, remeasured, runs_dir, write_results

from kafka_soak.params import growth_bounds
from kafka_soak.shared import resources, rundir

DAG_ID = "soak_eos_id_assignment"
STEP_S = 60
LIFE_STEPS = 30  # a life of 30 minutes, then a rolling restart (stopped, started a step later)
LIVES = {"quick": 1, "large": 4}
APPS = {"worker": ({"app": "worker", "keys": 300}, 20),  # conf, records/s
        "streams": ({"app": "streams", "keys": 1500}, 12)}
CATCH_BOUND_MIN = 10.0  # after the warm-up's end
TIMEOUT_S = 3 * 3600


def program(lives: int) -> str:
    """Instance 1 started, then for each later life stopped and started a step apart; the rest no-ops."""
    steps = ["1"] + ["0"] * (LIFE_STEPS - 1)
    for _ in range(lives - 1):
        steps += ["1", "1"] + ["0"] * (LIFE_STEPS - 2)
    return " ".join(steps)


def conf(app: str, lives: int) -> dict[str, Any]:
    (given, rate), steps = APPS[app], len(program(lives).split())
    return {**given, "program": program(lives), "interval_s": STEP_S, "records": rate * STEP_S * steps,
            "partitions": 4, "instances": 1, "bug": "leak", "variants": [{"name": "no-leak", "bug": "none"}]}


def caught_after(run_dir: Path, bounds: dict[str, Any]) -> list[dict[str, Any]]:
    """Per life of each app instance: when it got to work, and the first minute after that at which the verdict's
    rule, on the samples taken until then, says it grows (None: never), and with what."""
    samples = rundir.read_jsonl(run_dir / resources.DIR / resources.SAMPLES)
    asked = resources.ends(rundir.read_jsonl(run_dir / rundir.EVENTS))
    ready = (rundir.read_json(run_dir / rundir.HEALTH) or {}).get("ready", {})
    found = []
    for (process, pid, started), life in resources.lives(samples).items():
        if not resources.judged_process(process, False):
            continue
        since = resources.working_since(pid, started, ready)
        first = None
        for minute in range(1, int((life[-1]["at"] - since) // 60) + 2):
            upto = [s for s in life if s["at"] <= since + minute * 60]
            rows = [r for r in resources.growth(upto, bounds, asked, ready) if r["grows"]]
            if rows:
                first = {"minute": minute, "resource": rows[0]["resource"], "what": resources.describe(rows[0])}
                break
        whole = resources.growth(life, bounds, asked, ready)
        found.append({"process": process, "pid": pid, "ready_after_s": round(since - started, 1),
                      "lived_min": round((life[-1]["at"] - since) / 60, 1), "caught": first,
                      "most_rise": {r["resource"]: r["rise"] for r in whole}})
    return found


def run(app: str, lives: int) -> dict[str, Any]:
    """One run of an app's leak beside its control."""
    test = DagsTest(DAG_ID, conf(app, lives), runs_dir(f"leak-night-{app}"))
    run_dir, _, code, wall = test.run(lambda _: None, TIMEOUT_S)
    return judged(app, run_dir, round(wall, 1), test.outcome(code))


def judged(app: str, run_dir: Path, wall_s: float | None, outcome: str) -> dict[str, Any]:
    """An ended run of an app's leak beside its control: its verdict, and when each life's leak was caught."""
    verdict = rundir.read_json(run_dir / rundir.VERDICT) or {}
    params = (rundir.read_json(run_dir / rundir.PARAMS) or {}).get("params", {})
    bounds = growth_bounds(params.get("resource_growth", {}))
    row = {"app": app, "run_dir": str(run_dir), "wall_s": wall_s, "outcome": outcome,
           "matrix": {r["version"]: {"status": r["status"], "anomalies": {k: v for k, v in r["anomalies"].items() if v}}
                      for r in verdict.get("matrix", [])},
           "lives": caught_after(run_dir, bounds), "warmup_s": bounds["warmup_s"]}
    print(json.dumps(row), flush=True)
    return row


def figures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for row in rows:
        warmup_min = row["warmup_s"] / 60
        # a life too short to be caught (the drain's start of an instance after the run's last one ended) is no life
        # to judge: it says nothing either way
        long_enough = [life for life in row["lives"] if life["lived_min"] >= warmup_min + CATCH_BOUND_MIN]
        leak = [life for life in long_enough if not life["process"].endswith("no-leak")]
        control = [life for life in long_enough if life["process"].endswith("no-leak")]
        minutes = [life["caught"]["minute"] if life["caught"] else None for life in leak]
        latest = max((m for m in minutes if m is not None), default=0)
        found.append(figure(f"{row['app']}: leak caught, latest of its {len(leak)} lives of {warmup_min + CATCH_BOUND_MIN:g}"
                            " min or more, after it got to work",
                            latest, "min", None, f"every life, ≤ {warmup_min:g} min warm-up + {CATCH_BOUND_MIN:g}",
                            bool(leak) and None not in minutes and latest <= warmup_min + CATCH_BOUND_MIN,
                            f"per life: {minutes}"))
        statuses = {version: r["status"] for version, r in row["matrix"].items()}
        clean = [life for life in control if life["caught"] is None]
        found.append(figure(f"{row['app']}: control lives never growing", len(clean), "lives", None,
                            f"all {len(control)}, and its verdict passed",
                            bool(control) and len(clean) == len(control)
                            and any(v.endswith("no-leak") and s == "passed" for v, s in statuses.items()),
                            f"verdicts: {statuses}"))
    return found


def body(rows: list[dict[str, Any]]) -> str:
    lines = ["| app | life | got to work after its start | lived | caught (minutes after it got to work) | "
             "most rise over the life |", "|---|---|---|---|---|---|"]
    for row in rows:
        for life in row["lives"]:
            caught = (f"{life['caught']['minute']} min: {life['caught']['what']}" if life["caught"] else "never")
            rises = ", ".join(f"{k} {v:g}" for k, v in life["most_rise"].items())
            lines.append(f"| {row['app']} | {life['process']} (pid {life['pid']}) | {life['ready_after_s']:g} s | "
                         f"{life['lived_min']:g} min | {caught} | {rises} |")
    rates = ", ".join(f"{app} {rate} records/s" for app, (_, rate) in APPS.items())
    return (f"Instance 1 alone ({rates}), a life of {LIFE_STEPS} minutes then a rolling restart; default "
            "`resource_growth`. Run directories: " + ", ".join(f"`{r['run_dir']}`" for r in rows)
            + ".\n\n" + "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=SIZES, default="quick")
    parser.add_argument("--from", dest="ended", action="append", default=[], metavar="APP=RUN_DIR",
                        help="judge this app's run that has ended instead of running it")
    args = parser.parse_args()
    chosen, earlier = remeasured("leak_night", "APPS", APPS, "apps")
    ended = dict(given.split("=", 1) for given in args.ended)
    if set(ended) - set(APPS):
        raise SystemExit(f"--from: {sorted(set(ended) - set(APPS))} are no apps; known: {', '.join(APPS)}")
    with ThreadPoolExecutor(len(chosen)) as pool:  # DagsTest starts them one after the other
        fresh = list(pool.map(lambda app: judged(app, Path(ended[app]).resolve(), None, "judged from its run directory")
                              if app in ended else run(app, LIVES[args.size]), chosen))
    rows = sorted([*fresh, *(row for row in earlier if row["app"] not in chosen)], key=lambda row: list(APPS).index(row["app"]))
    write_results("leak_night", "The planted leaks at a night's length", args.size, figures(rows), body(rows),
                  {"runs": rows})


if __name__ == "__main__":
    main()
