"""The soak reports in the Airflow UI: Airflow's plugin manager loads the plugin (a FastAPI app and the UI entries
that point at it), and the app, served for real by uvicorn on loopback and mounted the way the API server mounts
it, serves each run's report, Data Docs, logs and verdict, refuses any path outside a run directory, and answers
only requests that carry a token Airflow's auth manager issued (runs given a real broker's connection:
component/test_ui_plugin_broker.py; the real UI: e2e/test_ui_plugin_airflow.py)."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
from urllib.parse import quote, urljoin

import pytest
from support.served_reports import DAG_ID, OUTSIDE, REPORT, REQUEST_TIMEOUT_S, RUN_ID, get, run_url, write_run

from kafka_soak import run_plan
from kafka_soak.evidence import ui
from kafka_soak.shared import rundir


def policy(port: int, path: str, token: str) -> str:
    """The Content-Security-Policy a served file comes with."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        return conn.getresponse().getheader("content-security-policy", "")
    finally:
        conn.close()


def test_airflow_loads_the_plugin_with_its_app_and_ui_entries():
    """`airflow plugins` goes through the plugin manager with the project's plugins folder (make env)."""
    out = subprocess.run(["airflow", "plugins", "-o", "json"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "AIRFLOW__CORE__LAZY_LOAD_PLUGINS": "False"}, check=True).stdout
    listing = next(line for line in out.splitlines() if line.startswith("[{"))  # warnings may precede it
    plugin = next(p for p in json.loads(listing) if p["name"] == "soak_reports")
    assert plugin["source"] == "$PLUGINS_FOLDER/soak_reports.py"
    assert plugin["fastapi_apps"] == [{"app": "fastapi.applications.FastAPI", "url_prefix": "/soak-reports",
                                       "name": "Soak reports"}]
    views = {v["destination"]: v for v in plugin["external_views"]}
    assert views["nav"]["name"] == "Soak reports" and views["nav"]["href"] == "soak-reports/"
    assert views["dag_run"]["href"] == "soak-reports/runs/{DAG_ID}/{RUN_ID}/" and views["dag_run"]["url_route"]


def test_a_dag_run_reaches_its_report_and_what_the_report_links_to(served):
    port, token = served
    url = run_url(DAG_ID, RUN_ID)
    status, ctype, body = get(port, url, token)
    assert (status, ctype.split(";")[0], body) == (200, "text/html", REPORT)
    for link, kind, text in (("data_docs/index.html", "text/html", "Data Docs"),
                             ("verdict.json", "application/json", '"passed"'),
                             ("logs/generator.1.log", "text/plain", "6000 records")):
        status, ctype, body = get(port, urljoin(url, link), token)
        assert (status, ctype.split(";")[0]) == (200, kind), link
        assert text in body
    by_dir_name = f"{ui.URL_PREFIX}/runs/{DAG_ID}/{rundir.safe_name(RUN_ID)}/"
    assert get(port, by_dir_name, token)[:1] == (200,), "the listing links runs by their directory name"
    assert "connect-src 'none'" in policy(port, url, token), "a run's pages may not call Airflow's API"
    assert policy(port, urljoin(url, "verdict.json"), token).endswith("connect-src 'none'; form-action 'none'; "
                                                                     "base-uri 'none'; frame-ancestors 'self'; "
                                                                     "script-src 'none'"), "every file, not only HTML"


