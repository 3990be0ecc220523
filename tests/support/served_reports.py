"""The soak reports as the UI plugin's app serves them, for the tests that read them: a finished run's files (stand-ins)
and where its report is, and raw requests to the app."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import quote

from kafka_soak.evidence import ui
from kafka_soak.shared import rundir

DAG_ID = "soak_eos_id_assignment"
RUN_ID = "manual__2026-11-22T10:00:00.123456+00:00"
REPORT = '<html><body><a href="data_docs/index.html">Data Docs</a> <a href="verdict.json">verdict</a></body></html>'
OUTSIDE = "content-of-a-file-outside-every-run-directory"
# Only a guard against a server that hangs: a request's first answer (the app's first use of the auth manager, a page's
# first read) can take seconds on a busy machine, and how many is no test's business.
REQUEST_TIMEOUT_S = 120


def write_run(root: Path, dag_id: str, run_id: str) -> Path:
    """A run directory with the files a finished run leaves (contents are stand-ins)."""
    run_dir = root / dag_id / rundir.safe_name(run_id)
    (run_dir / "data_docs").mkdir(parents=True)
    (run_dir / "logs").mkdir()
    (run_dir / "report.html").write_text(REPORT)
    (run_dir / "data_docs" / "index.html").write_text("<html>Great Expectations Data Docs</html>")
    (run_dir / "logs" / "generator.1.log").write_text("generator: 6000 records <script>alert(1)</script>\n")
    (run_dir / "verdict.json").write_text(json.dumps({"status": "passed"}))
    (run_dir / "params.json").write_text(json.dumps({"dag_id": dag_id, "run_id": run_id}))
    return run_dir


def get(port: int, path: str, token: str | None = None, cookie: bool = False) -> tuple[int, str, str]:
    """GET a raw path (sent exactly as given: no client normalises '..' away); returns status, type, body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    headers = {}
    if token:
        headers = {"Cookie": f"_token={token}"} if cookie else {"Authorization": f"Bearer {token}"}
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.getheader("content-type", ""), resp.read().decode(errors="replace")
    finally:
        conn.close()


def run_url(dag_id: str, run_id: str) -> str:
    """Where a DAG run's tab points once the UI fills in the href's placeholders (URL-encoded ids)."""
    href = next(v["href"] for v in ui.EXTERNAL_VIEWS if v["destination"] == "dag_run")
    return "/" + href.replace("{DAG_ID}", quote(dag_id, safe="")).replace("{RUN_ID}", quote(run_id, safe=""))
