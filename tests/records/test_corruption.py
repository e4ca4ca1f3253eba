"""Corrupted and truncated real files always give a located RecordFormatError, never another exception and
never a silently wrong record.

What RecordBatch v2 guarantees, and so what is asserted: the CRC-32C covers bytes [21, end) of a batch, and
a CRC detects every error burst up to 32 bits, so any change to one byte there (or to the CRC itself) is
caught. The magic byte is checked. A changed batchLength moves the CRC range or the framing, which is caught.
baseOffset and partitionLeaderEpoch are not covered by anything: a flip there yields the same batch with that
header field changed, and the reader cannot know better (Kafka's own reader behaves the same way).
"""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlake.records import compression
from kraftlake.records import metadata_types as mt
from kraftlake.records.batch import RecordBatch, decode_batch, decode_batches, encode_batch, make_batch
from kraftlake.records.errors import CompressionError, CorruptBatchError, RecordFormatError
from kraftlake.records.files import read_batches
from tests.records.samples import sample_batches, sample_bytes

SMALL = "Niloufar1171_LDI-POC/bootstrap.checkpoint"
FILES = [
    SMALL,
    "kckoh_xflow/kafka-data/__cluster_metadata-0/00000000000000007605-0000000001.checkpoint",
    "Jeong-Rae_KafkaDemo/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log",
]
BASE_OFFSET = range(0, 8)
BATCH_LENGTH = range(8, 12)
EPOCH = range(12, 16)
MAGIC = 16
CRC_FIELD = range(17, 21)


def decode_all(raw: bytes, source: str) -> tuple[list[RecordBatch], RecordFormatError | None]:
    """The batches yielded before the first error, and that error (None when the whole input decodes)."""
    yielded: list[RecordBatch] = []
    try:
        for batch in decode_batches(raw, source):
            yielded.append(batch)
    except RecordFormatError as error:
        return yielded, error
    return yielded, None


def containing(batches: tuple[RecordBatch, ...], pos: int) -> RecordBatch:
    return next(b for b in batches if b.position <= pos < b.position + b.size_in_bytes)


def assert_located(error: RecordFormatError, source: str, position: int, offset: int | None) -> None:
    assert (error.source, error.position, error.offset) == (source, position, offset)
    text = str(error)
    assert text.startswith(f"{source}, byte position {position}")
    if offset is not None:
        assert f"offset {offset}" in text
    assert "\n" not in text


def with_header_value(batch: RecordBatch, relative: int, corrupted: bytes) -> RecordBatch:
    """`batch` as the reader must see it after its baseOffset or epoch bytes changed to those in `corrupted`."""
    start = batch.position
    if relative in BASE_OFFSET:
        (base,) = struct.unpack_from(">q", corrupted, start)
        shifted = tuple(r._replace(offset=r.offset - batch.base_offset + base) for r in batch.records)
        return dataclasses.replace(batch, base_offset=base, records=shifted)
    (epoch,) = struct.unpack_from(">i", corrupted, start + 12)
    return dataclasses.replace(batch, partition_leader_epoch=epoch)


def check_single_byte_change(samples_dir: Path, path: str, pos: int, xor: int) -> None:
    raw = sample_bytes(samples_dir, path)
    batches = sample_batches(samples_dir, path)
    corrupted = bytearray(raw)
    corrupted[pos] ^= xor
    yielded, error = decode_all(bytes(corrupted), path)
    hit = containing(batches, pos)
    relative = pos - hit.position
    before = [b for b in batches if b.position < hit.position]
    if relative in BASE_OFFSET or relative in EPOCH:
        assert error is None
        changed = with_header_value(hit, relative, bytes(corrupted))
        assert yielded == [changed if b is hit else b for b in batches]
        return
    assert isinstance(error, CorruptBatchError)
    assert yielded == before
    assert_located(error, path, hit.position, hit.base_offset)
    if relative == MAGIC:
        assert "magic byte" in error.reason
    elif relative not in BATCH_LENGTH:
        assert "CRC mismatch" in error.reason


def test_every_single_bit_flip_of_a_real_file(samples_dir: Path) -> None:
    size = len(sample_bytes(samples_dir, SMALL))
    for pos in range(size):
        for bit in range(8):
            check_single_byte_change(samples_dir, SMALL, pos, 1 << bit)


@settings(max_examples=200)
@given(data=st.data())
def test_random_byte_change_of_a_real_file(samples_dir: Path, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(FILES))
    pos = data.draw(st.integers(0, len(sample_bytes(samples_dir, path)) - 1))
    check_single_byte_change(samples_dir, path, pos, data.draw(st.integers(1, 255)))


@settings(max_examples=200)
@given(data=st.data())
def test_truncation_at_any_position(samples_dir: Path, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(FILES))
    raw = sample_bytes(samples_dir, path)
    batches = sample_batches(samples_dir, path)
    cut = data.draw(st.integers(0, len(raw) - 1))
    yielded, error = decode_all(raw[:cut], path)
    complete = [b for b in batches if b.position + b.size_in_bytes <= cut]
    assert yielded == complete
    if cut in {b.position for b in batches}:
        assert error is None  # a cut between batches is indistinguishable from a shorter file
        return
    assert isinstance(error, CorruptBatchError)
    assert "truncated" in error.reason
    cut_batch = containing(batches, cut)
    # The first batch of a file cannot name its offset before its 8 baseOffset bytes are there.
    known = cut_batch.position > 0 or cut - cut_batch.position >= 8
    assert_located(error, path, cut_batch.position, cut_batch.base_offset if known else None)


