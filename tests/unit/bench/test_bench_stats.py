"""The statistics behind the benchmark figures: percentiles, drift and ratios."""

import statistics
import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402


def test_percentiles_interpolate_like_the_inclusive_quantiles():
    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    assert common.percentile(values, 50) == statistics.median(values)
    assert abs(common.percentile(values, 95) - cuts[94]) < 1e-9
    assert common.percentile(values, 100) == 9.0


def test_drift_is_the_growth_per_step():
    assert common.slope([0.0, 2.0, 4.0, 6.0]) == 2.0
    assert common.slope([3.0, 3.0, 3.0]) == 0.0


def test_a_figure_carries_its_baseline_and_ratio_into_the_table():
    fig = common.figure("full speed", 90.0, "records/s", 100.0, "≥ 0.9× baseline", True)
    assert fig["ratio"] == 0.9
    row = common.figures_table([fig]).splitlines()[-1]
    assert row == "| full speed | 90 records/s | 100 records/s | 0.9× | ≥ 0.9× baseline | yes |"


def test_every_known_bug_scenario_names_its_affected_and_fixed_release():
    """``make bugs`` reads each scenario's pair from its defaults: Kafka Streams releases, or the reference worker's
    confluent-kafka releases, and the affected one is the first."""
    import bugs

    from kafka_soak.admission import load_scenario

    pairs = {dag_id: bugs.compared(load_scenario(bugs.SCENARIOS / f"{dag_id}.yaml")["params"]) for dag_id in bugs.SIGNS}
    assert pairs["bug_librdkafka_5213"] == ("confluent-kafka", ["2.13.0", "2.13.2"])
    assert pairs["bug_kafka_20685"] == ("Kafka Streams", ["4.2.1", "4.2.2"])
    assert all(len(releases) == 2 for _what, releases in pairs.values()), pairs
    rows = [{"run_dir": "r", "wall_s": 1.0, "outcome": "failed",
             "versions": {"2.13.0": {"status": "failed", "lost": 3}, "2.13.2": {"status": "passed"}}}]
    figures, table = common.side_by_side("bug_librdkafka_5213", rows, "2.13.0", "2.13.2",
                                         lambda r: common.caught(r, "2.13.0", ("lost",)), "confluent-kafka")
    assert [f["name"] for f in figures] == ["bug_librdkafka_5213: confluent-kafka 2.13.0 caught",
                                            "bug_librdkafka_5213: confluent-kafka 2.13.2 passed"]
    assert table[0].endswith("| confluent-kafka 2.13.0 | confluent-kafka 2.13.2 |\n|---|---|---|---|")
    assert "failed {'lost': 3}" in table[1]
