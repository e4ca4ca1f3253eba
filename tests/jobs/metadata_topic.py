"""Messages as the publisher writes them: one per batch, value = RecordBatch v2 bytes, key = the base
offset as an 8-byte big-endian integer; reading a topic back, and feeding it to the streaming job's driver."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from kraftlake.jobs.materialize import MaterializeConfig, MicroBatchWriter, TopicMessage
from kraftlake.records import RecordBatch, encode_batch
from kraftlake.records.topic import message_offset, message_value


def batch_messages(batches: Iterable[RecordBatch]) -> list[tuple[bytes, bytes]]:
    return [(struct.pack(">q", batch.base_offset), encode_batch(batch)) for batch in batches]


def topic_messages(bootstrap: str, topic: str) -> list[TopicMessage]:
    """Every message of partition 0, in topic order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)
        consumer.assign([TopicPartition(topic, 0, low)])
        out: list[TopicMessage] = []
        while len(out) < high - low:
            message = consumer.poll(30)
            assert message is not None and message.error() is None, message and message.error()
            out.append(TopicMessage(message_offset(message), message.key(), message_value(message)))
        return out
    finally:
        consumer.close()


def drain(bootstrap: str, topic: str, warehouse: Path, micro_batch: int, single_first: int = 0) -> None:
    """What the streaming job writes when its micro-batches hold `micro_batch` messages (after
    `single_first` micro-batches of one message each), without Spark: the driver's writer fed directly."""
    # No Spark: the first write starts at Kafka offset 0, so the writer never reads the topic back itself.
    config = MaterializeConfig(bootstrap, topic, str(warehouse), warehouse.parent / "unused",
                               idle_publish_seconds=0.0, coalesce_backlog=False)  # an image every micro-batch
    writer = MicroBatchWriter(config, None)
    messages = topic_messages(bootstrap, topic)
    bounds = [*range(single_first), *range(single_first, len(messages), micro_batch), len(messages)]
    for start, stop in pairwise(bounds):
        writer.write(messages[start:stop])
