"""A request's and a response's bytes (without the 4-byte size prefix): header, then body, in the versions
that go together (`kraftlake.records.rpc` holds the schemas)."""

from __future__ import annotations

import struct
from typing import Any

from kraftlake.records.errors import RecordFormatError
from kraftlake.records.rpc import (
    API_NAMES,
    API_VERSIONS,
    REQUEST_HEADER,
    REQUESTS,
    RESPONSE_HEADER,
    RESPONSES,
    RequestHeader,
)
from kraftlake.records.schema import StructSchema


def request_header_version(api_key: int, version: int) -> int:
    """RequestHeader v2 goes with a flexible request version, v1 with the others."""
    return 2 if version >= REQUESTS[api_key].flexible_from else 1


def response_header_version(api_key: int, version: int) -> int:
    """ResponseHeader v1 goes with a flexible response version, v0 with the others, and always with ApiVersions:
    a client that asked with a version the server does not know can still read the answer's correlation id."""
    if api_key == API_VERSIONS:
        return 0
    return 1 if version >= RESPONSES[api_key].flexible_from else 0


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str, body: Any) -> bytes:
    """The request's bytes without the size prefix: header, then body."""
    _check_version(REQUESTS[api_key], version)
    out = bytearray()
    header = RequestHeader(api_key, version, correlation_id, client_id)
    REQUEST_HEADER.codec(request_header_version(api_key, version))[1](header, out)
    REQUESTS[api_key].codec(version)[1](body, out)
    return bytes(out)


def decode_response(api_key: int, version: int, buf: bytes, source: str) -> tuple[int, Any]:
    """(correlation id, body) of a response's bytes (size prefix removed); bytes that do not parse raise
    RecordFormatError naming `source` (the endpoint) and the API."""
    what = f"{API_NAMES.get(api_key, api_key)} v{version} response"
    try:
        header, pos = RESPONSE_HEADER.codec(response_header_version(api_key, version))[0](buf, 0)
        body, pos = RESPONSES[api_key].codec(version)[0](buf, pos)
    except (ValueError, IndexError, struct.error) as error:  # UnicodeDecodeError is a ValueError
        raise RecordFormatError(f"{what} does not parse: {error}", source=source) from None
    if pos != len(buf):
        raise RecordFormatError(f"{what} has {len(buf) - pos} bytes after its end", source=source)
    return header.correlation_id, body


def _check_version(schema: StructSchema, version: int) -> None:
    if not schema.min_version <= version <= schema.max_version:
        raise ValueError(f"{schema.name} is restated for versions {schema.min_version}-{schema.max_version}, "
                         f"not {version}")
