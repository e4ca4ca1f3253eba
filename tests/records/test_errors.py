"""Invalid values, records and batches raise the right RecordFormatError subclass, with Kafka's wording
where Kafka has one, and name the source, byte position and offset once the batch layer knows them."""

from __future__ import annotations

import struct

import crc32c
import pytest

from kraftlake.records import framing, wire
from kraftlake.records import metadata_types as mt
from kraftlake.records.batch import decode_batch, decode_batches
from kraftlake.records.errors import (
    CompressionError,
    CorruptBatchError,
    RecordFormatError,
    UnknownRecordTypeError,
    UnsupportedVersionError,
)

TOPIC_ID = "xOxBrcYuSRWgtFuZIBiXIA"
TOPIC_VALUE = framing.encode_metadata_value(mt.TopicRecord(name="t", topic_id=TOPIC_ID), 0)


def record(offset_delta: int, value: bytes | None, key: bytes | None = None, *, timestamp_delta: int = 0,
           headers: int = 0) -> bytes:
    """One DefaultRecord, built field by field from the format description."""
    body = bytearray(b"\x00")
    wire.write_varlong(body, timestamp_delta)
    wire.write_varint(body, offset_delta)
    for part in (key, value):
        if part is None:
            wire.write_varint(body, -1)
        else:
            wire.write_varint(body, len(part))
            body += part
    wire.write_varint(body, headers)
    framed = bytearray()
    wire.write_varint(framed, len(body))
    return bytes(framed + body)


def batch(base_offset: int, records: list[bytes], *, attributes: int = 0, count: int | None = None,
          magic: int = 2, trailing: bytes = b"") -> bytes:
    """A RecordBatch v2 around already encoded records, with a correct CRC."""
    count = len(records) if count is None else count
    after_crc = struct.pack(">hiqqqhii", attributes, max(count - 1, 0), 1_000, 1_000, -1, -1, -1, count)
    after_crc += b"".join(records) + trailing
    crc = crc32c.crc32c(after_crc)
    return struct.pack(">qiibI", base_offset, len(after_crc) + 9, 7, magic, crc) + after_crc


def value(api_key: int, version: int, body: bytes = b"\x00", frame: int = 1) -> bytes:
    out = bytearray()
    for part in (frame, api_key, version):
        wire.write_uvarint(out, part)
    return bytes(out) + body


@pytest.mark.parametrize("api_key", [6, 13, 16, 30, 200, 32767])
def test_unknown_api_key(api_key: int) -> None:
    with pytest.raises(UnknownRecordTypeError) as caught:
        framing.decode_metadata_value(value(api_key, 0))
    assert caught.value.reason == f"unknown metadata record type (apiKey {api_key})"


@pytest.mark.parametrize(("api_key", "version", "name", "known"), [
    (3, 3, "PARTITION_RECORD", "0-2"), (2, 1, "TOPIC_RECORD", "0-0"), (0, 5, "REGISTER_BROKER_RECORD", "0-4"),
    (17, 300, "BROKER_REGISTRATION_CHANGE_RECORD", "0-3"),
])
def test_unknown_version(api_key: int, version: int, name: str, known: str) -> None:
    with pytest.raises(UnsupportedVersionError) as caught:
        framing.decode_metadata_value(value(api_key, version))
    assert caught.value.reason == f"{name} version {version} is not supported (known versions {known})"


def test_writing_an_unknown_version_is_refused() -> None:
    with pytest.raises(UnsupportedVersionError, match="TOPIC_RECORD has no version 1"):
        framing.encode_metadata_value(mt.TopicRecord(), 1)


def test_frame_version_0_is_the_unsupported_2_8_preview() -> None:
    with pytest.raises(RecordFormatError) as caught:
        framing.decode_metadata_value(TOPIC_VALUE.replace(b"\x01", b"\x00", 1))
    assert type(caught.value) is RecordFormatError
    assert "frame version 0" in caught.value.reason and "not supported" in caught.value.reason


def test_other_frame_versions() -> None:
    with pytest.raises(RecordFormatError, match=r"unknown frame version 2 \(only frame version 1 is supported\)"):
        framing.decode_metadata_value(value(2, 0, frame=2))


def test_garbage_after_the_body() -> None:
    with pytest.raises(RecordFormatError) as caught:
        framing.decode_metadata_value(TOPIC_VALUE + b"\x00\x07")
    assert caught.value.reason == "found 2 byte(s) of garbage after TOPIC_RECORD v0"


def test_value_that_ends_too_early() -> None:
    with pytest.raises(RecordFormatError, match="malformed TOPIC_RECORD v0"):
        framing.decode_metadata_value(TOPIC_VALUE[:-5])


def test_non_nullable_field_serialized_as_null() -> None:
    null_name = value(2, 0, b"\x00" + b"\x00" * 16 + b"\x00")
    with pytest.raises(RecordFormatError, match=r"non-nullable field TopicRecord\.Name was serialized as null"):
        framing.decode_metadata_value(null_name)


