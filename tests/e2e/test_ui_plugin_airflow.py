"""The soak reports in the real Airflow UI: an API server with the plugin, looked at in headless Chromium."""

from __future__ import annotations

from urllib.parse import quote

from support.airflow_stack import PROBE_DAG, AirflowStack
from support.served_reports import run_url, write_run

from kafka_soak.shared import rundir


def test_a_dag_run_page_of_the_airflow_ui_shows_its_report(browser, tmp_path):
    """The real UI (API server with the plugin, headless Chromium): a DAG run's page has the "Soak report" tab,
    it shows the run's report, whose links open inside it; Browse → Soak reports lists the run."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with AirflowStack(tmp_path) as stack:
        stack.run("dags", "reserialize")
        stack.start("api-server")
        token = stack.token()
        run_id = stack.trigger(stack.api(token))  # stays queued: no scheduler here, none needed
        write_run(stack.runs, PROBE_DAG, run_id)
        wait = WebDriverWait(browser, 60)
        browser.get(f"{stack.base}/api/v2/version")
        browser.add_cookie({"name": "_token", "value": token})  # the session cookie the UI's login sets
        browser.get(f"{stack.base}/dags/{PROBE_DAG}/runs/{quote(run_id, safe='')}")
        wait.until(lambda d: d.find_elements(By.XPATH, "//*[normalize-space(text())='Soak report']"))[0].click()
        frame = wait.until(lambda d: d.find_elements(By.TAG_NAME, "iframe"))[0]
        assert frame.get_attribute("src").endswith(run_url(PROBE_DAG, run_id))
        browser.switch_to.frame(frame)
        wait.until(lambda d: d.find_elements(By.LINK_TEXT, "Data Docs"))[0].click()
        wait.until(lambda d: "Great Expectations Data Docs" in d.page_source)
        browser.switch_to.default_content()
        browser.get(f"{stack.base}/")
        for entry in ("Browse", "Soak reports"):
            wait.until(lambda d, e=entry: d.find_elements(By.XPATH, f"//*[normalize-space(text())='{e}']"))[0].click()
        browser.switch_to.frame(wait.until(lambda d: d.find_elements(By.TAG_NAME, "iframe"))[0])
        link = wait.until(lambda d: d.find_elements(By.PARTIAL_LINK_TEXT, "manual__"))[0]
        assert link.get_attribute("href").endswith(f"/runs/{PROBE_DAG}/{rundir.safe_name(run_id)}/report.html")
        browser.switch_to.default_content()
