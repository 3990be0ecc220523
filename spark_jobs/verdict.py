"""From Great Expectations results to the run's verdict: named anomalies, counts, samples, status."""

from __future__ import annotations

from typing import Any

from kafka_soak.shared.contracts import ANOMALIES
from kafka_soak.shared.verdicts import SAMPLES


def expectation_count(result: dict[str, Any]) -> int:
    """How many records break an expectation: unexpected rows, the observed row count for table checks, or the observed
    value of an aggregate that counts records (``meta.count``: a sum of records per partition)."""
    outcome = result.get("result") or {}
    if (result.get("meta") or {}).get("count") == "observed_value":
        return int(outcome.get("observed_value") or 0)
    if outcome.get("unexpected_count") is not None:
        return int(outcome["unexpected_count"])
    if result["type"] == "expect_table_row_count_to_equal":
        return abs(int(outcome.get("observed_value") or 0) - int(result["kwargs"]["value"]))
    if result["type"] == "expect_table_row_count_to_be_between":  # every row counts once the allowance is exceeded
        return int(outcome.get("observed_value") or 0)
    return 0 if result["success"] else 1


def decide(results: list[dict[str, Any]], truncated: dict[str, dict[int, int]],
           judged: tuple[str, ...] = ANOMALIES, tolerated: tuple[str, ...] = ()) -> dict[str, Any]:
    """``results``: one dict per expectation (type, kwargs, meta, success, result). ``truncated``: topics whose
    low watermark is above 0 (``{topic: {partition: low}}``), i.e. evidence the cluster no longer holds. ``judged``:
    the anomalies the app's data contract can show, the only ones the verdict counts; of them, ``tolerated`` ones are
    counted and shown without failing the run (``unprocessed`` where the scenario allows a backlog)."""
    anomalies = {name: 0 for name in judged}
    samples: dict[str, list[Any]] = {}
    reasons = []
    expectations = []
    for r in results:
        meta = r.get("meta") or {}
        count = 0 if r["success"] else expectation_count(r)
        expectations.append({"suite": r["suite"], "expectation": r["type"], "kwargs": r["kwargs"],
                             "success": r["success"], "count": count, "anomaly": meta.get("anomaly"),
                             "description": meta.get("description")})
        if r["success"]:
            continue
        if meta.get("effect") == "inconclusive":
            reasons.append(f"{meta.get('reason')}: {meta.get('description')} (observed: "
                           f"{(r.get('result') or {}).get('observed_value', count)})")
        elif meta.get("anomaly"):
            anomalies[meta["anomaly"]] += count
            samples.setdefault(meta["anomaly"], []).extend(r.get("samples") or [])
    for topic, parts in truncated.items():
        reasons.append(f"evidence truncated: topic {topic} no longer holds its first records "
                       f"(low watermarks {parts}); records cannot be called lost")
    if reasons:  # gaps in the evidence: nothing can be concluded
        status = "inconclusive"
    elif any(n for name, n in anomalies.items() if name not in tolerated):
        status = "failed"
    else:
        status = "passed"
    return {"status": status, "anomalies": anomalies, "samples": {k: v[:SAMPLES] for k, v in samples.items()},
            "expectations": expectations, "inconclusive_reasons": reasons}
