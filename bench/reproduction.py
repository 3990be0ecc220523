"""Reproduction rates of the seed scenarios on the real Kafka Streams app.

How often each seed scenario's default program catches the seeds' bug (KAFKA-14172 / KAFKA-14624: a cache not
cleared when a standby task is recycled into an active one) on Kafka Streams 3.4.0, which has it, and how often
the newest release, which has the fix, passes. Every run is one DAG run of the scenario with
``streams_versions: [3.4.0, <newest>]``: both versions side by side on the same input and the same program, so
each run measures both rates under identical conditions. quick: 5 runs per scenario; large: 10. The runs share one
runs directory, as a deployment's nightly runs do, so its history page (``history.html``) counts the same rates: the
table of rates below is that page's.
"""

from __future__ import annotations

from functools import partial

from common import caught, matrix_run, parse_size, runs_dir, side_by_side, write_results

from kafka_soak.evidence.history import HISTORY, rates, scenarios
from kafka_soak.params import STREAMS_VERSION

BUGGY = "3.4.0"
SCENARIOS = ("soak_stale_state_standby", "soak_id_assignment_rebalance")
RUNS = {"quick": 5, "large": 10}
BUG_ANOMALIES = ("stale_state", "id_reuse")
RUN_TIMEOUT_S = 1200


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    shared = runs_dir("reproduction")
    conf = {"streams_versions": [BUGGY, STREAMS_VERSION]}
    runs = {dag_id: [matrix_run(dag_id, conf, shared, RUN_TIMEOUT_S) for _ in range(RUNS[size])] for dag_id in SCENARIOS}
    figures, lines = [], []
    history = scenarios(shared)
    for dag_id, rows in runs.items():
        found, table = side_by_side(dag_id, rows, BUGGY, STREAMS_VERSION,
                                    partial(caught, affected=BUGGY, signs=BUG_ANOMALIES))
        figures += found
        lines += table
        lines.append(f"\nIts history page ({shared / HISTORY}):\n\n| app | runs | caught (failed) | passed | stalled | "
                     "inconclusive | no verdict |\n|---|---|---|---|---|---|---|")
        lines += [f"| {r.app} | {r.runs} | {r.caught} | {r.passed} | {r.stalled} | {r.inconclusive} | {r.no_verdict} |"
                  for r in rates(history.get(dag_id, []))]
        lines.append("")
    body = ("Each run: the scenario's defaults with `streams_versions: [\"3.4.0\", \"" + STREAMS_VERSION + "\"]`; "
            "caught = Kafka Streams 3.4.0 failed with stale_state or id_reuse; passed = the newest version's verdict "
            "passed. No baseline: the rate is the figure.\n\n" + "\n".join(lines))
    write_results("reproduction", "Reproduction rates of the seed scenarios (Kafka Streams app)", size, figures, body,
                  {"runs": runs})


if __name__ == "__main__":
    main()
