"""Batch compression codecs: gzip (the stdlib's when writing), snappy, lz4 and zstd through cramjam (one
maintained wheel that bundles them all, and decompresses all four into a bounded buffer). Kafka's Java
client frames snappy in xerial's stream format and lz4 in the LZ4 frame format; both are handled here.
"""

from __future__ import annotations

import gzip
import mmap
import struct
from collections.abc import Callable

import cramjam

from kraftlake.records.errors import CompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_BLOCK_LENGTH = struct.Struct(">i")


# The most a batch's records section may decompress to: 8 times the largest batch Kafka's Raft layer writes
# (KafkaRaftClient.MAX_BATCH_SIZE_BYTES, 8 MiB). Decompression writes into a buffer this size whose pages
# are only committed as they are written, so a size claimed by a codec's header (a snappy block's length
# preamble says up to 4 GiB) or a decompression bomb fails at the bound instead of allocating what it claims.
MAX_DECOMPRESSED_BYTES = 64 << 20

def decompress(codec: int, payload: bytes) -> bytes:
    """The records section of a batch compressed with `codec`."""
    if codec not in CODEC_NAMES or codec == NONE:
        raise CompressionError(f"unknown compression codec id {codec}")
    with mmap.mmap(-1, MAX_DECOMPRESSED_BYTES) as out:
        try:
            size = _DECOMPRESS_INTO[codec](payload, out)
        except (ValueError, cramjam.DecompressionError, struct.error) as error:
            raise CompressionError(
                f"{CODEC_NAMES[codec]} payload does not decompress to at most {MAX_DECOMPRESSED_BYTES >> 20} MiB: "
                f"{error}"
            ) from None
        return out[:size]


def compress(codec: int, raw: bytes) -> bytes:
    if codec == GZIP:
        return gzip.compress(raw, mtime=0)  # as Java's GZIPOutputStream: same input, same bytes
    if codec == SNAPPY:
        block = bytes(cramjam.snappy.compress_raw(raw))
        return _XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1) + _BLOCK_LENGTH.pack(len(block)) + block
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(raw))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(raw))
    raise CompressionError(f"unknown compression codec id {codec}")


def _snappy_decompress_into(payload: bytes, out: mmap.mmap) -> int:
    """Raw snappy, or xerial's framing of it (Kafka's Java client): blocks each prefixed by their length."""
    if not payload.startswith(_XERIAL_MAGIC):
        return int(cramjam.snappy.decompress_raw_into(payload, out))
    written = 0
    pos = _XERIAL_HEADER.size
    with memoryview(out) as view:
        while pos < len(payload):
            (length,) = _BLOCK_LENGTH.unpack_from(payload, pos)
            pos += 4
            if length < 0 or pos + length > len(payload):
                raise ValueError("xerial snappy block runs past the end")
            written += cramjam.snappy.decompress_raw_into(payload[pos : pos + length], view[written:])
            pos += length
    return written


_DECOMPRESS_INTO: dict[int, Callable[[bytes, mmap.mmap], int]] = {
    GZIP: cramjam.gzip.decompress_into,
    SNAPPY: _snappy_decompress_into,
    LZ4: cramjam.lz4.decompress_into,
    ZSTD: cramjam.zstd.decompress_into,
}
