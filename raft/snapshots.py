"""Kafka's snapshot file format (KIP-630): control batch [SnapshotHeader], data batches, control batch
[SnapshotFooter]; offsets restart at 0 and every batch carries the snapshot's epoch."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from records import Record, RecordBatch, decode_batches, encode_batch, make_batch
from records.control_types import SnapshotFooterRecord, SnapshotHeaderRecord

RECORDS_PER_BATCH = 1000


def encode_snapshot(epoch: int, records: Sequence[tuple[Any, int]], last_contained_timestamp_ms: int) -> bytes:
    """The snapshot file of the state machine's (record, schema version) pairs: each record is written at the
    version its writer chose (the image's metadata.version decides), not at its type's latest."""
    header = make_batch(
        0, epoch, last_contained_timestamp_ms,
        [SnapshotHeaderRecord(version=0, last_contained_log_timestamp=last_contained_timestamp_ms)],
        control=True,
    )
    parts = [encode_batch(header)]
    offset = 1
    for start in range(0, len(records), RECORDS_PER_BATCH):
        chunk = records[start:start + RECORDS_PER_BATCH]
        batch = RecordBatch(
            base_offset=offset,
            partition_leader_epoch=epoch,
            base_timestamp=last_contained_timestamp_ms,
            max_timestamp=last_contained_timestamp_ms,
            records=tuple(Record(offset + i, version, message) for i, (message, version) in enumerate(chunk)),
            last_offset_delta=len(chunk) - 1,
        )
        parts.append(encode_batch(batch))
        offset += len(chunk)
    footer = make_batch(offset, epoch, last_contained_timestamp_ms, [SnapshotFooterRecord(version=0)], control=True)
    parts.append(encode_batch(footer))
    return b"".join(parts)


def snapshot_data_batches(data: bytes) -> Iterator[RecordBatch]:
    """The state machine's batches of a snapshot file (the header and footer control batches left out)."""
    for batch in decode_batches(data, "<snapshot>"):
        if not batch.is_control:
            yield batch
