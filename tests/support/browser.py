"""Headless Chromium driven by Selenium, offline (Debian's chromium and chromium-driver, which `make test` installs):
how the tests look at a report and the benchmarks time one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
# Resolves with the page's clock (ms since its navigation began) once the report's timeline has its SVG: its charts
# are drawn.
CHARTS_DRAWN = """
const done = arguments[arguments.length - 1];
const drawn = () => document.querySelector('#timeline svg');
if (drawn()) { done(performance.now()); return; }
new MutationObserver((_, watching) => { if (drawn()) { watching.disconnect(); done(performance.now()); } })
  .observe(document.body, {childList: true, subtree: true});
"""


def headless_chromium() -> Any:
    """A Chromium no background network reaches out of, its driver given (no download)."""
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    assert not missing, f"{missing} missing: `make test` installs Debian's chromium and chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,2400"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    return driver
