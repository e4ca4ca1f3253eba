"""Primitive encodings of Kafka's wire format: varints and the flexible-version compact types.

Decoders take `(buf, pos)` and return `(value, new_pos)`; they raise IndexError/struct.error/ValueError
on short or malformed input, which the batch layer turns into a located RecordFormatError.
"""

from __future__ import annotations

import base64
import struct

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
MAX_STRING_LENGTH = 0x7FFF


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned LEB128, at most 5 bytes (an int32)."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    result = byte & 0x7F
    shift = 7
    pos += 1
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise ValueError("unsigned varint is longer than 5 bytes")


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag signed varint (int32)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag signed varlong (int64), at most 10 bytes."""
    result = 0
    shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("signed varlong is longer than 10 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(out: bytearray, value: int) -> None:
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def uuid_to_text(raw: bytes) -> str:
    """Kafka's text form of a Uuid: URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(raw)[:22].decode("ascii")


def uuid_from_text(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return raw
