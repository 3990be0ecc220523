"""A broker version matrix's verdict: each member's (a cluster of one release) read back from its directory, or
inconclusive where its checker reached none, combined into the run's, with their app health merged."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kafka_soak.backends.broker_matrix import MEMBER_FAILED, ClusterMember
from kafka_soak.clients import health
from kafka_soak.shared import rundir, verdicts


def failed_alone(member: ClusterMember) -> list[str]:
    """What failed on a member's cluster alone during the run (``each``'s ``alone``), in words."""
    return [f"{e['what']} failed on this cluster: {e['error']}" for e in rundir.read_jsonl(member.dir / rundir.EVENTS)
            if e.get("event") == MEMBER_FAILED]


def submit_failure(error: str) -> str:
    """Why a member's checker reached no verdict, in a few words (spark-submit's error repeats its whole command)."""
    code = re.search(r"Error code is: (-?\d+)", error)
    return f"the checker's spark-submit exited with code {code.group(1)}" if code else error.splitlines()[0][:300]


def no_verdict(member: ClusterMember, why: str) -> dict[str, Any]:
    """An inconclusive verdict for a member whose checker did not reach one."""
    return {"status": "inconclusive", "anomalies": {}, "samples": {}, "expectations": [], "label": "the app",
            "inconclusive_reasons": [f"no verdict: {why} (see the validate task's log)"],
            "records": {"input": 0, "output": 0, "expected_input": member.plan["records"]}, "topics": {},
            "data_docs": ""}


def combine(run_dir: Path, all_members: list[ClusterMember], failures: dict[str, str]) -> dict[str, Any]:
    """The matrix's verdict from its members' (``verdict.json`` of each, or ``no_verdict`` where ``failures`` says why
    there is none): one row per pair of broker and app (a member judged several apps: one row each, from its
    ``subjects/<name>/``), its counts and status, the combined app health, and each member's report."""
    flat: dict[str, dict[str, Any]] = {}
    for m in all_members:
        relative = f"{rundir.BROKERS}/{m.name}"
        own = rundir.read_json(m.dir / rundir.VERDICT) or no_verdict(m, failures.get(m.name, "none was written"))
        parts = {f"{m.name}/{row['version']}": (rundir.read_json(m.dir / row["dir"] / rundir.VERDICT),
                                                 f"{relative}/{row['dir']}") for row in own.get("matrix", [])}
        alone = failed_alone(m)  # its verdict judges a run the program or the load did not fully reach
        for key, (verdict, where) in (parts or {m.name: (own, relative)}).items():
            flat[key] = {**verdict, "label": f"{m.label} · {verdict['label']}", "dir": where,
                         "report": f"{relative}/{rundir.REPORT}",
                         **({"status": min(verdict["status"], "inconclusive", key=verdicts.STATUS_ORDER.index),
                             "inconclusive_reasons": [*verdict["inconclusive_reasons"], *alone]} if alone else {})}
    healths = {m.name: rundir.read_json(m.dir / rundir.HEALTH) for m in all_members}
    return {**verdicts.combine(flat), "backend": {"name": "local", "kafka_versions": [m.name for m in all_members]},
            "quotas": [{**u, "cluster": m.label} for m in all_members for u in rundir.read_json(m.dir / rundir.QUOTAS) or []],
            "health": health.merge({k: v for k, v in healths.items() if v})}
