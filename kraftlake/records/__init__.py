"""The KRaft `__cluster_metadata` format: typed metadata and control records, RecordBatch v2, files.

Knows nothing of images: `kraftlake.replay` builds on this package, never the other way round.
"""

from kraftlake.records.batch import (
    BatchHeader,
    Record,
    RecordBatch,
    decode_batch,
    decode_batches,
    encode_batch,
    make_batch,
    scan_batches,
)
from kraftlake.records.errors import (
    CompressionError,
    CorruptBatchError,
    NotAMetadataLogError,
    RecordFormatError,
    UnknownRecordTypeError,
    UnsupportedVersionError,
)
from kraftlake.records.files import LogReader, MetadataLogDir, SnapshotId, read_batches, read_snapshot, snapshot_id
from kraftlake.records.headers import HeaderCheckError

__all__ = [
    "BatchHeader",
    "CompressionError",
    "CorruptBatchError",
    "HeaderCheckError",
    "LogReader",
    "MetadataLogDir",
    "NotAMetadataLogError",
    "Record",
    "RecordBatch",
    "RecordFormatError",
    "SnapshotId",
    "UnknownRecordTypeError",
    "UnsupportedVersionError",
    "decode_batch",
    "decode_batches",
    "encode_batch",
    "make_batch",
    "read_batches",
    "read_snapshot",
    "scan_batches",
    "snapshot_id",
]
