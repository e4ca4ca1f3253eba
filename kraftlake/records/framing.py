"""Record values: the metadata frame (frame version 1, apiKey, version, body) and control key/value.

Every error is a RecordFormatError without a location; the batch layer adds file, position and offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from kraftlake.records import control_types, metadata_types, wire
from kraftlake.records.errors import RecordFormatError, UnknownRecordTypeError, UnsupportedVersionError
from kraftlake.records.schema import StructSchema

FRAME_VERSION = 1
_CONTROL_KEY_TYPES = {0: "ABORT", 1: "COMMIT"}  # transaction markers: never written by KRaft


def decode_metadata_value(value: bytes) -> tuple[Any, int]:
    """(message, version) of a metadata record value."""
    try:
        frame, pos = wire.read_uvarint(value, 0)
        if frame != FRAME_VERSION:
            if frame == 0:
                raise RecordFormatError(
                    "frame version 0 (Kafka 2.8 preview KRaft): upgrades from the preview are not supported"
                )
            raise RecordFormatError(f"unknown frame version {frame} (only frame version 1 is supported)")
        api_key, pos = wire.read_uvarint(value, pos)
        version, pos = wire.read_uvarint(value, pos)
    except (IndexError, ValueError):
        raise RecordFormatError(f"a metadata record value of {len(value)} byte(s) ends inside its frame, apiKey "
                                "and version varints") from None
    message, _ = _decode_body(_schema(api_key, version), version, value, pos)
    return message, version


def body_decoder(api_key: int, version: int) -> Callable[[bytes, int], tuple[Any, int]]:
    """decode(buf, pos) -> (message, end) for the body of a metadata record type at a version. Its errors are
    ValueError/IndexError/struct.error, for callers that decode in place and locate errors themselves."""
    return _schema(api_key, version).codec(version)[0]


def _schema(api_key: int, version: int) -> StructSchema:
    schema = metadata_types.BY_API_KEY.get(api_key)
    if schema is None:
        raise UnknownRecordTypeError(f"unknown metadata record type (apiKey {api_key})")
    if not schema.min_version <= version <= schema.max_version:
        raise UnsupportedVersionError(
            f"{schema.cls.TYPE_NAME} version {version} is not supported "
            f"(known versions {schema.min_version}-{schema.max_version})"
        )
    return schema


def encode_metadata_value(message: Any, version: int) -> bytes:
    schema = message.SCHEMA
    if not schema.min_version <= version <= schema.max_version:
        raise UnsupportedVersionError(f"{message.TYPE_NAME} has no version {version}")
    out = bytearray()
    wire.write_uvarint(out, FRAME_VERSION)
    wire.write_uvarint(out, message.API_KEY)
    wire.write_uvarint(out, version)
    schema.codec(version)[1](message, out)
    return bytes(out)


def decode_control(key: bytes, value: bytes) -> Any:
    """The control message of a control record (key: int16 version, int16 type)."""
    if len(key) != 4:
        raise RecordFormatError(f"control record key has {len(key)} bytes, expected 4")
    key_version, control_type = wire.INT16.unpack_from(key, 0)[0], wire.INT16.unpack_from(key, 2)[0]
    if key_version < 0:
        raise RecordFormatError(f"control record key version {key_version} is negative")
    schema = control_types.BY_CONTROL_TYPE.get(control_type)
    if schema is None:
        name = _CONTROL_KEY_TYPES.get(control_type, "UNKNOWN")
        raise UnknownRecordTypeError(f"unsupported control record type {control_type} ({name}) in a KRaft log")
    message, _ = _decode_body(schema, control_types.CONTROL_VALUE_VERSION, value, 0)
    return message


def encode_control(message: Any) -> tuple[bytes, bytes]:
    """(key, value) of a control record."""
    key = wire.INT16.pack(0) + wire.INT16.pack(message.CONTROL_TYPE)
    out = bytearray()
    message.SCHEMA.codec(control_types.CONTROL_VALUE_VERSION)[1](message, out)
    return key, bytes(out)


def _decode_body(schema: Any, version: int, value: bytes, pos: int) -> tuple[Any, int]:
    name = getattr(schema.cls, "TYPE_NAME", schema.name)
    try:
        message, end = schema.codec(version)[0](value, pos)
    except (IndexError, struct.error):
        raise RecordFormatError(f"malformed {name} v{version}: the value ends too early") from None
    except ValueError as error:
        raise RecordFormatError(f"malformed {name} v{version}: {error}") from None
    if end != len(value):
        raise RecordFormatError(f"found {len(value) - end} byte(s) of garbage after {name} v{version}")
    return message, end
