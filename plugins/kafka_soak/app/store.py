"""The reference app's per-partition state store: key -> (assigned id, last seq), backed by a changelog."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class PartitionStore:
    """State of one input partition; ids are ``counter * partition_count + partition``, as in the original."""

    partition: int
    partition_count: int
    entries: dict[str, tuple[int, int]] = field(default_factory=dict)
    counter: int = 0

    def assign(self, key: str) -> tuple[int, int]:
        """The key's (assigned id, stored seq); a new key gets the next id and seq 0."""
        entry = self.entries.get(key)
        if entry is not None:
            return entry
        assigned = self.counter * self.partition_count + self.partition
        self.counter += 1
        return assigned, 0

    def put(self, key: str, assigned_id: int, seq: int) -> bytes:
        """Store the key's state and return the changelog value that makes it durable."""
        self.entries[key] = (assigned_id, seq)
        return json.dumps({"assigned_id": assigned_id, "seq": seq}).encode()

    def restore(self, key: str, changelog_value: bytes) -> None:
        """Replay one changelog record; the counter follows the largest id seen."""
        state = json.loads(changelog_value)
        assigned = state["assigned_id"]
        self.entries[key] = (assigned, state["seq"])
        self.counter = max(self.counter, (assigned - self.partition) // self.partition_count + 1)
