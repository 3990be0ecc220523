"""The checker's decisions without Spark: a verdict from the suites' results, and the label and contract of each subject
it judges (on frames in real Spark: component/test_checker.py)."""

import argparse
import json

import pytest
import validate_soak
import verdict
from support import ROOT
from support.outside_apps import output_subject

from kafka_soak.shared import contracts

SUITES = ROOT / "expectations"


def test_truncated_evidence_is_inconclusive_never_passed():
    results = [{"suite": "input_ids", "type": "expect_column_values_to_be_between", "kwargs": {}, "success": True,
                "meta": {"anomaly": "lost"}, "result": {}, "samples": []}]
    outcome = verdict.decide(results, truncated={"t.input": {0: 14850}})
    assert outcome["status"] == "inconclusive"
    assert "low watermarks {0: 14850}" in outcome["inconclusive_reasons"][0]


def failing(anomaly: str, count: int) -> dict:
    return {"suite": "s", "type": "expect_column_values_to_be_between", "kwargs": {}, "success": False,
            "meta": {"anomaly": anomaly}, "result": {"unexpected_count": count}, "samples": []}


def test_any_anomaly_fails_the_run_unless_the_evidence_has_gaps():
    assert verdict.decide([failing("duplicated", 5)], truncated={})["status"] == "failed"
    assert verdict.decide([], truncated={})["status"] == "passed"
    gap = verdict.decide([failing("lost", 3)], truncated={"t.input": {0: 10}})
    assert gap["status"] == "inconclusive" and "evidence truncated: topic t.input" in gap["inconclusive_reasons"][0]


def test_a_tolerated_anomaly_is_counted_without_failing_the_run():
    """A scenario that allows a backlog sees its unprocessed records counted; the run passes unless something else
    fails."""
    allowed = verdict.decide([failing("unprocessed", 5)], truncated={}, tolerated=("unprocessed",))
    assert (allowed["status"], allowed["anomalies"]["unprocessed"]) == ("passed", 5)
    stalled = verdict.decide([failing("unprocessed", 5), failing("stalled", 1)], {}, tolerated=("unprocessed",))
    assert stalled["status"] == "failed"


def test_a_subject_is_labelled_as_the_suite_names_it_and_a_bare_one_needs_no_label():
    """The job's --subjects as its docstring shows them (name, output, assertions) once failed with KeyError 'version'
    after judging (bench/validation.py submits such a subject)."""
    assert validate_soak.label({"name": "", "output": "o", "assertions": "a"}) == "the app"
    assert validate_soak.label({"name": "3.4.0", "label": "Kafka Streams 3.4.0", "design": ""}) == "Kafka Streams 3.4.0"
    assert validate_soak.label({"name": "orders@3.4.0", "output": "o", "contract": "one-to-one"}) == \
        "orders@3.4.0 (one-to-one)"


def test_a_subject_declares_its_contract_or_has_its_reference_apps():
    """A team's app's outputs declare theirs (and share its instances' health); a reference app's follows from it (a
    version of a matrix has instances of its own); a run judges one kind of app."""
    total = output_subject("t", contract="aggregate", function="sum")
    assert validate_soak.contract_of(total) == contracts.AGGREGATE
    assert validate_soak.contract_of({"name": "", "design": "single-writer"}) == contracts.WORKFLOW
    version = {"name": "3.4.0", "version": "3.4.0"}
    assert validate_soak.contract_of(version) == contracts.ID_ASSIGNMENT
    assert validate_soak.health_owner(version, [version]) == "3.4.0"
    with pytest.raises(ValueError, match="'none' is not judged"):
        validate_soak.contract_of(output_subject("t", contract="none"))
    with pytest.raises(ValueError, match="not both"):
        validate_soak.read_input(None, argparse.Namespace(subjects=[version, total]))


def test_each_contract_is_its_record_its_spark_module_and_its_suites():
    """What docs/architecture.md ("Adding an output contract") says a contract is: its record names a Spark module the
    job finds and the validate task ships, with a reader and frames; each of its suites is in expectations/, and they
    (with the app's own: app_health, resources, progress) decide every anomaly it judges."""
    from kafka_soak.checker.validate import JOB_MODULES

    shipped = {path.name for path in JOB_MODULES}
    for name, contract in contracts.CONTRACTS.items():
        module = validate_soak.MODULES[name]
        assert f"{contract.module}.py" in shipped and callable(module.read) and callable(module.subject_frames), name
        suites = [json.loads((SUITES / f"{suite}.json").read_text()) for suite in (*contract.suites, "app_health",
                                                                                    "resources", "progress")]
        decided = {(e.get("meta") or {}).get("anomaly") for suite in suites for e in suite["expectations"]}
        assert set(contract.judged) <= decided and set(contract.judged) <= set(contracts.ANOMALIES), name
