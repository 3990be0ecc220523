"""The soak reports served by the UI plugin's app (as in unit/evidence/test_ui_plugin.py) for runs whose app was given a
real broker's connection: no page holds the connection's password, in any form it was printed in."""

from __future__ import annotations

import json
from urllib.parse import quote

from support.checks import SECRET
from support.served_reports import get

from kafka_soak import run_plan
from kafka_soak.clients.instances import Instances
from kafka_soak.evidence import ui
from kafka_soak.shared import rundir


def test_no_connection_secret_reaches_a_served_page(served, evidence, kafka_connection, broker):
    """A run on a secured external cluster (test_backends' connection, with a known SASL password) whose app prints
    the settings it was given into its log: no page the app serves (the listing, any file of the run) holds the
    password, though the log on disk does (the harness does not write the app's logs)."""
    run_id = "manual__2026-11-22T12:00:00+00:00"
    run_dir = evidence / "soak_secured" / rundir.safe_name(run_id)
    (run_dir / "logs").mkdir(parents=True)
    cluster = {**broker.as_dict(), "backend": "external", "conn_id": kafka_connection}
    plan = run_plan.check({"app_command": ["python", "-c", "import os; print('given:', os.environ['SOAK_KAFKA_CONFIG'])"]})
    rundir.write_json(run_dir / "params.json", {"dag_id": "soak_secured", "run_id": run_id, "plan": plan})
    rundir.write_json(run_dir / "cluster.json", cluster)
    instances = Instances.for_run(run_dir, cluster, plan)
    assert instances.runtime.exit_code(instances.start(1, 0).pid, wait_s=30) == 0
    instances.stop_all(timeout=5)
    port, token = served
    files = [p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file()]
    pages = [get(port, f"{ui.URL_PREFIX}/", token)[2],
             *[get(port, f"{ui.URL_PREFIX}/runs/soak_secured/{quote(run_id, safe='')}/{f}", token)[2] for f in files]]
    assert SECRET in (run_dir / "logs" / "app-1.0.log").read_text()
    assert '"sasl.password": "***"' in "".join(pages) and "soak_secured" in pages[0]
    assert not [page for page in pages if SECRET in page]


NASTY = 'pa"ss\\wörd\'-€-\u00e9'  # a quote, a backslash, non-ASCII: JSON escapes each


def test_a_password_json_escapes_is_masked_everywhere_and_stays_masked_after_the_connection_is_gone(
        served, evidence, broker, monkeypatch):
    """The app prints its settings as JSON (quotes, backslashes and non-ASCII escaped): no served page holds the
    password in any form; the run's release masks them at rest, so they stay masked once the connection is rotated
    or deleted (the UI then has nothing to mask with)."""
    from kafka_soak.infra import connection

    extra = {"bootstrap.servers": broker.bootstrap_servers, "sasl.username": "soak", "sasl.password": NASTY}
    monkeypatch.setenv("AIRFLOW_CONN_SOAK_NASTY", json.dumps({"conn_type": "kafka", "extra": extra}))
    run_id = "manual__2026-11-22T14:00:00+00:00"
    run_dir = evidence / "soak_nasty" / rundir.safe_name(run_id)
    (run_dir / "logs").mkdir(parents=True)
    cluster = {**broker.as_dict(), "backend": "external", "conn_id": "soak_nasty"}
    plan = run_plan.check({"app_command": ["python", "-c", "import os; print('given:', os.environ['SOAK_KAFKA_CONFIG'])"]})
    rundir.write_json(run_dir / "cluster.json", cluster)
    instances = Instances.for_run(run_dir, cluster, plan)
    assert instances.runtime.exit_code(instances.start(1, 0).pid, wait_s=30) == 0
    instances.stop_all(timeout=5)
    log_file = run_dir / "logs" / "app-1.0.log"
    forms = [NASTY, json.dumps(NASTY)[1:-1], json.dumps(NASTY, ensure_ascii=False)[1:-1]]
    assert json.dumps(NASTY)[1:-1] in log_file.read_text(), "the app wrote the escaped form"
    port, token = served
    url = f"{ui.URL_PREFIX}/runs/soak_nasty/{quote(run_id, safe='')}/logs/app-1.0.log"
    page = get(port, url, token)[2]
    assert '"sasl.password": "***"' in page and not [f for f in forms if f in page]
    secrets = connection.secret_values(connection.connection_config("soak_nasty"))
    assert connection.scrub(run_dir, secrets) == [log_file]
    monkeypatch.delenv("AIRFLOW_CONN_SOAK_NASTY")  # rotated or deleted after the run
    on_disk, page = log_file.read_text(), get(port, url, token)[2]
    assert '"sasl.password": "***"' in page and not [f for f in forms if f in page + on_disk]
