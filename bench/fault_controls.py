"""No false alarm from a fault: the healthy reference apps through each fault kind the program has beyond a process
(a stalled thread of the app or of a broker, a network partition, ...) pass every run.

Each control is a program of one kind at a dose a correct exactly-once app must survive (a stall shorter than the
transaction timeout, a partition shorter than the group's session, ...), run with the reference worker and with the
Kafka Streams app (a control of one app's settings with that app alone) on the default scenario
(``soak_eos_id_assignment``); a run passes when its verdict does. Quick: 5 runs per control and app; large: 10.
``CONTROLS="stall ..."`` measures those again and keeps the others' last runs. A failed run's directory is in the
table: its report says what the app did.
"""

from __future__ import annotations

import json

from common import DagsTest, figure, parse_size, remeasured, runs_dir, write_results

from kafka_soak.shared import rundir

DAG_ID = "soak_eos_id_assignment"
RUNS = {"quick": 5, "large": 10}
RUN_TIMEOUT_S = 1200
APPS = {"worker": {"app": "worker"}, "streams": {"app": "streams"}}
# Each control: what it doses and the conf of its runs. Kafka Streams' transaction timeout under EOS is 10 s, the
# worker's 30 s: the stalls stay under both, and so do the network cuts (a Kafka Streams commit held past 10 s by a cut
# meets KAFKA-20785 on brokers 4.0.1 and later: 1 of 5 runs with 12 s cuts, docs/scenarios.md).
CONTROLS = {
    "stall": ("a thread stalled at its commit and inside its transaction, 6 s each, of two of three instances",
              {"instances": 3, "program": "1 2 3 0 s1@commit:6 0 s2@process:6 0", "interval_s": 8, "records": 6000}),
    "network": ("an instance of two cut from every broker for 8 s, then a broker of three cut from the others for 8 s",
                {"brokers": 3, "instances": 2, "program": "1 2 n1- n1+ nb2- nb2+ 0", "interval_s": 8,
                 "records": 6000}),
    "broker-stall": ("the broker's request handler held 5 s before appending records of an ongoing transaction, twice",
                     {"instances": 2, "program": "1 2 0 sb1@append:5 0 sb1@append:5 0", "interval_s": 8,
                      "records": 6000}),
}
# soak_nightly's dose of its broker cuts, each broker in turn, with its Kafka Streams settings (a 60 s transaction
# timeout, the classic transaction protocol, a 45 s session) at 300 records/s: a cut of 30 s, shorter than both. Then
# the same beside Kafka Streams 3.9.1, whose client predates TxnOffsetCommit version 5 (4.0's clients send it).
NIGHTLY_CUTS = {"app": "streams", "brokers": 3, "instances": 3, "partitions": 12,
                "program": "1 2 3 0 nb1- nb1+ nb2- nb2+ nb3- nb3+ 0", "interval_s": 30, "rate": 300, "records": 99000,
                "session_timeout_ms": 45000, "transaction_version": 1,
                "streams_config": {"producer.transaction.timeout.ms": 60000}}
CONTROLS["nightly-broker-cuts"] = ("each broker of three cut from the others for 30 s in turn, soak_nightly's Kafka "
                                   "Streams settings", NIGHTLY_CUTS)
CONTROLS["nightly-broker-cuts-3.9"] = ("the same, Kafka Streams 3.9.1 beside 4.3.1 on one cluster",
                                       {**NIGHTLY_CUTS, "streams_versions": ["3.9.1", "4.3.1"]})


def run(control: str, app: str, runs) -> dict:
    """One run of a control with one app: its verdict's status and anomalies."""
    conf = {**CONTROLS[control][1], **APPS[app]}
    test = DagsTest(DAG_ID, conf, runs)
    run_dir, _, code, wall = test.run(lambda _: None, RUN_TIMEOUT_S)
    verdict = rundir.read_json(run_dir / rundir.VERDICT) or {}
    drain = rundir.read_json(run_dir / rundir.DRAIN) or {}
    # a control whose stall no thread reached proves nothing: it does not count as passed
    missed = drain.get("stalls_disarmed", [])
    health = rundir.read_json(run_dir / rundir.HEALTH) or {}
    row = {"run_dir": str(run_dir), "wall_s": round(wall, 1), "outcome": test.outcome(code),
           "status": f"stall of step(s) {missed} not applied" if missed else verdict.get("status", "no verdict"),
           "anomalies": {k: v for k, v in verdict.get("anomalies", {}).items() if v},
           "thread_deaths": health.get("thread_deaths", 0),
           "versions": {m["version"]: {"status": m["status"], "anomalies": {k: v for k, v in m["anomalies"].items() if v}}
                        for m in verdict.get("matrix", [])}}
    print(f"{control}/{app}: {json.dumps(row)}", flush=True)
    return row


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    chosen, results = remeasured("fault_controls", "CONTROLS", CONTROLS, "controls")
    for control in chosen:
        for app in (a for a in APPS if CONTROLS[control][1].get("app", a) == a):  # a control may be one app's
            shared = runs_dir(f"fault-controls-{control}-{app}")
            results[f"{control}/{app}"] = [run(control, app, shared) for _ in range(RUNS[size])]
    figures, lines = [], ["| control | app | program | runs passed | failed runs |", "|---|---|---|---|---|"]
    for key, rows in results.items():
        control, app = key.split("/")
        if control not in CONTROLS:
            continue
        passed = sum(r["status"] == "passed" for r in rows)
        figures.append(figure(f"{control}: {app} passed", passed / max(1, len(rows)), "of runs", None,
                              "every run (1.0)", passed == len(rows) and bool(rows), f"{passed} of {len(rows)} runs"))
        failed = "; ".join(f"{r['status']} {r.get('versions') or r['anomalies'] or r['outcome']}"
                           f"{', stream threads died: ' + str(r['thread_deaths']) if r.get('thread_deaths') else ''} "
                           f"({r['run_dir']})" for r in rows if r["status"] != "passed")
        lines.append(f"| {control}: {CONTROLS[control][0]} | {app} | `{CONTROLS[control][1]['program']}` | "
                     f"{passed} of {len(rows)} | {failed or '—'} |")
    body = ("Each run: `make soak` of the default scenario with the control's conf and the app; passed = the verdict "
            "passed. No baseline: a healthy app must pass every run.\n\n" + "\n".join(lines))
    write_results("fault_controls", "No false alarm: the reference apps through each fault kind", size, figures, body,
                  {"runs": results})


if __name__ == "__main__":
    main()
