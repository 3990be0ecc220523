"""The soak report as a person sees it: a real failed run (bug=drop through `airflow dags test`: the broken run of
``conftest.alerted_runs``), its report opened in headless Chromium (Debian's chromium + chromium-driver, driven by
Selenium), checked for what a reader needs: the anomaly and its count, the charts drawn with a point per lost record,
links that open, no script error. A screenshot is kept in ``test-artifacts/`` (or ``$SOAK_TEST_ARTIFACTS``)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from support import ROOT
from support.soak_runs import ALERTED_RUNS, SHORT

from kafka_soak.evidence import history, report
from kafka_soak.shared import rundir

# Its tests read a run of the session's alerted pair: the pytest-xdist worker that runs that pair runs them.
pytestmark = pytest.mark.xdist_group(name=ALERTED_RUNS)

ARTIFACTS = Path(os.environ.get("SOAK_TEST_ARTIFACTS", ROOT / "test-artifacts"))
LOST = SHORT["records"] // 1000
APP_ID = "soak_eos_id_assignment-app"


@pytest.fixture(scope="module")
def failed_run(alerted_runs) -> Path:
    code, run_dir, verdict = alerted_runs.broken
    assert code == 1 and verdict["status"] == "failed" and verdict["anomalies"]["lost"] == LOST
    return run_dir


def open_page(browser, path: Path, ready_css: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(path.as_uri())
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, ready_css))


def script_errors(browser) -> list[dict]:
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def test_the_report_s_chart_runs_under_the_policy_the_ui_serves_it_with_and_an_injected_script_does_not(
        browser, failed_run, tmp_path):
    """The UI serves the report under a policy that names its own inline scripts by hash (``ui.script_sources``, no
    'unsafe-inline'): under it, as a meta policy here, the chart draws every mark; a script added after the policy
    was worked out never runs."""
    from kafka_soak.evidence.ui import RUN_POLICY, script_sources

    page = (failed_run / "report.html").read_bytes()
    policy = f"{RUN_POLICY.split('; frame-ancestors')[0]}; {script_sources(page)}"  # frame-ancestors: headers only
    end = page.rindex(b"</body>")  # the page's own end (Vega's bundle quotes the tag)
    injected = page[:end] + b"<script>document.title = 'injected'</script>" + page[end:]
    browser.get_log("browser")  # this page's messages only
    served = tmp_path / "report.html"
    served.write_bytes(injected.replace(b"<head>", f'<head><meta http-equiv="Content-Security-Policy" '
                                                   f'content="{policy}">'.encode(), 1))
    open_page(browser, served, "#timeline svg path[aria-label]")
    marks = browser.find_elements("css selector", "#timeline svg path[aria-label]")
    assert len([m for m in marks if "anomaly: lost" in m.get_attribute("aria-label")]) == LOST
    assert browser.title != "injected"
    refused = [e["message"] for e in script_errors(browser)]
    assert len(refused) == 1 and "Content Security Policy" in refused[0], refused


def test_report_of_a_failed_run_shows_the_anomaly_on_the_time_axis_with_links_that_open(browser, failed_run):
    from selenium.webdriver.common.by import By

    page = failed_run / "report.html"
    assert page.exists(), "the DAG's failure callback writes the report"
    open_page(browser, page, "#timeline svg path[aria-label]")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "report-failed-run.png"))
    assert not script_errors(browser)

    assert browser.find_element(By.ID, "status").text == "FAILED"
    lost = browser.find_element(By.CSS_SELECTOR, '#verdict tr[data-anomaly="lost"]')
    cells = [c.text for c in lost.find_elements(By.TAG_NAME, "td")]
    assert cells[:2] == ["lost", str(LOST)] and "found" in lost.get_attribute("class")
    assert "input_ids · expect_column_values_to_be_between" in cells[2]
    # which of the lost records the row shows first is Spark's partitions' order: any of them, and only them
    shown = [int(i) for i in re.findall(r'"id": (\d+)', cells[3])]
    assert shown and set(shown) <= {i * 1000 for i in range(1, LOST + 1)}, cells[3]

    marks = [p.get_attribute("aria-label") for p in browser.find_elements(By.CSS_SELECTOR, "#timeline svg path[aria-label]")]
    lost_points = [m for m in marks if "anomaly: lost" in m]
    assert len(lost_points) == LOST, "one point per lost record"
    assert {f"id: {i * 1000}" for i in range(1, LOST + 1)} == {part for m in lost_points for part in m.split("; ")
                                                                if part.startswith("id: ")}
    assert any("lane: instance 1" in m and "state: running" in m for m in marks), "instance 1's running span"
    assert any("lane: instance 2" in m for m in marks)

    # The page's own links (the chart's export menu inside #timeline is Vega-Embed's, with href="#"): files of the
    # run directory, and the DAG run in the Airflow UI, as the deployment's [api] base_url says where that is.
    links = {a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "a[href]:not(#timeline a)")}
    run_id = json.loads((failed_run / "params.json").read_text())["run_id"]
    ui = f"http://127.0.0.1:8080/dags/soak_eos_id_assignment/runs/{quote(run_id)}"
    assert ui in links
    links.discard(ui)
    assert links and all(link.startswith(failed_run.as_uri()) for link in links), "links stay in the run directory"
    dead = [link for link in links if not Path(link.removeprefix("file://")).is_file()]
    assert not dead, "every link opens a file"
    for name in ("data_docs/index.html", "verdict.json", "program.jsonl", f"logs/{APP_ID}-1.0.log"):
        assert f"{failed_run.as_uri()}/{name}" in links
    assert "http" not in " ".join(e.get_attribute("src") or "" for e in browser.find_elements(By.TAG_NAME, "script")), \
        "the page loads nothing from a CDN"

    browser.find_element(By.LINK_TEXT, "Data Docs").click()
    assert browser.current_url.endswith("data_docs/index.html") and "input_ids" in browser.page_source


def test_the_alert_points_at_the_report_and_the_history_page_leads_to_it(browser, failed_run, alerted_runs):
    from selenium.webdriver.common.by import By

    runs_dir = alerted_runs.runs_dir
    alerts = [json.loads(line) for line in (runs_dir / "alerts.jsonl").read_text().splitlines()]
    alert = next(a for a in alerts if a["run_dir"] == str(failed_run))
    assert alert["report"] == str(failed_run / "report.html")

    open_page(browser, runs_dir / history.HISTORY, "table.runs")
    run_id = json.loads((failed_run / "params.json").read_text())["run_id"]
    row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "table.runs tr") if run_id in r.text)
    assert "failed" in row.text and f" {LOST} " in f" {row.text} "
    row.find_element(By.LINK_TEXT, run_id).click()
    assert browser.current_url == (failed_run / "report.html").as_uri()
    assert browser.find_element(By.ID, "status").text == "FAILED"


def test_a_run_that_stopped_before_its_verdict_still_gets_a_report_that_says_so(failed_run, tmp_path):
    """What provisioning and the program left, without the checker's files (a run that broke before validate)."""
    run_dir = tmp_path / "soak_eos_id_assignment" / "broken"
    run_dir.mkdir(parents=True)
    for name in ("params.json", "program.json", "program.jsonl", "events.jsonl"):
        shutil.copy(failed_run / name, run_dir / name)
    page = report.write(run_dir).read_text()
    assert 'id="no-verdict"' in page and 'id="status">NO VERDICT<' in page
    assert 'id="timeline-spec"' in page, "the program's timeline is still drawn"
    assert history.run_row(run_dir, tmp_path).status == "no verdict"


def test_a_stall_no_thread_reached_is_said_not_applied(failed_run, tmp_path):
    """A verdict without one of its faults says so: the drain's account of a stall it had to disarm."""
    run_dir = tmp_path / "soak_eos_id_assignment" / "unstalled"
    run_dir.mkdir(parents=True)
    for name in ("params.json", "program.json", "program.jsonl", "events.jsonl"):
        shutil.copy(failed_run / name, run_dir / name)
    rundir.write_json(run_dir / rundir.DRAIN, {"status": "drained", "stalls_disarmed": [2], "stalls_traced": []})
    page = report.render(run_dir)
    assert 'id="stalls-disarmed"' in page and "no thread reached the stall of step(s)\n  2 by the end of the drain" in page
    assert 'id="stalls-disarmed"' not in report.render(failed_run)
