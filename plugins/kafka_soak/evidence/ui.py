"""The soak reports in the Airflow UI: a FastAPI app the API server mounts (plugin ``plugins/soak_reports.py``).

A run's evidence stays where the run left it (``$SOAK_RUNS_DIR/<dag_id>/<run dir>/``); this app only serves it:

- ``/`` — every run of every scenario (``history.render_history``), each linking to its report;
- ``/runs/<dag_id>/<run_id>/`` — that DAG run's ``report.html``; ``<run_id>`` as Airflow names it (the DAG
  run tab passes it) or as its directory is named (the listing links so);
- ``/runs/<dag_id>/<run_id>/<path>`` — any file of that run directory (Data Docs, logs, ``verdict.json``), so
  the report's relative links work as they do on disk.

Nothing outside a run directory of the DAG in the path is served: a path that resolves elsewhere (``..``, a symlink
out, a symlink to another DAG's run, a NUL byte) is a 404. Every file comes with the run pages' content-security
policy. A run on the ``external`` backend is masked at rest when it is released (``teardowns.release``); what is
served from it is masked again with its connection's secret values (in every form ``secret_values`` lists), streamed
in bounded memory.
Access is the API server's own: the JWT the UI keeps in its cookie (or a bearer token), and the user must be
allowed to read the DAG's runs (the listing: every DAG's runs).
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, Response, StreamingResponse

from kafka_soak.shared import rundir

URL_PREFIX = "/soak-reports"
# Hrefs are relative (no leading slash): the UI resolves them against its own base URL, so they work behind a
# proxy that serves Airflow under a sub-path. The UI fills in {DAG_ID} and {RUN_ID} (URL-encoded) on DAG runs.
EXTERNAL_VIEWS: list[dict[str, Any]] = [
    {"name": "Soak reports", "href": f"{URL_PREFIX[1:]}/", "destination": "nav", "category": "browse",
     "url_route": "soak-reports"},
    {"name": "Soak report", "href": f"{URL_PREFIX[1:]}/runs/{{DAG_ID}}/{{RUN_ID}}/", "destination": "dag_run",
     "url_route": "soak-report"},
]
# Logs and JSON are served as the text they are, never sniffed into HTML by the browser.
NO_SNIFF = {"X-Content-Type-Options": "nosniff"}
# A run directory's pages (report, Data Docs) may not call Airflow's API with the viewer's session (no fetch, XHR,
# WebSocket or form post), nor load from or send to anything outside the Airflow origin, and run no script but the
# ones the page was written with (``script_sources``). (A full CSP sandbox, an opaque origin, would also drop the UI's
# SameSite session cookie on the links between a run's own pages.)
RUN_POLICY = ("default-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'none'; "
              "form-action 'none'; base-uri 'none'; frame-ancestors 'self'")
INLINE_SCRIPT = re.compile(rb"<script\b(?![^>]*\bsrc\s*=)([^>]*)>(.*?)</script\s*>", re.S | re.I)


def script_sources(page: bytes) -> str:
    """The ``script-src`` of a served file: the hash of each inline script an HTML page holds as served (the
    report's chart and its Vega bundle) and eval (Vega compiles its expressions), nothing else, so a script that found
    its way into a page (an app's output quoted in it) never runs; none at all in any other file (an SVG)."""
    hashes = [base64.b64encode(hashlib.sha256(body).digest()).decode() for attrs, body in INLINE_SCRIPT.findall(page)
              if b"application/json" not in attrs.lower()]
    return "script-src " + (" ".join(f"'sha256-{h}'" for h in hashes) + " 'unsafe-eval'" if hashes else "'none'")


def run_page(page: bytes = b"") -> dict[str, str]:
    """The headers a run's file is served with: never sniffed, under the run pages' policy."""
    return {**NO_SNIFF, "Content-Security-Policy": f"{RUN_POLICY}; {script_sources(page)}"}

app = FastAPI(title="kafka-soak reports", docs_url=None, redoc_url=None, openapi_url=None)


async def may_read_runs(request: Request) -> Any:
    """Let through a user the API server authenticates who may read the runs of the DAG in the path (for the
    listing: of some DAG; it then shows only the DAGs the user may read); returns the user. Airflow's auth is
    imported here, not at module level: every task process loads the plugins, and only the API server needs it
    (importing it costs a task about a second)."""
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import bearer_scheme, get_user, requires_access_dag

    user = await get_user(request=request, _oauth_token=None, bearer_credentials=await bearer_scheme(request))
    requires_access_dag("GET", DagAccessEntity.RUN)(request, user)
    return user


def readable_dags(user: Any, dag_ids: set[str]) -> set[str]:
    """Of ``dag_ids``, those whose runs ``user`` may read (``?dag_id=`` on the listing authorises one DAG, not all)."""
    from airflow.api_fastapi.app import get_auth_manager

    return get_auth_manager().filter_authorized_dag_ids(dag_ids=dag_ids, user=user, method="GET")


def run_file(dag_id: str, run_id: str, path: str) -> tuple[Path, Path]:
    """The directory of run ``run_id`` (its newest attempt; or the run directory of that name) and the file ``path``
    names in it; 404 when it is missing or resolves outside it."""
    if "\0" in dag_id + run_id + path:
        raise HTTPException(404, "not a file of a soak run")
    root = rundir.runs_root()
    named = root / dag_id / run_id  # a run directory's own name (the history's links: one per attempt)
    run_dir = (named if named.is_dir() and not named.is_symlink() else rundir.run_dir(dag_id, run_id)).resolve()
    target = (run_dir / (path or rundir.REPORT)).resolve()
    # the DAG the user was allowed to read: a symlink in its folder to another DAG's run serves nothing
    if run_dir.parent != root / dag_id or not target.is_relative_to(run_dir):
        raise HTTPException(404, "not a file of a soak run")
    if rundir.STATE in target.relative_to(run_dir).parts[:-1]:  # an instance's state: the app's data (RocksDB, ...)
        raise HTTPException(404, "an instance's state directory is the app's data and is not served")
    if not run_dir.is_dir():
        raise HTTPException(404, f"no soak run {run_id!r} of {dag_id!r}")
    if not target.is_file():
        what = "no report yet (it is written when the run ends)" if not path else f"no file {path!r}"
        raise HTTPException(404, f"soak run {run_id!r} of {dag_id!r}: {what}")
    return run_dir, target


def connection_secrets(run_dir: Path) -> list[str]:
    """The secret values of the Kafka connection a run on the ``external`` backend used (``cluster.json`` names
    it), and those written into its app's command or environment (``params.json``'s plan). The harness writes the
    connection's nowhere, but the app under test writes its own logs and may print the settings it was given, and a
    run not yet released still holds the app's in its params: what is served is masked with them."""
    from kafka_soak.infra.connection import KafkaConnectionError, app_secrets, connection_config, secret_values

    plan = (rundir.read_json(run_dir / rundir.PARAMS) or {}).get("plan") or {}
    secrets = app_secrets(plan)
    cluster = run_dir / rundir.CLUSTER
    conn_id = json.loads(cluster.read_text()).get("conn_id") if cluster.is_file() else None
    if not conn_id:
        return secrets
    try:
        config = connection_config(conn_id)
    except KafkaConnectionError:  # the connection is gone since the run: nothing left to mask with
        return secrets
    return secrets + secret_values(config)


@app.get("/", response_class=HTMLResponse)
def listing(user: Annotated[Any, Depends(may_read_runs)]) -> HTMLResponse:
    from kafka_soak.evidence.history import render_history

    root = rundir.runs_root()
    dags = {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()
    return HTMLResponse(render_history(root, link_prefix="runs/", only=readable_dags(user, dags)), headers=NO_SNIFF)


@app.get("/runs/{dag_id}/{run_id}/{path:path}",
         dependencies=[Depends(may_read_runs)])
def run_evidence(dag_id: str, run_id: str, path: str) -> Response:
    run_dir, target = run_file(dag_id, run_id, path)
    # Logs (.log) and alert/step records (.jsonl) have no registered type: show them as text, not a download.
    media_type = mimetypes.guess_type(target.name)[0] or "text/plain; charset=utf-8"
    # Every file gets the run pages' policy: an SVG or XHTML file runs scripts as a page does.
    secrets = connection_secrets(run_dir)
    from kafka_soak.infra.connection import masked

    def stream() -> Iterator[bytes]:
        with target.open("rb") as fh:
            yield from masked(fh, secrets)

    if media_type == "text/html":  # read whole (a report is a few MB): its policy names the scripts it holds as served
        page = b"".join(stream())
        return Response(page, media_type=media_type, headers=run_page(page))
    if not secrets:
        return FileResponse(target, media_type=media_type, headers=run_page())
    return StreamingResponse(stream(), media_type=media_type, headers=run_page())
