"""The data contracts an app under test keeps (docs/architecture.md, "The data contract") and the anomalies each
can show: one list for the Airflow side (subjects, report, history) and the Spark job, which gets this module
with ``--py-files``. It imports nothing of the project's and nothing outside the standard library."""

from __future__ import annotations

# Every anomaly a verdict can name, in the order verdicts, reports and alerts list them.
ANOMALIES = ("lost", "duplicated", "unexpected", "id_reuse", "stale_state", "reordered", "rolled_back",
             "wrong_aggregate", "app_health", "stalled", "unprocessed")
# The anomalies of the app rather than of one output: its instances' health, and its group's progress on the input
# (a partition that stalled, input it never committed). Counted once per app: with the first output of a team's app.
PER_APP = ("app_health", "stalled", "unprocessed")
# The suite's own apps' contracts (their profiles declare them, clients/reference/profiles.py); a team's app written
# for the suite's own records may declare id-assignment for its output too.
ID_ASSIGNMENT, WORKFLOW = "id-assignment", "workflow"
# The contracts a team's own app declares for each of its outputs (its profile); the soak's record headers carry what
# the checker needs (soak.id, soak.seq), the values are the app's own format.
ONE_TO_ONE, AGGREGATE = "one-to-one", "aggregate"
DECLARED = (ONE_TO_ONE, AGGREGATE)
# What a profile may declare for an output it wants judged: those, or the suite's own contract (an app written for it).
PROFILE_CONTRACTS = (*DECLARED, ID_ASSIGNMENT)
# The headers the generator gives every input record of a team's app (ASCII decimal): its id and its place in its key's
# sequence; and where a one-to-one output's id is: that header (Kafka Streams forwards it) or ``json:<path>`` in its value.
ID_HEADER, SEQ_HEADER = "soak.id", "soak.seq"
ID_FROM_HEADER, ID_FROM_JSON = "header", "json:"
# The data contract's environment tells an instance how often the restart policy restarted it (0 for a step's start), as
# Kubernetes' restartCount: set by the local runtime's supervisor (runtime.spawn), read by the reference worker.
RESTART_ENV = "SOAK_RESTART"
# The anomalies each contract can show: a suite's expectation that decides another one does not apply to the app,
# and a suite left without expectations is not run.
JUDGED = {
    ID_ASSIGNMENT: ("lost", "duplicated", "unexpected", "id_reuse", "stale_state", "reordered", *PER_APP),
    # Executions end in any order and assign no ids; the app has no self-check.
    WORKFLOW: ("lost", "duplicated", "unexpected", "rolled_back", *PER_APP),
    # Each input once in the output, in seq order within its key; no ids assigned, no self-check.
    ONE_TO_ONE: ("lost", "duplicated", "unexpected", "reordered", *PER_APP),
    # A table keyed like the input: each key's last value is a function of the key's inputs.
    AGGREGATE: ("wrong_aggregate", *PER_APP),
}


def for_output(design: str, declared: str = "") -> str:
    """The contract of an app's output: the one declared for it (by a team's profile, or the suite's for its own
    apps), else the workflow engine's for an output given by hand with its ``design``, else the id-assignment one's. A
    declared contract the checker does not know is an error, not another contract judged by mistake."""
    if declared and declared not in (*PROFILE_CONTRACTS, WORKFLOW):
        raise ValueError(f"contract {declared!r} is not judged; judged contracts: "
                         f"{', '.join((*PROFILE_CONTRACTS, WORKFLOW))}")
    return declared or (WORKFLOW if design else ID_ASSIGNMENT)