@settings(max_examples=150)
@given(data=st.data())
def test_several_changed_bytes_never_give_a_wrong_record(samples_dir: Path, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(FILES))
    raw = sample_bytes(samples_dir, path)
    batches = sample_batches(samples_dir, path)
    positions = data.draw(st.lists(st.integers(0, len(raw) - 1), min_size=1, max_size=8, unique=True))
    corrupted = bytearray(raw)
    for pos in positions:
        corrupted[pos] ^= data.draw(st.integers(1, 255))
    yielded, error = decode_all(bytes(corrupted), path)
    by_position = {b.position: b for b in batches}
    for batch in yielded:
        original = by_position[batch.position]
        # Only the two uncovered header fields may differ, and only if bytes there were changed.
        assert batch.records == tuple(
            r._replace(offset=r.offset - original.base_offset + batch.base_offset) for r in original.records
        )
        assert dataclasses.replace(batch, base_offset=original.base_offset, records=original.records,
                                   partition_leader_epoch=original.partition_leader_epoch) == original
        touched = {p - original.position for p in positions if original.position <= p < original.position + 16}
        if batch.base_offset != original.base_offset:
            assert touched & set(BASE_OFFSET)
        if batch.partition_leader_epoch != original.partition_leader_epoch:
            assert touched & set(EPOCH)
    if error is None:
        assert len(yielded) == len(batches)
        relative = [p - containing(batches, p).position for p in positions]
        assert all(r in BASE_OFFSET or r in EPOCH for r in relative)
    else:
        assert error.source == path and error.position is not None
        assert f"{path}, byte position {error.position}" in str(error)


def _with_crc(raw: bytearray) -> bytes:
    raw[17:21] = struct.pack(">I", crc32c.crc32c(bytes(raw[21:])))
    return bytes(raw)


def _synthetic_batches(samples_dir: Path) -> list[bytes]:
    """Real records (a PartitionRecord-heavy snapshot batch) re-batched in every codec."""
    path = "kckoh_xflow/kafka-data/__cluster_metadata-0/00000000000000007605-0000000001.checkpoint"
    messages = [r.message for r in sample_batches(samples_dir, path)[1].records[:40]]
    versions: dict[type, int] = {mt.PartitionRecord: 0, mt.RegisterBrokerRecord: 1}
    return [
        encode_batch(make_batch(100, 3, 1_700_000_000_000, messages, compression_codec=codec, versions=versions))
        for codec in sorted(compression.CODEC_NAMES)
    ]


@settings(max_examples=200)
@given(data=st.data())
def test_corruption_behind_a_valid_crc_is_a_located_error(samples_dir: Path, data: st.DataObject) -> None:
    """Bytes changed by a buggy writer (the CRC recomputed after the change) still never crash the reader:
    each record decodes, or the batch fails with a RecordFormatError that names the source and offset."""
    raw = data.draw(st.sampled_from(_synthetic_batches(samples_dir)))
    corrupted = bytearray(raw)
    positions = data.draw(st.lists(st.integers(21, len(raw) - 1), min_size=1, max_size=4, unique=True))
    for pos in positions:
        corrupted[pos] = data.draw(st.integers(0, 255))
    try:
        batch = decode_batch(_with_crc(corrupted), "buggy-writer")
    except RecordFormatError as error:
        assert error.source == "buggy-writer" and error.offset is not None and error.position is not None
        assert 0 <= error.position < len(raw)
        if isinstance(error, CompressionError):
            assert error.position == 0
        return
    assert decode_batch(encode_batch(batch)).records == batch.records


def test_garbage_payloads_name_the_codec(samples_dir: Path) -> None:
    for raw in _synthetic_batches(samples_dir)[1:]:
        corrupted = bytearray(raw[:61]) + b"\xde\xad\xbe\xef" * 8
        corrupted[8:12] = struct.pack(">i", len(corrupted) - 12)
        with pytest.raises(CompressionError) as caught:
            decode_batch(_with_crc(corrupted), "x.log")
        codec = compression.CODEC_NAMES[raw[22] & 0x07]
        assert caught.value.reason.startswith(f"{codec} payload does not decompress")
        assert_located(caught.value, "x.log", 0, 100)


def test_read_batches_names_the_file_it_read(samples_dir: Path, tmp_path: Path) -> None:
    raw = sample_bytes(samples_dir, FILES[1])
    batches = sample_batches(samples_dir, FILES[1])
    second = batches[1]
    broken = tmp_path / "00000000000000007605-0000000001.checkpoint"
    corrupted = bytearray(raw)
    corrupted[second.position + 100] ^= 0x40
    broken.write_bytes(bytes(corrupted))
    with pytest.raises(CorruptBatchError) as caught:
        list(read_batches(broken))
    assert_located(caught.value, str(broken), second.position, second.base_offset)
