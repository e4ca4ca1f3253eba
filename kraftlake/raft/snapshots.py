"""The quorum's snapshot files, in the format `kraftlake.records.snapshot_file` defines."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kraftlake.records import RecordBatch, decode_batches, encode_batch
from kraftlake.records.snapshot_file import snapshot_batches


def encode_snapshot(
    epoch: int,
    records: Sequence[tuple[Any, int]],
    last_contained_timestamp_ms: int,
    quorum_records: Sequence[Any] = (),
) -> bytes:
    """The snapshot file of the state machine's (record, schema version) pairs; `quorum_records` (KRaftVersion
    + Voters under kraft.version 1) ride in the header batch, as in Kafka."""
    batches = snapshot_batches(epoch, records, last_contained_timestamp_ms, last_contained_timestamp_ms,
                               header_records=quorum_records)
    return b"".join(encode_batch(batch) for batch in batches)


def snapshot_data_batches(data: bytes) -> Iterator[RecordBatch]:
    """The state machine's batches of a snapshot file (the header and footer control batches left out)."""
    for batch in decode_batches(data, "<snapshot>"):
        if not batch.is_control:
            yield batch
