"""The suite's Airflow plugin: the soak reports in the UI — a "Soak reports" entry in the Browse menu and a "Soak report"
tab on every DAG run, both served by the FastAPI app in ``kafka_soak.evidence.ui`` — and the reference the soak DAGs' deadlines
count from (``kafka_soak.deadline.SoakRunQueuedAt``), which the scheduler finds here. Registered by the installed
package's entry point ``airflow.plugins``, or from a checkout's plugins folder (``plugins/soak_reports.py``)."""

from airflow.plugins_manager import AirflowPlugin

from kafka_soak import deadline
from kafka_soak.evidence import ui


class SoakReportsPlugin(AirflowPlugin):
    name = "soak_reports"
    fastapi_apps = [{"app": ui.app, "url_prefix": ui.URL_PREFIX, "name": "Soak reports"}]
    external_views = ui.EXTERNAL_VIEWS
    deadline_references = [deadline.SoakRunQueuedAt]
