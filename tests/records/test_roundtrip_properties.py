"""Property tests: encode → decode is the identity for every record type and version (with tagged and
unknown tagged fields), for record values, control records, JSON forms and whole batches in every codec."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlake.records import compression, framing, wire
from kraftlake.records import metadata_types as mt
from kraftlake.records.batch import decode_batch, decode_batches, encode_batch, make_batch
from kraftlake.records.json_form import message_from_json, message_to_json
from kraftlake.records.schema import StructSchema
from tests.records import strategies

SETTINGS = settings(max_examples=60)


def _id(case: tuple[StructSchema, int]) -> str:
    return f"{case[0].name}-v{case[1]}"


@pytest.mark.parametrize("case", strategies.METADATA_VERSIONS + strategies.CONTROL_VERSIONS, ids=_id)
@SETTINGS
@given(data=st.data())
def test_body_codec_round_trips_every_type_and_version(case: tuple[StructSchema, int], data: st.DataObject) -> None:
    schema, version = case
    message = data.draw(strategies.message(schema, version))
    decode, encode = schema.codec(version)
    out = bytearray()
    encode(message, out)
    decoded, end = decode(bytes(out), 0)
    assert decoded == message
    assert end == len(out)
    again = bytearray()
    encode(decoded, again)
    assert again == out


@SETTINGS
@given(strategies.metadata_record())
def test_metadata_value_framing_round_trips(case: tuple[Any, int]) -> None:
    message, version = case
    value = framing.encode_metadata_value(message, version)
    assert value[0] == framing.FRAME_VERSION
    assert framing.decode_metadata_value(value) == (message, version)


@SETTINGS
@given(strategies.control_record())
def test_control_record_round_trips(message: Any) -> None:
    key, value = framing.encode_control(message)
    assert key == b"\x00\x00" + message.CONTROL_TYPE.to_bytes(2, "big")
    assert framing.decode_control(key, value) == message


@SETTINGS
@given(strategies.metadata_record())
def test_unredacted_json_form_reads_back(case: tuple[Any, int]) -> None:
    message, version = case
    assert message_from_json(type(message), message_to_json(message, version, redact=False), version) == message


def _batch_cases() -> st.SearchStrategy[Any]:
    data_batch = st.tuples(st.lists(strategies.metadata_record(), min_size=1, max_size=12), st.just(False))
    control_batch = st.tuples(
        st.lists(strategies.control_record().map(lambda m: (m, 0)), min_size=1, max_size=3), st.just(True)
    )
    return st.tuples(
        st.one_of(data_batch, control_batch),
        st.sampled_from(sorted(compression.CODEC_NAMES)),
        st.integers(0, 2**62),
        st.integers(0, 2**31 - 1),
        st.integers(0, 2**41),
    )


@SETTINGS
@given(_batch_cases())
def test_whole_batches_round_trip_in_every_codec(case: Any) -> None:
    (records, control), codec, base_offset, epoch, append_time = case
    messages = [m for m, _ in records]
    batch = make_batch(base_offset, epoch, append_time, messages, control=control, compression_codec=codec)
    # make_batch writes one version per type: give each record the version it was drawn at instead.
    batch = dataclasses.replace(
        batch, records=tuple(r._replace(version=v) for r, (_, v) in zip(batch.records, records, strict=True))
    )
    raw = encode_batch(batch)
    decoded = decode_batch(raw)
    assert decoded.records == batch.records
    assert (decoded.base_offset, decoded.partition_leader_epoch, decoded.base_timestamp, decoded.max_timestamp) == (
        base_offset, epoch, append_time, append_time,
    )
    assert decoded.compression == codec and decoded.is_control == control
    assert (decoded.position, decoded.size_in_bytes) == (0, len(raw))
    assert encode_batch(decoded) == raw  # deterministic, codecs included


@pytest.mark.slow  # make check leaves it to make test
@settings(max_examples=25)
@given(st.lists(_batch_cases(), min_size=1, max_size=4))
def test_concatenated_batches_decode_in_order(cases: list[Any]) -> None:
    batches = []
    offset = 0
    for (records, control), codec, _, epoch, append_time in cases:
        messages = [m for m, _ in records]
        batches.append(make_batch(offset, epoch, append_time, messages, control=control, compression_codec=codec))
        offset += len(messages)
    raw = b"".join(encode_batch(b) for b in batches)
    decoded = list(decode_batches(raw))
    assert [d.records for d in decoded] == [b.records for b in batches]
    assert [r.offset for d in decoded for r in d.records] == list(range(offset))


LENGTHS = [0, 1, 2, 62, 63, 64, 65, 126, 127, 128, 129, 300]


@pytest.mark.parametrize("n", LENGTHS)
def test_lengths_around_the_one_byte_varint_limits(n: int) -> None:
    """Short and long arrays, strings and bytes take different decode paths: all must round trip, alone and
    inside a batch."""
    uuids = tuple(wire.uuid_to_text(bytes([i % 256]) * 16) for i in range(n))
    messages = [
        (mt.PartitionRecord(topic_id=uuids[0] if n else wire.ZERO_UUID, replicas=tuple(range(n)),
                            isr=tuple(range(n, 0, -1)), adding_replicas=tuple(range(n // 2)), directories=uuids), 2),
        (mt.PartitionChangeRecord(isr=tuple(range(n)), directories=uuids, eligible_leader_replicas=()), 2),
        (mt.ConfigRecord(resource_name="é" * n, name="x" * n, value="v" * n), 0),
        (mt.UserScramCredentialRecord(name="u", salt=bytes(range(256))[:n] * 2, stored_key=b"k" * n), 0),
        (mt.DelegationTokenRecord(owner="o" * n, renewers=tuple("r" * i for i in range(min(n, 40)))), 0),
        (mt.TopicRecord(name="t", topic_id=wire.ZERO_UUID, unknown_tagged_fields=((9, b"z" * n),)), 0),
    ]
    for message, version in messages:
        value = framing.encode_metadata_value(message, version)
        assert framing.decode_metadata_value(value) == (message, version)
    batch = make_batch(0, 1, 2, [m for m, _ in messages], versions={type(m): v for m, v in messages})
    assert [r.message for r in decode_batch(encode_batch(batch)).records] == [m for m, _ in messages]
