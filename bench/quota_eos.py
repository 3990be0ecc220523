"""What soak_quota_eos shows: Kafka Streams under exactly-once with its producer slightly over a byte-rate quota.

Every run is one DAG run of the scenario with its version matrix (the original's line, 3.8.1, and the newest
release side by side, each producer under its own 35 000 B/s quota, on the same input and program). Per version
and run: the verdict, the exceptions Kafka Streams logged by class (InvalidProducerEpochException,
TaskCorruptedException, TimeoutException, ...), the app-health incidents, and what the broker measured of the quota
(median rate, largest throttle). Beside each version run two controls (param ``variants``): the same app with its
producer's ``transaction.timeout.ms`` raised from Kafka Streams' EOS default of 10 s to 60 s, and the same app without
the quota; they confirm or refute the explanation of a version's failure (a throttled commit that outlasts the
transaction timeout). quick: 3 runs of 4 minutes of load; large: 5 runs of the scenario's 10 minutes. A scenario that
finds nothing is a result too: the figures say how many runs were clean.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from common import DagsTest, figure, parse_size, runs_dir, write_results

DAG_ID = "soak_quota_eos"
RUNS = {"quick": 3, "large": 5}
# quick: the scenario's rate and quota over a shorter program (4 steps of 60 s at 32 records/s)
# A run whose app cannot catch up any more ends at the drain; quick gives it one minute, not the scenario's ten.
CONTROLS = [{"name": "txn-60s", "streams_config": {"producer.transaction.timeout.ms": 60000}},
            {"name": "no-quota", "quotas": False}]
CONF = {"quick": {"program": "1 0 0 0", "records": 7680, "drain_timeout_s": 60, "variants": CONTROLS},
        "large": {"variants": CONTROLS}}
RUN_TIMEOUT_S = 1800


def one_run(size: str) -> dict[str, Any]:
    """One matrix run: per version and control its status (or why there is none), anomalies, exceptions, incidents
    and quota outcome, read from the run directory."""
    from kafka_soak.clients import subjects

    test = DagsTest(DAG_ID, CONF[size], runs_dir(f"quota-eos-{size}"))
    run_dir, _, code, wall = test.run(lambda _: None, RUN_TIMEOUT_S)
    verdict, health = read(run_dir / "verdict.json"), read(run_dir / "health.json")
    drain = read(run_dir / "drain.json")
    statuses = {row["version"]: (row["status"], {a: n for a, n in row["anomalies"].items() if n})
                for row in verdict.get("matrix", [])}
    quotas = read(run_dir / "quotas.json") or []
    versions = {}
    for name in subjects.matrix(json.loads((run_dir / "params.json").read_text())["plan"]):
        status, anomalies = statuses.get(name, (f"no verdict ({drain.get('status') or test.outcome(code)})", {}))
        quota = next((q for q in quotas if q["client_id"] == f"{DAG_ID}-app-{name}-1-StreamThread-1-producer"), {})
        versions[name] = {"status": status, "anomalies": anomalies,
                          "incidents": [i["what"] for i in health.get("incidents", []) if i.get("subject") == name],
                          "exceptions": count_exceptions(run_dir, name), "achieved": quota.get("achieved"),
                          "throttle_ms_max": quota.get("throttle_ms_max"), "bit": quota.get("bit")}
    result = {"run_dir": str(run_dir), "wall_s": round(wall, 1), "outcome": test.outcome(code),
              "drain": (drain.get("summary") or "").splitlines()[:1], "versions": versions}
    print(f"{DAG_ID}: {json.dumps(result)}", flush=True)
    return result


def read(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else {}


def count_exceptions(run_dir: Path, name: str) -> dict[str, int]:
    """Exceptions by class in one app's instance logs (``health.json`` counts them over every app)."""
    from kafka_soak.clients.health import log_events

    counts: dict[str, int] = {}
    for path in (run_dir / "logs").glob(f"{DAG_ID}-app-{name}-[0-9]*.log"):
        for event in log_events(path):
            for cls in event.classes:
                counts[cls] = counts.get(cls, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    rows = [one_run(size) for _ in range(RUNS[size])]
    versions = list(dict.fromkeys(v for r in rows for v in r["versions"]))
    figures, lines = [], [f"| run | wall | {' | '.join(f'Kafka Streams {v}' for v in versions)} |",
                          "|---|---|" + "---|" * len(versions)]
    for version in versions:
        clean = sum(r["versions"][version]["status"] == "passed" for r in rows)
        figures.append(figure(f"{DAG_ID}: Kafka Streams {version} passed", clean / max(1, len(rows)), "of runs",
                              None, "—", None, f"{clean} of {len(rows)} runs"))
        stalled = sum(bool(r["versions"][version]["anomalies"].get("stalled")) for r in rows)
        figures.append(figure(f"{DAG_ID}: Kafka Streams {version} stalled", stalled / max(1, len(rows)), "of runs",
                              None, "—", None, f"{stalled} of {len(rows)} runs"))
    for n, r in enumerate(rows, start=1):
        cells = []
        for version in versions:
            v = r["versions"][version]
            found = ", ".join(f"{k}={c}" for k, c in v["anomalies"].items()) or "no anomaly"
            status = v["status"] if v["status"].startswith("no verdict") else f"{v['status']} ({found})"
            thrown = ", ".join(f"{k} x{c}" for k, c in list(v["exceptions"].items())[:4]) or "no exception"
            quota = (f"quota {'bit' if v['bit'] else 'never bit'}, {v['achieved']} B/s median, throttled up to "
                     f"{v['throttle_ms_max']} ms") if v["bit"] is not None else "no quota"
            cells.append(f"{status}; {thrown}; {quota}")
        lines.append(f"| {n} | {r['wall_s']:.0f} s | {' | '.join(cells)} |")
    body = (f"Each run: `{DAG_ID}` with its defaults{' and ' + json.dumps(CONF[size]) if CONF[size] else ''}: "
            "one instance, one stream thread, one input partition, 1 KB of state per record at 32 records/s, "
            "`producer_byte_rate=35000` on each version's stream-thread producer and on its `txn-60s` control's "
            "(`producer.transaction.timeout.ms=60000`); the `no-quota` control runs without one. No baseline: what "
            "each app went through is the figure.\n\n" + "\n".join(lines))
    write_results("quota_eos", "Kafka Streams EOS over a producer quota (soak_quota_eos)", size, figures, body,
                  {"runs": rows})


if __name__ == "__main__":
    main()
