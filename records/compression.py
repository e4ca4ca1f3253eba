"""Batch compression codecs: gzip (zlib), and snappy, lz4 and zstd through cramjam (one maintained wheel
that bundles all three). Kafka's Java client frames snappy in xerial's stream format and lz4 in the LZ4
frame format; both are handled here.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import cramjam

from records.errors import CompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_BLOCK_LENGTH = struct.Struct(">i")


def decompress(codec: int, payload: bytes) -> bytes:
    """The records section of a batch compressed with `codec`."""
    try:
        if codec == GZIP:
            return gzip.decompress(payload)
        if codec == SNAPPY:
            return _snappy_decompress(payload)
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(payload))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(payload))
    except (OSError, EOFError, ValueError, zlib.error, cramjam.DecompressionError, struct.error) as error:
        raise CompressionError(f"{CODEC_NAMES[codec]} payload does not decompress: {error}") from None
    raise CompressionError(f"unknown compression codec id {codec}")


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


def _snappy_decompress(payload: bytes) -> bytes:
    if not payload.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(payload))
    out = bytearray()
    pos = _XERIAL_HEADER.size
    while pos < len(payload):
        (length,) = _BLOCK_LENGTH.unpack_from(payload, pos)
        pos += 4
        if length < 0 or pos + length > len(payload):
            raise ValueError("xerial snappy block runs past the end")
        out += cramjam.snappy.decompress_raw(payload[pos : pos + length])
        pos += length
    return bytes(out)