def test_known_tag_in_a_version_that_does_not_have_it() -> None:
    """EligibleLeaderReplicas is tag 1 of PartitionRecord from v2 on: in v1 it is an error, not unknown."""
    v1 = framing.encode_metadata_value(mt.PartitionRecord(topic_id=TOPIC_ID), 1)
    # one tagged field: tag 1, 5 bytes, compact array [1]
    tagged = v1[:-1] + b"\x01" + b"\x01\x05" + b"\x02\x00\x00\x00\x01"
    with pytest.raises(RecordFormatError, match="tag 1 is not valid for PartitionRecord version 1"):
        framing.decode_metadata_value(tagged)


@pytest.mark.parametrize(("control_type", "name"), [(0, "ABORT"), (1, "COMMIT"), (7, "UNKNOWN"), (-1, "UNKNOWN")])
def test_unknown_control_types(control_type: int, name: str) -> None:
    key = struct.pack(">hh", 0, control_type)
    with pytest.raises(UnknownRecordTypeError) as caught:
        framing.decode_control(key, b"\x00\x00\x00")
    assert caught.value.reason == f"unsupported control record type {control_type} ({name}) in a KRaft log"


def test_control_key_shape() -> None:
    with pytest.raises(RecordFormatError, match="control record key has 3 bytes, expected 4"):
        framing.decode_control(b"\x00\x00\x04", b"\x00\x00\x00")
    with pytest.raises(RecordFormatError, match="control record key version -1 is negative"):
        framing.decode_control(struct.pack(">hh", -1, 4), b"\x00\x00\x00")


# -- errors located by the batch layer ------------------------------------------------------------------


def test_a_bad_record_is_located_at_its_own_position_and_offset() -> None:
    good = [record(0, TOPIC_VALUE), record(1, TOPIC_VALUE)]
    bad = record(2, value(13, 0))
    first = batch(40, [record(0, TOPIC_VALUE)])
    raw = first + batch(41, [*good, bad])
    with pytest.raises(UnknownRecordTypeError) as caught:
        list(decode_batches(raw, "00000000000000000040.log"))
    bad_position = len(first) + 61 + len(good[0]) + len(good[1])
    assert (caught.value.source, caught.value.position, caught.value.offset) == (
        "00000000000000000040.log", bad_position, 43,
    )
    assert str(caught.value) == (
        f"00000000000000000040.log, byte position {bad_position}, offset 43: unknown metadata record type (apiKey 13)"
    )


@pytest.mark.parametrize(("records", "kwargs", "reason"), [
    ([record(0, TOPIC_VALUE, key=b"k")], {}, "a metadata record has no key and a non-empty value"),
    ([record(0, b"")], {}, "a metadata record has no key and a non-empty value"),
    ([record(0, b"\x00\x00\x00", key=None)], {"attributes": 0x20}, "a control record needs a key and a value"),
    ([record(0, TOPIC_VALUE, timestamp_delta=5)], {}, "KRaft records have timestampDelta 0 and no headers"),
    ([record(0, TOPIC_VALUE, headers=1)], {}, "KRaft records have timestampDelta 0 and no headers"),
    ([record(0, TOPIC_VALUE)], {"trailing": b"\x00\x00"}, "2 byte(s) after the last record"),
    ([record(0, TOPIC_VALUE)], {"count": 2}, "end too early"),
])
def test_record_framing_errors(records: list[bytes], kwargs: dict, reason: str) -> None:
    with pytest.raises(CorruptBatchError) as caught:
        decode_batch(batch(9, records, **kwargs), "b")
    assert reason in caught.value.reason
    assert caught.value.source == "b" and caught.value.offset is not None and caught.value.position is not None


def test_record_length_that_disagrees_with_its_fields() -> None:
    longer = bytearray(record(0, TOPIC_VALUE))
    longer[0] += 2  # zig-zag: the record claims one more byte than it has
    with pytest.raises(CorruptBatchError):
        decode_batch(batch(0, [bytes(longer) + b"\x00"]), "b")


def test_record_count_beyond_last_offset_delta() -> None:
    raw = bytearray(batch(0, [record(0, TOPIC_VALUE)]))
    raw[23:27] = struct.pack(">i", -1)
    raw[17:21] = struct.pack(">I", crc32c.crc32c(bytes(raw[21:])))
    with pytest.raises(CorruptBatchError, match="record count 1 does not fit lastOffsetDelta -1"):
        decode_batch(bytes(raw), "b")


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_compression_codec(codec: int) -> None:
    with pytest.raises(CompressionError) as caught:
        decode_batch(batch(3, [record(0, TOPIC_VALUE)], attributes=codec), "c.log")
    assert str(caught.value) == f"c.log, byte position 0, offset 3: unknown compression codec id {codec}"


def test_old_magic() -> None:
    with pytest.raises(CorruptBatchError, match="magic byte 1: only RecordBatch v2 is supported"):
        decode_batch(batch(0, [record(0, TOPIC_VALUE)], magic=1), "b")


def test_bytes_after_a_single_batch() -> None:
    with pytest.raises(CorruptBatchError, match="3 byte\\(s\\) after the batch"):
        decode_batch(batch(0, [record(0, TOPIC_VALUE)]) + b"abc", "b")
