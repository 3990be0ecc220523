"""Where a topic's partitions begin and end, and where a consumer group committed in them: one reading for the drain
(the Airflow side) and the checker, which judges what the app committed. It imports nothing of the project: the
checker ships this file to Spark (``--py-files``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition


def positions(config: Mapping[str, Any], topic: str, committed: bool = False,
              timeout: float = 10.0) -> dict[int, tuple[int, int, int]]:
    """``{partition: (low, high, position)}`` of ``topic``: its watermarks and, with ``committed``, the committed
    offset of the group ``config`` names (the partition's low watermark where the group committed nothing); without,
    the position is the low watermark."""
    consumer = Consumer({**config, "enable.auto.commit": False})
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics[topic]
        if meta.error is not None:
            raise KafkaException(meta.error)
        marks = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
                 for p in sorted(meta.partitions)}
        found = {tp.partition: tp.offset for tp in
                 consumer.committed([TopicPartition(topic, p) for p in marks], timeout=timeout)} if committed else {}
    finally:
        consumer.close()
    return {p: (low, high, found[p] if found.get(p, -1) >= 0 else low) for p, (low, high) in marks.items()}
