"""Kafka's snapshot file format (KIP-630): control batch [SnapshotHeader], data batches, control batch
[SnapshotFooter]; offsets restart at 0 and every batch carries the snapshot's epoch."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from records import RecordBatch, decode_batches, encode_batch, make_batch
from records.control_types import SnapshotFooterRecord, SnapshotHeaderRecord

RECORDS_PER_BATCH = 1000


def encode_snapshot(epoch: int, messages: Sequence[Any], last_contained_timestamp_ms: int) -> bytes:
    header = make_batch(
        0, epoch, last_contained_timestamp_ms,
        [SnapshotHeaderRecord(version=0, last_contained_log_timestamp=last_contained_timestamp_ms)],
        control=True,
    )
    parts = [encode_batch(header)]
    offset = 1
    for start in range(0, len(messages), RECORDS_PER_BATCH):
        chunk = messages[start:start + RECORDS_PER_BATCH]
        parts.append(encode_batch(make_batch(offset, epoch, last_contained_timestamp_ms, chunk)))
        offset += len(chunk)
    footer = make_batch(offset, epoch, last_contained_timestamp_ms, [SnapshotFooterRecord(version=0)], control=True)
    parts.append(encode_batch(footer))
    return b"".join(parts)


def snapshot_data_batches(data: bytes) -> Iterator[RecordBatch]:
    """The state machine's batches of a snapshot file (the header and footer control batches left out)."""
    for batch in decode_batches(data, "<snapshot>"):
        if not batch.is_control:
            yield batch
