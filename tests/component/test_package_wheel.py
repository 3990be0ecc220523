"""The package a team installs into its own Airflow: a wheel built from the checkout, installed into a fresh virtualenv
(its dependencies are this environment's, linked in: the test builds and installs offline), registers as an Airflow
provider with its notifier and UI plugin, and builds the soak DAGs of a scenario folder outside the repository from a
one-line DAG file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import yaml
from support import ROOT

# What the wheel is built from (pyproject.toml's package-dir), copied so the build leaves nothing in the checkout.
SOURCES = ("pyproject.toml", "README.md", "plugins/kafka_soak", "spark_jobs", "expectations", "apps/streams")
# The team's soak: their own app's profile in a scenario file of their own folder.
SCENARIO = {"dag_id": "soak_orders", "schedule": "0 3 * * *", "params": {"program": "1 2 1", "app_profile": {
    "name": "orders", "group_id": "orders", "command": ["orders-app", "--config", "{properties_file}"],
    "inputs": [{"topic": "orders", "value": {"encoding": "json", "template": {"orderId": "{id}"}}}],
    "outputs": [{"topic": "orders-enriched", "contract": "one-to-one", "of": "orders", "id_from": "json:$.orderId"}]}}}
DAG_FILE = 'from kafka_soak.factory import build_all; globals().update(build_all("{folder}"))  # Airflow DAGs\n'
PROBE = """
import json
from airflow.dag_processing.dagbag import DagBag
from airflow.providers_manager import ProvidersManager
import kafka_soak, kafka_soak.shared.rundir as rundir
from kafka_soak.checker import validate

bag = DagBag(dag_folder="{dags}", safe_mode=True)
info = ProvidersManager().providers["kafka-soak"]
print(json.dumps({{"dags": sorted(bag.dag_ids), "errors": {{k: v[-300:] for k, v in bag.import_errors.items()}},
                  "package": kafka_soak.__file__, "checkout": rundir.IS_CHECKOUT, "job": validate.JOB.is_file(),
                  "suites": sorted(p.name for p in rundir.resource("expectations").glob("*.json")),
                  "streams_app": (rundir.resource("streams_app") / "pom.xml").is_file(),
                  "version": info.version, "notifications": info.data["notifications"],
                  "tags": sorted(bag.dags["soak_orders"].tags) if bag.dags else []}}))
"""


def test_a_wheel_installed_into_a_fresh_virtualenv_registers_and_builds_a_team_folder_s_soaks(tmp_path):
    source = tmp_path / "source"
    for part in SOURCES:
        copy = shutil.copytree if (ROOT / part).is_dir() else shutil.copy
        (source / part).parent.mkdir(parents=True, exist_ok=True)
        copy(ROOT / part, source / part, **({"ignore": shutil.ignore_patterns("__pycache__", "target")}
                                            if copy is shutil.copytree else {}))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, timeout=300)
    [wheel] = (tmp_path / "dist").glob("kafka_soak-*.whl")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "kafka-soak-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # this env's dependencies
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], check=True,
                   timeout=300)

    team = tmp_path / "team"  # outside the repository: the team's own folder
    (team / "soaks").mkdir(parents=True)
    (team / "soaks" / "soak_orders.yaml").write_text(yaml.safe_dump(SCENARIO))
    (team / "dags").mkdir()
    (team / "dags" / "soaks.py").write_text(DAG_FILE.format(folder=team / "soaks"))
    (team / "plugins").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SOAK_PARAM_DEFAULTS", "SOAK_TRIGGER_ALLOW")}
    env.update(AIRFLOW_HOME=str(team / "airflow"), AIRFLOW__CORE__DAGS_FOLDER=str(team / "dags"),
               AIRFLOW__CORE__PLUGINS_FOLDER=str(team / "plugins"), SOAK_HOME=str(team / "kafka-soak"))
    probe = subprocess.run([str(python), "-c", PROBE.format(dags=team / "dags")], capture_output=True, text=True,
                           env=env, cwd=team, timeout=300)
    assert probe.returncode == 0, probe.stderr[-3000:]
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    assert found["errors"] == {} and found["dags"] == ["soak_orders"], found
    assert found["tags"] == ["kafka-soak"]
    assert found["package"].startswith(str(site)) and not found["checkout"], "the installed package, not the checkout"
    assert found["job"] and found["streams_app"] and "aggregates.json" in found["suites"], found
    assert found["version"] == "0.1.0" and found["notifications"] == ["kafka_soak.alerting.SoakAlertNotifier"]
    listing = subprocess.run([str(python), "-m", "airflow", "plugins", "-o", "json"], capture_output=True, text=True,
                             env={**env, "AIRFLOW__CORE__LAZY_LOAD_PLUGINS": "False"}, cwd=team, timeout=300)
    assert listing.returncode == 0, listing.stderr[-3000:]
    plugins = json.loads(next(line for line in listing.stdout.splitlines() if line.startswith("[{")))
    [plugin] = [p for p in plugins if p["name"] == "soak_reports"]
    assert plugin["source"] == ("kafka-soak==0.1.0: EntryPoint(name='soak_reports', "
                                "value='kafka_soak.plugin:SoakReportsPlugin', group='airflow.plugins')")
    assert [v["name"] for v in plugin["external_views"]] == ["Soak reports", "Soak report"]
