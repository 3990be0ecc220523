"""What the installed package tells Airflow, as a provider does (entry point ``apache_airflow_provider``): its name,
version and notifier. Its UI plugin is the entry point ``airflow.plugins`` (Airflow loads a provider's own plugins only
with ``lazy_load_providers`` off); the operators and the DAG factory are imported by the DAG files that use them."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

PACKAGE = "kafka-soak"


def get_provider_info() -> dict[str, Any]:
    try:
        versions = [version(PACKAGE)]
    except PackageNotFoundError:  # a checkout on PYTHONPATH, not installed
        versions = []
    return {
        "package-name": PACKAGE,
        "name": "kafka-soak",
        "description": "Scheduled soak tests of Kafka exactly-once apps: a DAG per scenario file, judged by Spark and "
                       "Great Expectations.",
        "versions": versions,
        "notifications": ["kafka_soak.alerting.SoakAlertNotifier"],
    }