def test_a_page_runs_only_the_scripts_it_was_written_with(served, evidence):
    """A served page's policy names each inline script it holds by its hash (the report's chart and Vega's bundle);
    no 'unsafe-inline' lets another run, and a page without a script runs none."""
    import base64
    import hashlib

    scripts = ['vegaEmbed("#timeline", {})', "console.log('bundle')"]
    page = ("<html><head><script>" + scripts[1] + '</script><script type="application/json" id="spec">{}</script>'
            "</head><body><div id=timeline></div><script>" + scripts[0] + "</script></body></html>")
    run_dir = evidence / DAG_ID / rundir.safe_name(RUN_ID)
    (run_dir / "page.html").write_text(page)
    port, token = served
    served_policy = policy(port, urljoin(run_url(DAG_ID, RUN_ID), "page.html"), token)
    script_src = next(d.strip() for d in served_policy.split(";") if d.strip().startswith("script-src"))
    hashes = sorted(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts)
    assert sorted(script_src.split()[1:-1]) == hashes and script_src.endswith("'unsafe-eval'"), script_src
    assert "unsafe-inline" not in script_src and "'unsafe-inline'" in served_policy.split("style-src")[1].split(";")[0]
    data_docs = policy(port, urljoin(run_url(DAG_ID, RUN_ID), "data_docs/index.html"), token)
    assert data_docs.endswith("script-src 'none'"), data_docs


def test_the_listing_links_every_run_to_its_report(served, evidence):
    """The menu entry's page (history.render_history) lists the runs; each link it gives is served."""
    write_run(evidence, "soak_stale_state_standby", "scheduled__2026-11-22T02:30:00+00:00")
    port, token = served
    status, ctype, page = get(port, f"{ui.URL_PREFIX}/", token)
    assert (status, ctype.split(";")[0]) == (200, "text/html")
    links = sorted(set(re.findall(r'href="([^"]+/report\.html)"', page)))
    assert len(links) == 2, page
    for link in links:
        assert get(port, urljoin(f"{ui.URL_PREFIX}/", link), token)[::2] == (200, REPORT), link


@pytest.mark.parametrize("path", [
    f"/runs/{DAG_ID}/{quote(RUN_ID, safe='')}/../../../outside.txt",
    f"/runs/{DAG_ID}/{quote(RUN_ID, safe='')}/%2e%2e/%2e%2e/%2e%2e/outside.txt",
    f"/runs/{DAG_ID}/{quote(RUN_ID, safe='')}/..%2f..%2f..%2foutside.txt",
    "/runs/../outside.txt/x/",
    "/runs/%2e%2e/%2e/outside.txt",
    f"/runs/{DAG_ID}/{quote(RUN_ID, safe='')}/logs/escape.log",
    f"/runs/{DAG_ID}/{quote(RUN_ID, safe='')}//etc/passwd",
])
def test_nothing_outside_a_run_directory_is_served(served, path):
    port, token = served
    status, _, body = get(port, ui.URL_PREFIX + path, token)
    assert status in (400, 404), (status, body)
    assert OUTSIDE not in body and "root:" not in body


