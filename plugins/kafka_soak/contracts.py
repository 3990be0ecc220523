"""The data contracts an app under test keeps (docs/architecture.md, "The data contract") and the anomalies each
can show: one list for the Airflow side (subjects, report, history) and the Spark job, which gets this module
with ``--py-files``. It imports nothing of the project's and nothing outside the standard library."""

from __future__ import annotations

# Every anomaly a verdict can name, in the order verdicts, reports and alerts list them.
ANOMALIES = ("lost", "duplicated", "unexpected", "id_reuse", "stale_state", "reordered", "rolled_back", "app_health")
ID_ASSIGNMENT, WORKFLOW = "id-assignment", "workflow"
# The anomalies each contract can show: a suite's expectation that decides another one does not apply to the app,
# and a suite left without expectations is not run.
JUDGED = {
    ID_ASSIGNMENT: ("lost", "duplicated", "unexpected", "id_reuse", "stale_state", "reordered", "app_health"),
    # Executions end in any order and assign no ids; the app has no self-check.
    WORKFLOW: ("lost", "duplicated", "unexpected", "rolled_back", "app_health"),
}


def of(design: str) -> str:
    """The contract of an app: the workflow engine's (run in a ``design``) or the id-assignment one's."""
    return WORKFLOW if design else ID_ASSIGNMENT
