"""RecordBatch v2 (magic 2) as KRaft writes it: header, CRC-32C, records, optional compression.

`scan_batches` checks framing and CRCs only (the floor any reader pays); `decode_batches` also decodes every
record into typed messages. Both raise a located RecordFormatError naming the source, the byte position
and the offset, and never yield part of a batch.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import crc32c

from kraftlake.records import compression, control_types, framing, wire
from kraftlake.records.errors import CorruptBatchError, RecordFormatError

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part batchLength does not count
_CRC_START = 21
_COPY_LIMIT = 1 << 14  # below this, slicing a batch for its CRC is cheaper than a memoryview
_PREFIX = struct.Struct(">qiibI")
_AFTER_CRC = struct.Struct(">hiqqqhii")

CONTROL_FLAG = 0x20
COMPRESSION_MASK = 0x07
MAGIC = 2


class Record(NamedTuple):
    """One decoded record: its log offset, the schema version it was written at, the typed message."""

    offset: int
    version: int
    message: Any


class BatchHeader(NamedTuple):
    """What a reader learns from a batch without decoding its records."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    position: int

    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A decoded batch. `position`/`size_in_bytes` locate it in its source (-1/0 for a built batch)."""

    base_offset: int
    partition_leader_epoch: int
    base_timestamp: int
    max_timestamp: int
    records: tuple[Record, ...]
    attributes: int = 0
    last_offset_delta: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    position: int = -1
    size_in_bytes: int = 0

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def append_time_ms(self) -> int:
        """Batch.appendTimestamp(): the time Kafka's loader records as an image's lastContainedLogTime."""
        return self.max_timestamp


def read_header(buf: Any, pos: int, source: str, *, verify_crc: bool = True) -> BatchHeader:
    """The header of the batch at `pos`, with its framing and (optionally) its CRC checked."""
    available = len(buf) - pos
    if available < HEADER_SIZE:
        raise _short_header_error(buf, pos, source)
    fields = _HEADER.unpack_from(buf, pos)
    base_offset, batch_length, _, magic, crc = fields[:5]
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptBatchError(
            f"batch length {batch_length} is smaller than a batch header",
            source=source, position=pos, offset=base_offset,
        )
    end = pos + LOG_OVERHEAD + batch_length
    if end > len(buf):
        raise CorruptBatchError(
            f"truncated: the batch needs {LOG_OVERHEAD + batch_length} bytes, {available} are left",
            source=source, position=pos, offset=base_offset,
        )
    if magic != MAGIC:
        raise CorruptBatchError(
            f"magic byte {magic}: only RecordBatch v2 is supported", source=source, position=pos, offset=base_offset
        )
    if verify_crc:
        if batch_length < _COPY_LIMIT:
            actual = crc32c.crc32c(buf[pos + _CRC_START : end])
        else:  # no copy of a large batch just to checksum it
            with memoryview(buf) as view:
                actual = crc32c.crc32c(view[pos + _CRC_START : end])
        if actual != crc:
            raise CorruptBatchError(
                f"CRC mismatch: stored {crc:#010x}, computed {actual:#010x}",
                source=source, position=pos, offset=base_offset,
            )
    last_offset_delta, record_count = fields[6], fields[12]
    if record_count < 0 or last_offset_delta < record_count - 1:
        raise CorruptBatchError(
            f"record count {record_count} does not fit lastOffsetDelta {last_offset_delta}",
            source=source, position=pos, offset=base_offset,
        )
    return _new_tuple(BatchHeader, (*fields, pos))


def _short_header_error(buf: Any, pos: int, source: str) -> CorruptBatchError:
    """The error for a batch at `pos` with fewer bytes left than a batch header: a cut-off file or a bad length."""
    available = len(buf) - pos
    if available < LOG_OVERHEAD:
        return CorruptBatchError(
            f"truncated: {available} byte(s) left, too few for a batch header",
            source=source, position=pos, offset=struct.unpack_from(">q", buf, pos)[0] if available >= 8 else None,
        )
    base_offset, batch_length = struct.unpack_from(">qi", buf, pos)
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        return CorruptBatchError(
            f"batch length {batch_length} is smaller than a batch header",
            source=source, position=pos, offset=base_offset,
        )
    return CorruptBatchError(
        f"truncated: the batch needs {LOG_OVERHEAD + batch_length} bytes, {available} are left",
        source=source, position=pos, offset=base_offset,
    )


def scan_batches(buf: Any, source: str = "<bytes>", *, verify_crc: bool = True) -> Iterator[BatchHeader]:
    """Every batch header in `buf`, in order, framing and CRC checked, records left encoded."""
    pos = 0
    end = len(buf)
    next_offset = None  # names the offset of a batch too short to carry its own
    while pos < end:
        try:
            header = read_header(buf, pos, source, verify_crc=verify_crc)
        except RecordFormatError as error:
            raise error.located(offset=next_offset) from None
        yield header
        next_offset = header.last_offset + 1
        pos += header.size_in_bytes


def decode_batches(buf: Any, source: str = "<bytes>", *, verify_crc: bool = True) -> Iterator[RecordBatch]:
    """Every batch in `buf`, fully decoded. A batch is yielded whole or not at all."""
    pos = 0
    end = len(buf)
    next_offset = None  # as in scan_batches, one generator less per batch
    while pos < end:
        try:
            header = read_header(buf, pos, source, verify_crc=verify_crc)
        except RecordFormatError as error:
            raise error.located(offset=next_offset) from None
        yield decode_batch_at(buf, header, source)
        next_offset = header[0] + header[6] + 1  # last offset + 1
        pos += LOG_OVERHEAD + header[1]


def decode_batch(raw: bytes, source: str = "<bytes>", *, verify_crc: bool = True) -> RecordBatch:
    """The single batch that makes up `raw` (a Kafka message value, say)."""
    header = read_header(raw, 0, source, verify_crc=verify_crc)
    if header.size_in_bytes != len(raw):
        raise CorruptBatchError(
            f"{len(raw) - header.size_in_bytes} byte(s) after the batch", source=source, offset=header.base_offset
        )
    return decode_batch_at(raw, header, source)


def decode_batch_at(buf: Any, header: BatchHeader, source: str) -> RecordBatch:
    """The batch whose (already checked) header is `header`, its records decoded."""
    (base_offset, batch_length, epoch, _, _, attributes, last_offset_delta, base_timestamp, max_timestamp,
     producer_id, producer_epoch, base_sequence, _, position) = header
    start = position + HEADER_SIZE
    payload = bytes(buf[start : position + LOG_OVERHEAD + batch_length])  # no copy when buf is bytes
    codec = attributes & COMPRESSION_MASK
    try:
        if codec:
            payload = compression.decompress(codec, payload)
        records = _decode_records(
            payload, base_offset, header[12], attributes & CONTROL_FLAG, base_offset + last_offset_delta
        )
    except RecordFormatError as error:
        # Record errors carry a position inside the records section: make it a position in the source; in a
        # compressed batch only the batch's own position means anything to a reader of the file.
        reason, located = error.reason, position
        if error.position is not None:
            if codec:
                reason = f"{reason} (at byte {error.position} of the decompressed records)"
            else:
                located = start + error.position
        offset = base_offset if error.offset is None else error.offset
        raise type(error)(reason, source=source, position=located, offset=offset) from None
    # RecordBatch(...) without its frozen __init__, whose object.__setattr__ per field costs ~2 us a batch
    batch = _new_object(RecordBatch)
    _set_base_offset(batch, base_offset)
    _set_partition_leader_epoch(batch, epoch)
    _set_base_timestamp(batch, base_timestamp)
    _set_max_timestamp(batch, max_timestamp)
    _set_records(batch, records)
    _set_attributes(batch, attributes)
    _set_last_offset_delta(batch, last_offset_delta)
    _set_producer_id(batch, producer_id)
    _set_producer_epoch(batch, producer_epoch)
    _set_base_sequence(batch, base_sequence)
    _set_position(batch, position)
    _set_size_in_bytes(batch, LOG_OVERHEAD + batch_length)
    return batch


_new_object = object.__new__


def _slot_setter(name: str) -> Callable[[RecordBatch, Any], None]:
    """The `__set__` of one of the frozen RecordBatch's slots (a checker sees the field, not its descriptor)."""
    setter: Callable[[RecordBatch, Any], None] = vars(RecordBatch)[name].__set__
    return setter


