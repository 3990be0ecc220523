"""The report of a night against a minute's, side by side: page size, time to write it, and time until its charts are
drawn in a headless browser.

    python bench/report_night.py --size quick   # 2 hours, 3 pairs
    python bench/report_night.py --size large   # 8 hours, 5 pairs

Each report is written from evidence made up at the size a night writes (``tests/support/night_evidence.py``:
soak_nightly's own program and its steps' events, a timeline point a second per series, a sample every 5 s of each of
16 processes, each app instance and its supervisor a new life every 10 minutes) and from a minute of the same (the
baseline). Opened in Debian's Chromium, headless, driven by Selenium
(``support.browser``): from the navigation's start until the timeline's SVG is in the page (the charts drawn), by the
page's own clock (``performance.now()``). Writes ``bench/results/report_night.{json,md}``.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import common
from support import night_evidence
from support.browser import CHARTS_DRAWN, headless_chromium

from kafka_soak.evidence import report

SIZES = {"quick": (2, 3), "large": (8, 5)}  # hours of the night, pairs
BASELINE_HOURS = 1 / 60
TIMEOUT_S = 60


def written(hours: float, where: Path) -> dict[str, Any]:
    """The report of a night of ``hours``: its path, size and the seconds it took to write."""
    run_dir = night_evidence.write(where, hours)
    started = time.monotonic()
    path = report.write(run_dir)
    return {"path": path, "write_s": time.monotonic() - started, "bytes": path.stat().st_size}


def measure(hours: float, pairs: int) -> dict[str, Any]:
    where = common.runs_dir("report-night")
    pages = {"night": written(hours, where / "night"), "minute": written(BASELINE_HOURS, where / "minute")}
    browser = headless_chromium()
    browser.set_script_timeout(TIMEOUT_S)
    try:
        opened: dict[str, list[float]] = {name: [] for name in pages}
        for pair in range(pairs):
            for name, page in pages.items():
                browser.get(page["path"].as_uri())
                opened[name].append(float(browser.execute_async_script(CHARTS_DRAWN)))
                print(f"pair {pair + 1}, {name}: charts drawn after {opened[name][-1]:.0f} ms", flush=True)
    finally:
        browser.quit()
    return {"hours": hours, "pairs": pairs,
            **{name: {"bytes": page["bytes"], "write_s": page["write_s"], "drawn_ms": opened[name],
                      "drawn_median_ms": statistics.median(opened[name])} for name, page in pages.items()}}


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    night, minute, hours = run["night"], run["minute"], run["hours"]
    return [common.figure(f"report of {hours:g} h: page size", night["bytes"] / 1e6, "MB", minute["bytes"] / 1e6,
                          "under a few MB", night["bytes"] < 3e6),
            common.figure(f"report of {hours:g} h: written in", night["write_s"], "s", minute["write_s"], "—", None),
            common.figure(f"report of {hours:g} h: charts drawn in headless Chromium", night["drawn_median_ms"] / 1000,
                          "s", minute["drawn_median_ms"] / 1000, "< 2 s", night["drawn_median_ms"] < 2000)]


BODY = ("Medians of the pairs, alternating. Value: the report of a night made up at its size (soak_nightly's program "
        "of that length, a timeline point a second, a sample every 5 s of 16 processes, an app instance and its "
        "supervisor a new life every 10 minutes); baseline: the report of a minute of the same. Drawn: from the "
        "navigation's start in a new tab of one headless Chromium until the timeline's SVG is in the page, by the "
        "page's clock.")


def main() -> None:
    size = common.parse_size(__doc__.splitlines()[0])
    hours, pairs = SIZES[size]
    run = measure(hours, pairs)
    common.write_results("report_night", "The report of a night", size, figures(run), BODY, {"runs": [run]})


if __name__ == "__main__":
    main()
