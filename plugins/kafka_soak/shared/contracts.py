"""The data contracts an app under test keeps (docs/architecture.md, "The data contract"), one record each
(``Contract``, in ``CONTRACTS``), and the anomalies they can show: one registry for the Airflow side (a profile's
check, subjects, report, history) and the Spark job, which gets this module with ``--py-files`` and judges an output
with the module its contract names (``Contract.module``). It imports nothing of the project's and nothing outside the
standard library."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Every anomaly a verdict can name, in the order verdicts, reports and alerts list them.
ANOMALIES = ("lost", "duplicated", "unexpected", "id_reuse", "stale_state", "reordered", "rolled_back",
             "wrong_aggregate", "app_health", "resource_growth", "stalled", "unprocessed")
# The anomalies of the app rather than of one output: its instances' health and what they kept using more of, and its
# group's progress on the input (a partition that stalled, input it never committed). Counted once per app: with the
# first output of a team's app.
PER_APP = ("app_health", "resource_growth", "stalled", "unprocessed")
# The headers the generator gives every input record of a team's app (ASCII decimal): its id and its place in its key's
# sequence; and where a one-to-one output's id is: that header (Kafka Streams forwards it) or ``json:<path>`` in its value.
ID_HEADER, SEQ_HEADER = "soak.id", "soak.seq"
ID_FROM_HEADER, ID_FROM_JSON = "header", "json:"
# The data contract's environment tells an instance how often the restart policy restarted it (0 for a step's start), as
# Kubernetes' restartCount: set by the local runtime's supervisor (runtime.spawn), read by the reference worker.
RESTART_ENV = "SOAK_RESTART"
# What a contract reads of the run's input: the suite's own records (encoding ``soak``, read from their JSON), or a
# team's app's own format, known by the headers above (its topics read as bytes with their headers).
SUITE_RECORDS, APP_FORMAT = "suite records", "app format"


@dataclass(frozen=True)
class Contract:
    """Everything the suite knows of one output contract, so that a contract is one record here, one Spark module
    (``spark_jobs/<module>.py``: ``read`` and ``subject_frames``) and its suites' JSON in ``expectations/``."""

    name: str
    judged: tuple[str, ...]  # the anomalies it can show: an expectation that decides another one is dropped
    suites: tuple[str, ...]  # the GX suites (``expectations/<suite>.json``) of its Spark module's frames
    reads: str = APP_FORMAT  # the input's records: SUITE_RECORDS or APP_FORMAT
    input_values: bool = False  # whether it reads the input's values too (what an aggregate is of)
    topics: tuple[str, ...] = ("output",)  # an output's topics it reads, by role (``--subjects`` keys)
    fields: tuple[str, ...] = ()  # a profile output's fields it takes besides topic, partitions, contract and of
    declared: bool = True  # whether a profile's YAML may declare it (else the suite's own app's alone, set in code)
    named_by: tuple[str, ...] = ()  # the fields that tell its outputs apart in a verdict's label ("aggregate count")
    topic_counts: dict[str, str] = field(default_factory=dict)  # verdict records: name -> a topic's records by role
    frame_counts: dict[str, str] = field(default_factory=dict)  # verdict records: name -> a frame's rows

    @property
    def module(self) -> str:
        """Its Spark module, ``spark_jobs/contract_<name>.py``."""
        return "contract_" + self.name.replace("-", "_")

    def title(self, output: Mapping[str, Any]) -> str:
        """How a verdict or a log names an output judged by it: the contract, with what tells such outputs apart."""
        return " ".join([self.name, *(str(output[name]) for name in self.named_by)])


# The suite's own apps' contracts (their profiles declare them, clients/reference/profiles.py); a team's app written
# for the suite's own records may declare id-assignment for its output too. The contracts a team's own app declares
# for each of its outputs (its profile): the soak's record headers carry what the checker needs (soak.id, soak.seq),
# the values are the app's own format. In the order a profile's error lists them.
ONE_TO_ONE, AGGREGATE, ID_ASSIGNMENT, WORKFLOW = "one-to-one", "aggregate", "id-assignment", "workflow"
CONTRACTS = {c.name: c for c in (
    # Each input once in the output, in seq order within its key; no ids assigned, no self-check.
    Contract(ONE_TO_ONE, ("lost", "duplicated", "unexpected", "reordered", *PER_APP), ("input_ids", "outputs"),
             fields=("id_from",)),
    # A table keyed like the input: each key's last value is a function of the key's inputs.
    Contract(AGGREGATE, ("wrong_aggregate", *PER_APP), ("input_ids", "aggregates"), input_values=True,
             fields=("function", "field", "value"), named_by=("function",), frame_counts={"keys": "aggregates"}),
    # The suite's own: one output record per input with the id the app assigned its key, and its self-check.
    Contract(ID_ASSIGNMENT, ("lost", "duplicated", "unexpected", "id_reuse", "stale_state", "reordered", *PER_APP),
             ("input_ids", "outputs", "key_ids", "assigned_ids", "assertions"), SUITE_RECORDS,
             topics=("output", "assertions"), fields=("assertions",),
             frame_counts={"distinct_keys": "key_ids", "distinct_assigned_ids": "assigned_ids"}),
    # The workflow engine's: executions end in any order and assign no ids; the app has no self-check.
    Contract(WORKFLOW, ("lost", "duplicated", "unexpected", "rolled_back", *PER_APP),
             ("input_ids", "outputs", "executions"), SUITE_RECORDS, topics=("output", "assertions", "executions"),
             declared=False, topic_counts={"execution_versions": "executions"}, frame_counts={"executions": "executions"}),
)}


def declarable() -> list[Contract]:
    """The contracts a profile may declare for an output it wants judged."""
    return [c for c in CONTRACTS.values() if c.declared]


def for_output(design: str, declared: str = "") -> str:
    """The contract of an app's output: the one declared for it (by a team's profile, or the suite's for its own
    apps), else the workflow engine's for an output given by hand with its ``design``, else the id-assignment one's. A
    declared contract the checker does not know is an error, not another contract judged by mistake."""
    if declared and declared not in CONTRACTS:
        raise ValueError(f"contract {declared!r} is not judged; judged contracts: {', '.join(CONTRACTS)}")
    return declared or (WORKFLOW if design else ID_ASSIGNMENT)
