"""The reference app's per-partition state store, with a write-back cache in front, backed by a changelog.

Like a Kafka Streams cached key-value store: reads go through an LRU cache; writes land in the cache and
reach the store and the changelog when the cache is flushed (at every commit, or when a dirty entry is
evicted), so repeated updates of a key within a commit cost one changelog record. The per-partition id
counter is an entry of the same store (``COUNTER``), as in the original reproduction's counter store.

Restoration and standby replication apply changelog records to the store underneath the cache; they must
invalidate the cache entry of every key they change. ``invalidate_on_restore=False`` is the bug of
KAFKA-14624: a cache that survives a stint as standby serves stale values when the task is active again.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

COUNTER = "__counter__"  # generator keys are "key-NNNNNN": no clash


@dataclass
class PartitionStore:
    """State of one input partition; ids are ``counter * partition_count + partition``, as in the original."""

    partition: int
    partition_count: int
    cache_entries: int = 0
    invalidate_on_restore: bool = True
    entries: dict[str, Any] = field(default_factory=dict)
    cache: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    dirty: set[str] = field(default_factory=set)
    changelog_position: int = 0  # next changelog offset to apply (standby / catch-up)

    # -- reads and writes through the cache -------------------------------------------------------
    def get(self, key: str) -> Any:
        if key in self.cache:
            self.cache.move_to_end(key)
            return self.cache[key]
        value = self.entries.get(key)
        if self.cache_entries and value is not None:
            self._cache_put(key, value)
        return value

    def put(self, key: str, value: Any) -> list[tuple[str, bytes]]:
        """Write ``key``; returns the changelog records that must be written now (uncached or evicted)."""
        if not self.cache_entries:
            self.entries[key] = value
            return [(key, encode(value))]
        self.dirty.add(key)
        return self._cache_put(key, value)

    def flush(self) -> list[tuple[str, bytes]]:
        """Write dirty cache entries through to the store; returns their changelog records."""
        records = []
        for key in sorted(self.dirty):
            self.entries[key] = self.cache[key]
            records.append((key, encode(self.cache[key])))
        self.dirty.clear()
        return records

    def _cache_put(self, key: str, value: Any) -> list[tuple[str, bytes]]:
        self.cache[key] = value
        self.cache.move_to_end(key)
        evicted = []
        while len(self.cache) > self.cache_entries:
            old, old_value = self.cache.popitem(last=False)
            if old in self.dirty:
                self.dirty.discard(old)
                self.entries[old] = old_value
                evicted.append((old, encode(old_value)))
        return evicted

    # -- the app's logic --------------------------------------------------------------------------
    def assign(self, key: str) -> tuple[int, int, list[tuple[str, bytes]]]:
        """The key's (assigned id, stored seq); a new key gets the next id and seq 0. Also returns the
        changelog records the counter update forces out of the cache."""
        entry = self.get(key)
        if entry is not None:
            return entry["assigned_id"], entry["seq"], []
        counter = (self.get(COUNTER) or {"counter": 0})["counter"]
        writes = self.put(COUNTER, {"counter": counter + 1})
        return counter * self.partition_count + self.partition, 0, writes

    def record(self, key: str, assigned_id: int, seq: int) -> list[tuple[str, bytes]]:
        return self.put(key, {"assigned_id": assigned_id, "seq": seq})

    # -- restoration and standby replication ------------------------------------------------------
    def apply(self, key: str, changelog_value: bytes, offset: int) -> None:
        """Replay one changelog record into the store (restore or standby)."""
        self.entries[key] = json.loads(changelog_value)
        if self.invalidate_on_restore:
            self.cache.pop(key, None)
            self.dirty.discard(key)
        self.changelog_position = offset + 1


def encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