def test_another_dags_run_linked_into_a_dags_folder_an_svg_and_a_nul_byte_are_answered_safely(served, evidence):
    """A user allowed to read one DAG's runs reads only those: a symlink in its folder to another DAG's run is a 404;
    an SVG (which runs scripts as a page does) comes with the run pages' policy; a NUL byte is a 404, not a 500."""
    other = write_run(evidence, "soak_other_dag", "manual__2026-11-22T13:00:00+00:00")
    (evidence / DAG_ID / "manual__linked").symlink_to(other, target_is_directory=True)
    (evidence / DAG_ID / rundir.safe_name(RUN_ID) / "chart.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("/api/v2/dags")</script></svg>')
    port, token = served
    assert get(port, f"{ui.URL_PREFIX}/runs/{DAG_ID}/manual__linked/", token)[0] == 404
    assert get(port, f"{ui.URL_PREFIX}/runs/{DAG_ID}/manual__linked/verdict.json", token)[0] == 404
    svg = urljoin(run_url(DAG_ID, RUN_ID), "chart.svg")
    assert get(port, svg, token)[0] == 200 and "connect-src 'none'" in policy(port, svg, token)
    assert get(port, urljoin(run_url(DAG_ID, RUN_ID), "verdict.json%00.html"), token)[0] == 404


def test_a_missing_run_or_file_is_404(served):
    port, token = served
    status, _, body = get(port, run_url(DAG_ID, "manual__2026-01-01T00:00:00+00:00"), token)
    assert status == 404 and "no soak run" in body
    assert get(port, run_url("soak_absent", RUN_ID), token)[0] == 404
    assert get(port, urljoin(run_url(DAG_ID, RUN_ID), "data_docs/absent.html"), token)[0] == 404


def test_a_run_without_a_report_yet_says_so(served, evidence):
    run_id = "manual__2026-11-22T11:00:00+00:00"
    (evidence / DAG_ID / rundir.safe_name(run_id)).mkdir()
    port, token = served
    status, _, body = get(port, run_url(DAG_ID, run_id), token)
    assert status == 404 and "no report yet" in body


def test_only_requests_with_an_airflow_token_are_served(served):
    port, token = served
    url = run_url(DAG_ID, RUN_ID)
    assert get(port, url)[0] == 401
    assert get(port, url, token="not-a-jwt")[0] == 403
    assert get(port, url, token, cookie=True)[:1] == (200,), "the UI's session cookie is enough"


def test_secrets_written_into_the_app_s_command_are_served_masked_and_masked_at_release(served, evidence, tmp_path):
    """A deployment that wrote a password into its app's command (``--db-password=...``, ``--api-token ...``): the
    app prints its arguments; what the UI serves of the run, params.json included, holds neither, nor does the run
    directory once released. A flag, a count and a placeholder named like a secret are no secret."""
    from kafka_soak.infra import connection

    command = ["python", "-c", "import sys; print('args:', sys.argv[1:])", "--db-password=Hunter2-and-more",
               "--api-token", "tok-9f8e7d", "--keys", "500", "--use-key", "true", "--key-template", "{app_id}"]
    plan = run_plan.check({"app_command": command})
    assert set(connection.app_secrets(plan)) == {"Hunter2-and-more", "tok-9f8e7d"}
    run_id = "manual__2026-11-22T15:00:00+00:00"
    run_dir = evidence / "soak_own_secret" / rundir.safe_name(run_id)
    (run_dir / "logs").mkdir(parents=True)
    rundir.write_json(run_dir / rundir.PARAMS, {"params": {"app_command": command}, "plan": plan})
    log_file = run_dir / "logs" / "app-1.0.log"
    log_file.write_text(f"args: {command[4:]}\n")
    port, token = served
    for name in ("logs/app-1.0.log", rundir.PARAMS):
        page = get(port, f"{ui.URL_PREFIX}/runs/soak_own_secret/{quote(run_id, safe='')}/{name}", token)[2]
        assert "***" in page and "Hunter2-and-more" not in page and "tok-9f8e7d" not in page, page
        assert "500" in page and "true" in page
    assert sorted(connection.scrub(run_dir, connection.app_secrets(plan))) == sorted([log_file, run_dir / rundir.PARAMS])
    assert "Hunter2" not in log_file.read_text() + (run_dir / rundir.PARAMS).read_text()


def test_an_instance_s_state_directory_is_not_served(served, evidence):
    """A team's app keeps its state in {state_dir}, inside the run directory (kept across restarts): its RocksDB files
    are the app's data, not evidence; the UI serves none of them, in a run or in a member of a broker version matrix."""
    run_dir = evidence / DAG_ID / rundir.safe_name(RUN_ID)
    for state in (run_dir / rundir.STATE / "instance-1", run_dir / rundir.BROKERS / "4.3.1" / rundir.STATE / "instance-1"):
        state.mkdir(parents=True, exist_ok=True)
        (state / "000012.sst").write_text("customer-1 card 4111")
    port, token = served
    for path in ("state/instance-1/000012.sst", "brokers/4.3.1/state/instance-1/000012.sst"):
        status, _, body = get(port, f"{ui.URL_PREFIX}/runs/{DAG_ID}/{quote(RUN_ID, safe='')}/{path}", token)
        assert status == 404 and "4111" not in body and "state directory" in body, (status, body)
