"""Kafka's snapshot file format (KIP-630), the one definition both the quorum's snapshots and `kraftlake.replay`'s
image writer use: a control batch [SnapshotHeader], data batches, a control batch [SnapshotFooter]; offsets
restart at 0 and every batch carries the snapshot's epoch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kraftlake.records.batch import Record, RecordBatch, make_batch
from kraftlake.records.control_types import SnapshotFooterRecord, SnapshotHeaderRecord

RECORDS_PER_BATCH = 1000  # Kafka's snapshot writers cap a batch by bytes; a record count is enough here


def snapshot_batches(
    epoch: int,
    records: Sequence[tuple[Any, int]],
    last_contained_log_timestamp_ms: int,
    append_time_ms: int,
    *,
    records_per_batch: int = RECORDS_PER_BATCH,
    header_records: Sequence[Any] = (),
) -> list[RecordBatch]:
    """The batches of a snapshot of (record, schema version) pairs: each record is written at the version its
    writer chose (the image's metadata.version decides), not at its type's latest. `header_records` follow
    SnapshotHeader in the first batch (KRaftVersionRecord + VotersRecord under kraft.version 1)."""
    header = SnapshotHeaderRecord(version=0, last_contained_log_timestamp=last_contained_log_timestamp_ms)
    batches = [make_batch(0, epoch, append_time_ms, [header, *header_records], control=True)]
    offset = 1 + len(header_records)
    for start in range(0, len(records), records_per_batch):
        chunk = records[start : start + records_per_batch]
        batches.append(
            RecordBatch(
                base_offset=offset,
                partition_leader_epoch=epoch,
                base_timestamp=append_time_ms,
                max_timestamp=append_time_ms,
                records=tuple(Record(offset + i, version, message) for i, (message, version) in enumerate(chunk)),
                last_offset_delta=len(chunk) - 1,
            )
        )
        offset += len(chunk)
    batches.append(make_batch(offset, epoch, append_time_ms, [SnapshotFooterRecord(version=0)], control=True))
    return batches
