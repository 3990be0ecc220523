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