_set_base_offset = _slot_setter("base_offset")
_set_partition_leader_epoch = _slot_setter("partition_leader_epoch")
_set_base_timestamp = _slot_setter("base_timestamp")
_set_max_timestamp = _slot_setter("max_timestamp")
_set_records = _slot_setter("records")
_set_attributes = _slot_setter("attributes")
_set_last_offset_delta = _slot_setter("last_offset_delta")
_set_producer_id = _slot_setter("producer_id")
_set_producer_epoch = _slot_setter("producer_epoch")
_set_base_sequence = _slot_setter("base_sequence")
_set_position = _slot_setter("position")
_set_size_in_bytes = _slot_setter("size_in_bytes")


_read_varint = wire.read_varint
_read_varlong = wire.read_varlong
_new_tuple = tuple.__new__


class _NotCanonical(Exception):
    """Raised inside the fast path to hand a record to the general decoder (a new instance each time: a
    shared one would collect the traceback of every raise)."""


class _BodyDecoders(dict[int, Any]):
    """(apiKey << 8 | version) -> body decoder, filled on first use (a subscript is cheaper than .get)."""

    def __missing__(self, key: int) -> Any:
        try:
            decoder = self[key] = framing.body_decoder(key >> 8, key & 0xFF)
        except RecordFormatError:
            raise _NotCanonical from None  # the general decoder raises the located error
        return decoder


