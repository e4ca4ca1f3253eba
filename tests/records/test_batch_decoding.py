"""Batch decoding beyond Kafka's own byte layout: records that are valid but not written the way Kafka writes
them (longer varints than needed) take the general path and decode to the same records; decoded batches
carry every field a constructed RecordBatch has."""

from __future__ import annotations

import dataclasses
from typing import Any

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlake.records import framing, wire
from kraftlake.records import metadata_types as mt
from kraftlake.records.batch import RecordBatch, decode_batch, encode_batch, make_batch
from kraftlake.records.errors import CorruptBatchError
from tests.records import strategies
from tests.records.test_errors import batch

TOPIC = mt.TopicRecord(name="orders", topic_id="xOxBrcYuSRWgtFuZIBiXIA")


def padded_uvarint(value: int, extra: int) -> bytes:
    """`value` as an unsigned varint with `extra` more bytes than needed (valid: readers accept it)."""
    out = bytearray()
    wire.write_uvarint(out, value)
    if extra == 0:
        return bytes(out)
    out[-1] |= 0x80
    return bytes(out) + b"\x80" * (extra - 1) + b"\x00"


def zigzag(value: int) -> int:
    return ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF


def loose_record(offset_delta: int, value: bytes, pads: tuple[int, int, int, int, int]) -> bytes:
    length_pad, timestamp_pad, delta_pad, key_pad, value_pad = pads
    body = (
        b"\x00"
        + padded_uvarint(0, timestamp_pad)
        + padded_uvarint(zigzag(offset_delta), delta_pad)
        + padded_uvarint(zigzag(-1), key_pad)
        + padded_uvarint(zigzag(len(value)), value_pad)
        + value
        + b"\x00"
    )
    return padded_uvarint(zigzag(len(body)), length_pad) + body


def loose_value(message: Any, version: int, api_key_pad: int, version_pad: int) -> bytes:
    canonical = framing.encode_metadata_value(message, version)
    api_key = message.API_KEY
    head = b"\x01" + padded_uvarint(api_key, api_key_pad) + padded_uvarint(version, version_pad)
    return head + canonical[len(wire_head(api_key, version)) :]


def wire_head(api_key: int, version: int) -> bytes:
    out = bytearray(b"\x01")
    wire.write_uvarint(out, api_key)
    wire.write_uvarint(out, version)
    return bytes(out)


PADS = st.tuples(*[st.integers(0, 3)] * 5)


@settings(max_examples=100)
@given(st.lists(st.tuples(strategies.metadata_record(), PADS, st.integers(0, 2), st.integers(0, 2)),
                min_size=1, max_size=6))
def test_longer_varints_decode_like_kafkas_layout(cases: list) -> None:
    records = [
        loose_record(index, loose_value(message, version, api_pad, version_pad), pads)
        for index, ((message, version), pads, api_pad, version_pad) in enumerate(cases)
    ]
    decoded = decode_batch(batch(500, records))
    assert [(r.offset, r.version, r.message) for r in decoded.records] == [
        (500 + index, version, message) for index, ((message, version), *_) in enumerate(cases)
    ]


def test_kafka_layout_and_padded_layout_agree_on_a_real_record_mix() -> None:
    messages: list[Any] = [
        TOPIC, mt.NoOpRecord(), mt.PartitionRecord(topic_id=TOPIC.topic_id, replicas=(1, 2), isr=(1,))
    ]
    canonical = decode_batch(encode_batch(make_batch(7, 1, 1_000, messages)))
    padded = decode_batch(batch(7, [
        loose_record(i, loose_value(m, m.MAX_VERSION, 1, 1), (1, 1, 1, 1, 1)) for i, m in enumerate(messages)
    ]))
    assert padded.records == canonical.records


def test_decoded_batches_have_every_field_set() -> None:
    built = make_batch(40, 3, 1_700_000_000_123, [TOPIC, mt.NoOpRecord()], compression_codec=0)
    raw = encode_batch(built)
    decoded = decode_batch(raw)
    expected = dataclasses.replace(built, position=0, size_in_bytes=len(raw))
    names = [f.name for f in dataclasses.fields(RecordBatch)]
    assert {name: getattr(decoded, name) for name in names} == {name: getattr(expected, name) for name in names}
    assert decoded == expected


def test_a_recurring_small_batch_is_rebased_to_its_own_offsets() -> None:
    """Identical record sections (NoOp heartbeats) may be decoded once and re-based: each copy must still
    get the offsets of its own batch, and the same bytes under a wrong record count must still fail."""
    messages = [mt.NoOpRecord(), mt.NoOpRecord()]
    first = decode_batch(encode_batch(make_batch(10, 1, 5, messages)))
    again = decode_batch(encode_batch(make_batch(9_000, 2, 6, messages)))
    assert [r.offset for r in first.records] == [10, 11]
    assert [r.offset for r in again.records] == [9_000, 9_001]
    assert again.records[0].message == mt.NoOpRecord() and again.partition_leader_epoch == 2
    one = decode_batch(encode_batch(make_batch(3, 1, 5, [mt.NoOpRecord()])))
    assert [r.offset for r in one.records] == [3]
    raw = bytearray(encode_batch(make_batch(20, 1, 5, messages)))
    raw[57:61] = (3).to_bytes(4, "big")  # claims 3 records for the 2 it holds
    raw[23:27] = (2).to_bytes(4, "big")
    with pytest.raises(CorruptBatchError):
        decode_batch(_with_crc(raw))


def _with_crc(raw: bytearray) -> bytes:
    raw[17:21] = crc32c.crc32c(bytes(raw[21:])).to_bytes(4, "big")
    return bytes(raw)
