"""Which anomalies a run can vouch for, given what its backend does not guarantee and what its program does.

A fault (kill -9, pause past the session timeout, broker outage) leaves a transaction open or aborted and
makes the new owner reprocess from the last committed offsets. On real Kafka the open/aborted records are
invisible to read_committed readers, so any duplicate or stale read the checker finds is the app's. On a
backend that shows them (or does not store transactional offsets), the same fault produces duplicates,
stale-state assertions and reordering by itself: those counts cannot be blamed on the app, and a run that
finds only them is ``inconclusive``, never ``failed`` (and never ``passed`` on their account either).
"""

from __future__ import annotations

# limitation of the backend -> anomalies it can fake under faults
FAKED_UNDER_FAULTS = {
    "read_committed": ("duplicated", "stale_state", "reordered"),
    "txn_offsets": ("duplicated", "stale_state", "reordered"),
}


def unreliable_anomalies(limitations: dict[str, str], faults: list[str]) -> dict[str, str]:
    """``{anomaly: reason}`` for the anomalies this run's evidence cannot pin on the app."""
    if not faults:
        return {}
    result: dict[str, str] = {}
    for limitation, anomalies in FAKED_UNDER_FAULTS.items():
        if limitation not in limitations:
            continue
        for anomaly in anomalies:
            result.setdefault(anomaly, f"the program injects faults ({', '.join(sorted(set(faults)))}) and the "
                                       f"backend does not guarantee {limitation}: {limitations[limitation]}")
    return result
