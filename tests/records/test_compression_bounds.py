"""A compressed batch cannot make the reader allocate what its payload claims: a snappy length preamble of
4 GiB, a decompression bomb. Each is refused with the batch's position and offset, within bounded memory."""

from __future__ import annotations

import resource

import cramjam
import crc32c
import pytest

from kraftlake.records import compression
from kraftlake.records import metadata_types as mt
from kraftlake.records.batch import _CRC_START, HEADER_SIZE, RecordBatch, decode_batch, encode_batch, make_batch
from kraftlake.records.errors import CompressionError

SNAPPY_CLAIM_4_GIB = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00"  # preamble uvarint 2^32-1, one literal tag


def _batch_with_payload(codec: int, payload: bytes) -> bytes:
    """A batch at offset 40 whose records section is `payload`, length and CRC valid: only the payload lies."""
    header = encode_batch(make_batch(40, 1, 0, [mt.NoOpRecord()], compression_codec=codec))[:HEADER_SIZE]
    after_crc = header[_CRC_START:] + payload
    prefix = header[:8] + (len(after_crc) + 9).to_bytes(4, "big") + header[12:17]  # epoch, magic: 9 bytes
    return prefix + crc32c.crc32c(after_crc).to_bytes(4, "big") + after_crc


def _peak_rss_mib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10


@pytest.mark.parametrize("payload", [SNAPPY_CLAIM_4_GIB, compression._XERIAL_HEADER.pack(
    compression._XERIAL_MAGIC, 1, 1) + len(SNAPPY_CLAIM_4_GIB).to_bytes(4, "big") + SNAPPY_CLAIM_4_GIB])
def test_a_snappy_length_claim_is_not_allocated(payload: bytes) -> None:
    before = _peak_rss_mib()
    with pytest.raises(CompressionError) as raised:
        decode_batch(_batch_with_payload(compression.SNAPPY, payload), "claim.log")
    assert raised.value.source == "claim.log" and raised.value.position == 0 and raised.value.offset == 40
    assert "snappy" in str(raised.value)
    assert _peak_rss_mib() - before < 100


@pytest.mark.parametrize("codec", [compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD])
def test_a_decompression_bomb_stops_at_the_bound(codec: int) -> None:
    """Zeros just past the bound compress to a few KiB (zstd: about 2 KiB for 64 MiB): refused, not inflated."""
    bomb = compression.compress(codec, bytes(compression.MAX_DECOMPRESSED_BYTES + 1))
    assert len(bomb) < compression.MAX_DECOMPRESSED_BYTES // 20
    with pytest.raises(CompressionError, match=r"at most 64 MiB") as raised:
        decode_batch(_batch_with_payload(codec, bomb), "bomb.log")
    assert raised.value.offset == 40


def test_a_records_section_at_the_bound_still_decompresses() -> None:
    raw = bytes(compression.MAX_DECOMPRESSED_BYTES)
    assert compression.decompress(compression.ZSTD, bytes(cramjam.zstd.compress(raw))) == raw


def test_batches_of_every_codec_round_trip() -> None:
    batch = make_batch(7, 2, 1000, [mt.NoOpRecord(), mt.ConfigRecord(resource_type=4, name="a", value="b")])
    for codec in (compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD):
        compressed = RecordBatch(**{**{f: getattr(batch, f) for f in RecordBatch.__slots__}, "attributes": codec})
        assert decode_batch(encode_batch(compressed)).records == batch.records