_BODY_DECODERS = _BodyDecoders()
_SMALL_PAYLOAD = 64  # bytes of records section: a few small records
_SMALL_PAYLOAD_ENTRIES = 4096
_SMALL_PAYLOADS: dict[bytes, tuple[tuple[int, int, Any], ...]] = {}


def _decode_records(data: bytes, base: int, count: int, control: int, last_offset: int) -> tuple[Record, ...]:
    """The records of one batch; an error carries the record's offset and its position inside `data`.

    Metadata records as Kafka writes them (one- or two-byte varints, timestampDelta 0, null key, no
    headers, frame 1 with one-byte apiKey and version) are decoded inline here: the per-record function
    calls of the general path cost more than the record bodies. Anything else, valid or not, goes through
    `_decode_record`, which decodes it or raises the precise error.

    Small record sections recur byte for byte (the NoOp heartbeat batch a KRaft leader writes every 500 ms
    is most of a real log): their records are remembered, offset deltas and all, and only re-based.
    """
    size = len(data)
    small = size <= _SMALL_PAYLOAD and not control
    if small:
        known = _SMALL_PAYLOADS.get(data)
        if known is not None and len(known) == count:
            return tuple([_new_tuple(Record, (base + delta, version, message)) for delta, version, message in known])
    pos = 0
    if control:
        records = []
        for index in range(count):
            record, pos = _decode_record(data, pos, base, index, True)
            records.append(record)
    else:
        decoders = _BODY_DECODERS
        new = _new_tuple
        records = []
        append = records.append
        for index in range(count):
            start = pos
            try:
                # length (zig-zag varint, 1-2 bytes), attributes, timestampDelta 0
                b = data[pos]
                if b < 0x80:
                    pos += 1
                else:
                    b2 = data[pos + 1]
                    if b2 >= 0x80:
                        raise _NotCanonical
                    b = (b & 0x7F) | (b2 << 7)
                    pos += 2
                end = pos + (b >> 1)
                if b & 1 or end > size or data[pos + 1]:
                    raise _NotCanonical
                # offsetDelta (1-2 bytes)
                b = data[pos + 2]
                if b < 0x80:
                    pos += 3
                else:
                    b2 = data[pos + 3]
                    if b2 >= 0x80:
                        raise _NotCanonical
                    b = (b & 0x7F) | (b2 << 7)
                    pos += 4
                offset = base + ((b >> 1) ^ -(b & 1))
                # null key (-1), valueLength (1-2 bytes)
                b = data[pos + 1]
                if data[pos] != 1:
                    raise _NotCanonical
                if b < 0x80:
                    pos += 2
                else:
                    b2 = data[pos + 2]
                    if b2 >= 0x80:
                        raise _NotCanonical
                    b = (b & 0x7F) | (b2 << 7)
                    pos += 3
                value_end = pos + (b >> 1)
                # the value fills the record up to its headers count, 0; frame 1
                if b & 1 or value_end != end - 1 or data[value_end] or data[pos] != 1:
                    raise _NotCanonical
                # apiKey and version bytes >= 0x80 (longer varints) make keys no decoder has: general path
                version = data[pos + 2]
                key = data[pos + 1] << 8 | version
                message, pos = decoders[key](data, pos + 3)
                if pos != value_end:
                    raise _NotCanonical
                append(new(Record, (offset, version, message)))
                pos = end
            except (_NotCanonical, IndexError, ValueError, struct.error):
                record, pos = _decode_record(data, start, base, index, False)
                append(record)
    if pos != size:
        raise CorruptBatchError(
            f"{size - pos} byte(s) after the last record", offset=last_offset, position=pos
        )
    if small:
        if len(_SMALL_PAYLOADS) >= _SMALL_PAYLOAD_ENTRIES:
            _SMALL_PAYLOADS.clear()
        _SMALL_PAYLOADS[data] = tuple((r.offset - base, r.version, r.message) for r in records)
    return tuple(records)


