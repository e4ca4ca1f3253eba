"""The metadata topic's messages: one per batch, value = the RecordBatch v2 bytes exactly as the log or
snapshot file holds them.

The key says where the batch belongs:
- a log batch: its base offset, an 8-byte big-endian int64;
- a snapshot batch: the snapshot's id, 12 bytes (end offset as int64, epoch as int32, big-endian). A snapshot
  goes into the topic as its file's batches in file order (they carry the snapshot's own offsets, from 0),
  from the one holding the SnapshotHeaderRecord to the one holding the SnapshotFooterRecord; a reader loads
  it whole, as Kafka's loader loads a snapshot, once the footer arrives.

On a fleet's shared topic (one topic for every cluster, `kraftlake.settings.fleet`) the key starts with the
cluster's name and a NUL byte (`cluster_key`), then the key above: the name tells the clusters apart, and every
message of a cluster goes to the one partition its name hashes to (`cluster_partition`), so a cluster's batches
keep their order as they would on a topic of their own.
"""

from __future__ import annotations

import struct
import zlib
from typing import Protocol

from kraftlake.records.batch import RecordBatch
from kraftlake.records.control_types import SnapshotFooterRecord, SnapshotHeaderRecord
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.files import SnapshotId

LOG_KEY = struct.Struct(">q")
# The largest message the topic must take: Kafka's Raft batches reach 8 MiB (KafkaRaftClient.MAX_BATCH_SIZE_BYTES
# in 4.4), above the 1 MiB Kafka and librdkafka allow by default; twice that leaves room for the framing.
MAX_MESSAGE_BYTES = 16 << 20
SNAPSHOT_KEY = struct.Struct(">qi")
CLUSTER_SEPARATOR = b"\x00"  # after the cluster's name in a shared topic's key (a name never holds one)


def encode_key(base_offset: int) -> bytes:
    return LOG_KEY.pack(base_offset)


def decode_key(key: bytes | None, source: str = "<message>") -> int:
    """The base offset a log batch's message key names (a consumed message may have no key: an error)."""
    if key is None:
        raise RecordFormatError("a metadata message without a key: its batch's base offset is unknown", source=source)
    if len(key) != LOG_KEY.size:
        raise RecordFormatError(
            f"a metadata message key of {len(key)} bytes: expected {LOG_KEY.size} (a base offset) "
            f"or {SNAPSHOT_KEY.size} (a snapshot id)", source=source,
        )
    return LOG_KEY.unpack(key)[0]


def encode_snapshot_key(snapshot: SnapshotId) -> bytes:
    return SNAPSHOT_KEY.pack(snapshot.end_offset, snapshot.epoch)


def snapshot_of(key: bytes | None) -> SnapshotId | None:
    """The snapshot a message's batch belongs to; None for a log batch."""
    if key is None or len(key) != SNAPSHOT_KEY.size:
        return None
    return SnapshotId(*SNAPSHOT_KEY.unpack(key))


def starts_snapshot(batch: RecordBatch) -> bool:
    """The control batch that opens a snapshot file."""
    return batch.is_control and any(isinstance(r.message, SnapshotHeaderRecord) for r in batch.records)


def ends_snapshot(batch: RecordBatch) -> bool:
    """The control batch that closes a snapshot file."""
    return batch.is_control and any(isinstance(r.message, SnapshotFooterRecord) for r in batch.records)


def cluster_key(cluster: str, key: bytes) -> bytes:
    """A shared topic's key: the cluster's name, NUL, then the batch's own key."""
    return cluster.encode() + CLUSTER_SEPARATOR + key


def split_cluster_key(key: bytes | None) -> tuple[str, bytes] | None:
    """(cluster name, the batch's own key) of a shared topic's key; None for a key that names no cluster."""
    name, separator, rest = (key or b"").partition(CLUSTER_SEPARATOR)
    if not separator or not name:
        return None
    return name.decode("utf-8", errors="replace"), rest


def cluster_partition(cluster: str, partitions: int) -> int:
    """The shared topic's partition of a cluster: CRC-32 of its name modulo the partition count, the same in
    every process and release (Python's `hash` is salted per process)."""
    return zlib.crc32(cluster.encode()) % partitions


class ConsumedMessage(Protocol):
    """What a Kafka client hands back for one message (confluent-kafka's `Message` is one)."""

    def topic(self) -> str | None: ...
    def offset(self) -> int | None: ...
    def value(self) -> bytes | None: ...


def message_offset(message: ConsumedMessage) -> int:
    """The offset of a consumed message or partition-EOF event (a client leaves it unset on neither)."""
    offset = message.offset()
    if offset is None:
        raise RecordFormatError(f"a consumed message of {message.topic()} has no offset")
    return offset


def message_value(message: ConsumedMessage) -> bytes:
    """The value of a consumed metadata message: a record batch, never empty (a tombstone is corruption)."""
    value = message.value()
    if value is None:
        raise RecordFormatError(f"{message.topic()} offset {message.offset()}: a message without a value")
    return value
