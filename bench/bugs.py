"""How often each known-bug scenario catches its bug on the affected release and passes the fixed one.

Every scenario ``dags/scenarios/bug_kafka_<n>.yaml`` (``bug_librdkafka_<n>.yaml``) compares an affected release with a
fixed one (or a control) in its defaults: Kafka Streams releases (``streams_versions: [affected, fixed]``), broker
releases (``kafka_versions``) or the reference worker's confluent-kafka releases (``worker_versions``), both side by
side on the same input and the same program, so each run measures both rates under identical conditions. Each run is
one DAG run of the scenario's defaults; quick:
5 runs per scenario, large: 10. caught = the affected release failed with the anomalies its bug makes; passed = the
fixed release passed. The runs share one runs directory per scenario, as a deployment's nightly runs do.
``BUGS="bug_kafka_18943 ..."`` measures those scenarios again and keeps the other scenarios' last runs.
"""

from __future__ import annotations

from functools import partial

from common import ROOT, caught, matrix_run, parse_size, remeasured, runs_dir, side_by_side, write_results

from kafka_soak.admission import load_scenario

SCENARIOS = ROOT / "dags" / "scenarios"
RUNS = {"quick": 5, "large": 10}
# What each bug does to the data, as the checker names it (the affected release may show app_health besides).
SIGNS = {"bug_kafka_20685": ("wrong_aggregate",), "bug_kafka_18943": ("wrong_aggregate",),
         "bug_kafka_17635": ("wrong_aggregate",), "bug_kafka_20785": ("app_health",),
         "bug_kafka_16692": ("app_health",), "bug_kafka_19690": ("app_health",),
         "bug_librdkafka_4261": ("duplicated",), "bug_librdkafka_5213": ("lost",)}
# The params a scenario compares releases by (the first it sets), and what a release of each is.
COMPARED = {"worker_versions": "confluent-kafka", "streams_versions": "Kafka Streams", "kafka_versions": "Apache Kafka"}


def compared(params: dict) -> tuple[str, list[str]]:
    """What a known-bug scenario compares, and its affected and fixed (or control) releases."""
    param = next(name for name in COMPARED if params.get(name))
    return COMPARED[param], params[param]


RUN_TIMEOUT_S = 1200


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    chosen, results = remeasured("bugs", "BUGS", SIGNS, "known-bug scenarios")
    for dag_id in chosen:
        shared = runs_dir(f"bugs-{dag_id}")
        results[dag_id] = [matrix_run(dag_id, {}, shared, RUN_TIMEOUT_S) for _ in range(RUNS[size])]
    figures, lines = [], []
    for dag_id, signs in SIGNS.items():
        if dag_id not in results:
            continue
        what, (affected, fixed) = compared(load_scenario(SCENARIOS / f"{dag_id}.yaml")["params"])
        found, table = side_by_side(dag_id, results[dag_id], affected, fixed,
                                    partial(caught, affected=affected, signs=signs), what)
        figures += found
        lines += [*table, ""]
    body = ("Each run: the scenario's defaults (`make soak SCENARIO=<dag_id>`); caught = the affected release failed "
            "with its bug's anomalies; passed = the fixed release's verdict passed. No baseline: the rate is the "
            "figure.\n\n" + "\n".join(lines))
    write_results("bugs", "Known bugs: how often each scenario catches its bug", size, figures, body,
                  {"runs": results})


if __name__ == "__main__":
    main()