def _decode_record(data: bytes, pos: int, base: int, index: int, control: bool) -> tuple[Record, int]:
    """The record at `pos` and the position after it, or a CorruptBatchError/RecordFormatError located at
    the record's start and offset (its index in the batch when the offset cannot be read)."""
    start = pos
    offset = base + index
    try:
        length, pos = _read_varint(data, pos)
        end = pos + length
        if length <= 0 or end > len(data):
            raise CorruptBatchError(f"record length {length} does not fit the batch")
        pos += 1  # record attributes: unused by Kafka
        timestamp_delta, pos = _read_varlong(data, pos)
        offset_delta, pos = _read_varint(data, pos)
        offset = base + offset_delta
        key_length, pos = _read_varint(data, pos)
        key = None
        if key_length >= 0:
            if pos + key_length > end:
                raise CorruptBatchError(f"record key length {key_length} does not fit the record")
            key = data[pos : pos + key_length]
            pos += key_length
        value_length, pos = _read_varint(data, pos)
        if value_length < 0 or pos + value_length > end:
            raise CorruptBatchError(f"record value length {value_length} does not fit the record")
        value = data[pos : pos + value_length]
        pos += value_length
        headers, pos = _read_varint(data, pos)
        if pos != end:
            raise CorruptBatchError(f"record framing is {end - pos} byte(s) off its length")
        if timestamp_delta != 0 or headers != 0:
            raise CorruptBatchError("KRaft records have timestampDelta 0 and no headers")
        if control:
            if key is None or not value:
                raise CorruptBatchError("a control record needs a key and a value")
            return Record(offset, control_types.CONTROL_VALUE_VERSION, framing.decode_control(key, value)), end
        if key is not None or not value:
            raise CorruptBatchError("a metadata record has no key and a non-empty value")
        message, version = framing.decode_metadata_value(value)
        return Record(offset, version, message), end
    except RecordFormatError as error:
        raise error.located(offset=offset, position=start) from None
    except (IndexError, ValueError, struct.error):
        raise CorruptBatchError("the batch's records end too early", offset=offset, position=start) from None


# -- encoding -----------------------------------------------------------------------------------------


def encode_record(offset_delta: int, message: Any, version: int, control: bool) -> bytes:
    if control:
        key, value = framing.encode_control(message)
    else:
        key, value = None, framing.encode_metadata_value(message, version)
    body = bytearray(b"\x00\x00")  # attributes, timestampDelta 0
    wire.write_varint(body, offset_delta)
    if key is None:
        body.append(1)  # varint -1
    else:
        wire.write_varint(body, len(key))
        body += key
    wire.write_varint(body, len(value))
    body += value
    body.append(0)  # no headers
    out = bytearray()
    wire.write_varint(out, len(body))
    return bytes(out + body)


def encode_batch(batch: RecordBatch) -> bytes:
    """The bytes of `batch`, CRC computed. Real Kafka batches re-encode to their original bytes."""
    control = batch.is_control
    raw = b"".join(
        encode_record(record.offset - batch.base_offset, record.message, record.version, control)
        for record in batch.records
    )
    if batch.compression:
        raw = compression.compress(batch.compression, raw)
    last_offset_delta = batch.last_offset_delta
    if last_offset_delta < 0:
        last_offset_delta = len(batch.records) - 1
    after_crc = _AFTER_CRC.pack(
        batch.attributes,
        last_offset_delta,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        len(batch.records),
    ) + raw
    batch_length = len(after_crc) + HEADER_SIZE - LOG_OVERHEAD - _AFTER_CRC.size
    prefix = _PREFIX.pack(
        batch.base_offset, batch_length, batch.partition_leader_epoch, MAGIC, crc32c.crc32c(after_crc)
    )
    return prefix + after_crc


def make_batch(
    base_offset: int,
    leader_epoch: int,
    append_time_ms: int,
    messages: Sequence[Any],
    *,
    control: bool = False,
    compression_codec: int = compression.NONE,
    versions: Mapping[type, int] | None = None,
) -> RecordBatch:
    """A new batch of `messages` at consecutive offsets, as the Raft leader writes one.

    Each message is written at `versions[type(message)]`, else its type's latest version: the writer's
    metadata.version decides which versions it may use.
    """
    if not messages:
        raise ValueError("a batch holds at least one record")
    chosen = versions or {}
    records = tuple(
        Record(
            base_offset + index,
            control_types.CONTROL_VALUE_VERSION if control else chosen.get(type(m), m.MAX_VERSION),
            m,
        )
        for index, m in enumerate(messages)
    )
    attributes = (CONTROL_FLAG if control else 0) | compression_codec
    return RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
        base_timestamp=append_time_ms,
        max_timestamp=append_time_ms,
        records=records,
        attributes=attributes,
        last_offset_delta=len(records) - 1,
    )
