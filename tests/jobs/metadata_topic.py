"""Messages as the publisher writes them: one per batch, value = RecordBatch v2 bytes, key = the base
offset as an 8-byte big-endian integer."""

from __future__ import annotations

import struct
from collections.abc import Iterable

from records import RecordBatch, encode_batch


def batch_messages(batches: Iterable[RecordBatch]) -> list[tuple[bytes, bytes]]:
    return [(struct.pack(">q", batch.base_offset), encode_batch(batch)) for batch in batches]
