"""What soak_quota_eos shows: Kafka Streams under exactly-once with its producer slightly over a byte-rate quota.

Every run is one DAG run of the scenario with its version matrix (the original's line, 3.8.1, and the newest
release side by side, each producer under its own 35 000 B/s quota, on the same input and program). Per version
and run: the verdict, the exceptions Kafka Streams logged by class (InvalidProducerEpochException,
TaskCorruptedException, TimeoutException, ...), the app-health incidents, and what the broker measured of the quota
(median rate, largest throttle). quick: 3 runs of 4 minutes of load; large: 5 runs of the scenario's 10 minutes.
A scenario that finds nothing is a result too: the figures say how many runs were clean.
"""

from __future__ import annotations

import json
from typing import Any

from common import DagsTest, figure, parse_size, runs_dir, write_results

DAG_ID = "soak_quota_eos"
RUNS = {"quick": 3, "large": 5}
# quick: the scenario's rate and quota over a shorter program (4 steps of 60 s at 32 records/s)
CONF = {"quick": {"program": "1 0 0 0", "records": 7680}, "large": {}}
RUN_TIMEOUT_S = 1800


def one_run(size: str) -> dict[str, Any]:
    """One matrix run: per version its status, anomalies, exceptions and quota outcome."""
    test = DagsTest(DAG_ID, CONF[size], runs_dir(f"quota-eos-{size}"))
    run_dir, _, code, wall = test.run(lambda _: None, RUN_TIMEOUT_S)
    verdict_file = run_dir / "verdict.json"
    verdict = json.loads(verdict_file.read_text()) if verdict_file.exists() else {}
    health = verdict.get("health", {})
    quotas = {q["client_id"]: q for q in verdict.get("quotas", [])}
    versions = {}
    for row in verdict.get("matrix", []):
        version = row["version"]
        quota = next((q for cid, q in quotas.items() if f"-{version}-" in cid), {})
        versions[version] = {"status": row["status"],
                             "anomalies": {a: n for a, n in row["anomalies"].items() if n},
                             "incidents": [i["what"] for i in health.get("incidents", []) if i.get("subject") == version],
                             "exceptions": count_exceptions(run_dir, version), "achieved": quota.get("achieved"),
                             "throttle_ms_max": quota.get("throttle_ms_max"), "bit": quota.get("bit")}
    result = {"run_dir": str(run_dir), "wall_s": round(wall, 1), "outcome": test.outcome(code), "versions": versions}
    print(f"{DAG_ID}: {json.dumps(result)}", flush=True)
    return result


def count_exceptions(run_dir, version: str) -> dict[str, int]:
    """Exceptions by class in one version's instance logs (``health.json`` counts them over every version)."""
    from kafka_soak.health import log_events

    counts: dict[str, int] = {}
    for path in (run_dir / "logs").glob(f"{DAG_ID}-app-{version}-*.log"):
        for event in log_events(path):
            for cls in event.classes:
                counts[cls] = counts.get(cls, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    rows = [one_run(size) for _ in range(RUNS[size])]
    judged = [r for r in rows if r["versions"]]
    versions = sorted({v for r in judged for v in r["versions"]})
    figures, lines = [], [f"| run | wall | {' | '.join(f'Kafka Streams {v}' for v in versions)} |",
                          "|---|---|" + "---|" * len(versions)]
    for version in versions:
        clean = sum(r["versions"][version]["status"] == "passed" for r in judged if version in r["versions"])
        figures.append(figure(f"{DAG_ID}: Kafka Streams {version} passed", clean / max(1, len(judged)), "of runs",
                              None, "—", None, f"{clean} of {len(judged)} runs with a verdict"))
    for n, r in enumerate(rows, start=1):
        cells = []
        for version in versions:
            v = r["versions"].get(version)
            if v is None:
                cells.append(f"no verdict ({r['outcome']})")
                continue
            found = ", ".join(f"{k}={n}" for k, n in v["anomalies"].items()) or "no anomaly"
            thrown = ", ".join(f"{k} x{n}" for k, n in list(v["exceptions"].items())[:4]) or "no exception"
            cells.append(f"{v['status']} ({found}); {thrown}; quota {'bit' if v['bit'] else 'never bit'}, "
                         f"{v['achieved']} B/s median, throttled up to {v['throttle_ms_max']} ms")
        lines.append(f"| {n} | {r['wall_s']:.0f} s | {' | '.join(cells)} |")
    body = (f"Each run: `{DAG_ID}` with its defaults{' and ' + json.dumps(CONF[size]) if CONF[size] else ''}: "
            "one instance, one stream thread, one input partition, 1 KB of state per record at 32 records/s, "
            "`producer_byte_rate=35000` on each version's stream-thread producer. No baseline: what each version "
            "went through is the figure.\n\n" + "\n".join(lines))
    write_results("quota_eos", "Kafka Streams EOS over a producer quota (soak_quota_eos)", size, figures, body,
                  {"runs": rows})


if __name__ == "__main__":
    main()
