"""The evidence of a night's run, made up at the size a night writes: for what the report does with hours of data
(tests/unit/evidence, bench/report_night.py) without running for hours. The program is soak_nightly's own (its plan,
drawn from a seed), its steps and events as the program's kinds write them; the timeline has a point a second per
series as the checker writes it, the samples one every ``sample_s`` seconds for each of the run's processes, the app's
instances a life every ``LIFE_S``."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import yaml

from kafka_soak import run_plan
from kafka_soak.faults import program as programs
from kafka_soak.faults.kinds.network import CUT, HEALED
from kafka_soak.shared import rundir, stalls
from support import ROOT

T0 = 1_800_000_000.0
PROCESSES = ("kafka-1", "kafka-2", "kafka-3", "generator", "resource-sampler", "instance-1", "instance-2", "instance-3")
LIFE_S = 600.0  # an instance (and its supervisor) starts anew this often, as a night's kills, stops and restarts do


def night_plan(hours: float, seed: int = 1) -> dict[str, Any]:
    """soak_nightly's plan for a night of ``hours`` at its rate."""
    params = yaml.safe_load((ROOT / "dags" / "scenarios" / "soak_nightly.yaml").read_text())["params"]
    return dict(run_plan.check({**params, "seed": seed, "records": int(hours * 3600 * params["rate"])}, app_id="night"))


def step_events(step: programs.Step, at: float, interval_s: float) -> list[dict[str, Any]]:
    """What a step of the program writes into events.jsonl, as its kind does."""
    target = {"instance": step.instance} if step.instance else {"broker": step.broker}
    if step.action in ("start", "stop", "kill", "pause", "resume", "broker-down", "broker-up"):
        return [{"t": at, "event": step.action, **target}]
    if step.action in ("cut", "broker-cut", "heal", "broker-heal"):
        return [{"t": at, "event": HEALED if step.action.endswith("heal") else CUT, **target}]
    if step.action == "stall":
        return [{"t": at, "event": "stall-armed", **target}, {"t": at + 1, "event": stalls.STALLED, **target},
                {"t": at + 1 + interval_s / 2, "event": stalls.RESUMED, **target}]
    return []


def write(run_dir: Path, hours: float, sample_s: float = 5.0, seed: int = 1) -> Path:
    """A run directory with the evidence of a passed night of ``hours``; returns it."""
    rng = random.Random(seed)
    plan = night_plan(hours, seed)
    interval, rate = plan["interval_s"], int(plan["rate"])
    steps = programs.schedule(plan["program"], T0, interval)
    seconds = int(len(steps) * interval)
    run_dir.mkdir(parents=True, exist_ok=True)
    rundir.write_json(run_dir / rundir.PARAMS, {"dag_id": "soak_nightly", "run_id": "scheduled__night", "attempt": 1,
                                               "params": {}, "plan": plan})
    rundir.write_json(run_dir / rundir.PROGRAM, {"program": " ".join(plan["program"]), "source": plan["program_source"],
                                                "seed": plan["seed"], "t0": T0, "steps": [s.as_dict() for s in steps]})
    with (run_dir / rundir.STEPS).open("w") as out:
        for s in steps:
            out.write(json.dumps({**s.as_dict(), "actual_at": s.planned_at + 0.002, "label": s.label}) + "\n")
    with (run_dir / rundir.EVENTS).open("w") as out:
        out.write(json.dumps({"t": T0 - 20, "event": "provisioned", "backend": "local"}) + "\n")
        for s in steps:
            for event in step_events(s, s.planned_at + 0.5, interval):
                out.write(json.dumps(event) + "\n")
        for i in range(30):
            out.write(json.dumps({"t": T0 + seconds + i, "event": "lag", "lag": max(0, 3000 - 100 * i),
                                  "source": "drain"}) + "\n")
    produced = [{"t": int(T0) + i, "n": rate} for i in range(seconds)]
    shares = [rate // 3 + (n < rate % 3) for n in range(3)]
    committed = [{"t": int(T0) + i + 1, "instance": str(n), "n": share} for i in range(seconds)
                 for n, share in enumerate(shares, 1)]
    rundir.write_json(run_dir / rundir.TIMELINE, {"produced": produced, "committed": committed, "anomalies": {}})
    (run_dir / "resources").mkdir(exist_ok=True)
    with (run_dir / "resources" / "samples.jsonl").open("w") as out:
        for i in range(int(seconds / sample_s)):
            at = T0 + i * sample_s
            for pid, process in enumerate(PROCESSES, 100):
                life = int(i * sample_s // LIFE_S) if process.startswith("instance-") else 0
                started = T0 - 30 if life == 0 else T0 + life * LIFE_S
                for name, owner in ((process, pid + 1000 * life), (f"{process}.supervisor", pid + 50 + 1000 * life)):
                    out.write(json.dumps({"at": at, "process": name, "pid": owner, "started": started,
                                          "rss_mb": round(300 + rng.uniform(-40, 40), 1), "cpu": rng.uniform(0, 1),
                                          "threads": 60, "fds": 200, "heap_mb": 120.0}) + "\n")
    with (run_dir / "resources" / "disk.jsonl").open("w") as out:
        for i in range(int(seconds / sample_s / 6)):
            mb = 0.4 * i * sample_s * 6
            out.write(json.dumps({"at": T0 + i * sample_s * 6, "run_dir_mb": 5 + i * 0.01,
                                  **{f"broker-{b}_mb": mb for b in (1, 2, 3)}}) + "\n")
    rundir.write_json(run_dir / rundir.VERDICT, {"status": "passed", "anomalies": {}, "samples": {},
                                                "records": {"input": rate * seconds, "output": rate * seconds}})
    return run_dir
