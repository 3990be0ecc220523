"""What the tests (and the benchmarks) share beside their fixtures: real components started for a test (an Airflow
stack, a Docker engine, a Spark cluster, a secured Kafka, alert channels), the apps from outside the suite, scenario
runs and the checks every run must pass, a task's context and the reports as the UI serves them. Fixtures live in
``conftest.py``; no test module imports another, so what two layers' modules share is here."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout
