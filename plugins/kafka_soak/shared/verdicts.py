"""Verdicts as both sides read them: the checker writes one per subject, and a matrix's (of the apps one Spark job
judges, or of the clusters of a broker version matrix, one job each) is their combination."""

from __future__ import annotations

from typing import Any

from kafka_soak.shared.contracts import ANOMALIES
from kafka_soak.shared.rundir import SUBJECTS

EXIT_CODES = {"passed": 0, "failed": 2, "inconclusive": 3}  # the checker's exit code by status
SAMPLES = 10  # rows kept per anomaly to show what it looks like
STATUS_ORDER = ("failed", "inconclusive", "passed")  # a matrix is as bad as its worst version


def combine(verdicts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One verdict for a matrix (Kafka Streams versions, designs of the workflow engine, the judged outputs of a
    team's app, or the clusters of a broker version matrix): the worst status, anomaly counts summed (per subject in
    ``matrix``, each with its ``label`` and the directory of its evidence relative to the run's, ``dir``; a count a
    subject does not judge is none of its), samples and reasons labelled with their subject."""
    status = min((v["status"] for v in verdicts.values()), key=STATUS_ORDER.index)
    first = next(iter(verdicts.values()))
    judged = [name for name in ANOMALIES if any(name in v["anomalies"] for v in verdicts.values())]
    return {
        "status": status,
        "anomalies": {name: sum(v["anomalies"].get(name, 0) for v in verdicts.values()) for name in judged},
        "samples": {name: [{"version": version, **row} for version, v in verdicts.items()
                           for row in v["samples"].get(name, [])][:SAMPLES]
                    for name in judged if any(v["samples"].get(name) for v in verdicts.values())},
        "inconclusive_reasons": [f"{version}: {r}" for version, v in verdicts.items()
                                 for r in v["inconclusive_reasons"]],
        "expectations": [{**e, "version": version} for version, v in verdicts.items() for e in v["expectations"]],
        "records": {**first["records"], "output": sum(v["records"]["output"] for v in verdicts.values()),
                    "assertions": sum(v["records"].get("assertions", 0) for v in verdicts.values())},
        "topics": {version: v["topics"] for version, v in verdicts.items()},
        "data_docs": first["data_docs"],
        "matrix": [{"version": version, "label": v["label"], "contract": v.get("contract"), "status": v["status"],
                    "anomalies": v["anomalies"], "records": v["records"], "data_docs": v["data_docs"],
                    "dir": v.get("dir", f"{SUBJECTS}/{version}"), **({"report": v["report"]} if "report" in v else {})}
                   for version, v in verdicts.items()],
    }
