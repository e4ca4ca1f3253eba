"""A small framed RPC over TCP: `uint32 frame length | uint32 header length | JSON header | raw blobs`.

Raft messages travel as their dataclass fields in the JSON header; their bytes fields (batches, snapshot
chunks) travel as raw blobs after it, so record batches are never re-encoded on the way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import struct
from typing import Any

from kraftlake.raft import messages as raft_messages
from kraftlake.raft.messages import DivergingEpoch, RaftMessage, SnapshotRef

_LENGTH = struct.Struct(">I")
MAX_FRAME_BYTES = 64 * 1024 * 1024

_MESSAGE_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        raft_messages.VoteRequest,
        raft_messages.VoteResponse,
        raft_messages.BeginQuorumEpochRequest,
        raft_messages.BeginQuorumEpochResponse,
        raft_messages.EndQuorumEpochRequest,
        raft_messages.FetchRequest,
        raft_messages.FetchResponse,
        raft_messages.FetchSnapshotRequest,
        raft_messages.FetchSnapshotResponse,
    )
}


def encode_frame(header: dict[str, Any], blobs: list[bytes] | tuple[bytes, ...] = ()) -> bytes:
    header = {**header, "blobs": [len(blob) for blob in blobs]}
    encoded = json.dumps(header, separators=(",", ":")).encode()
    body = _LENGTH.pack(len(encoded)) + encoded + b"".join(blobs)
    return _LENGTH.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[dict[str, Any], list[bytes]]:
    """One frame; raises asyncio.IncompleteReadError at a clean or torn end of stream."""
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    if length > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {length} bytes exceeds {MAX_FRAME_BYTES}")
    body = await reader.readexactly(length)
    (header_length,) = _LENGTH.unpack_from(body, 0)
    header = json.loads(body[_LENGTH.size:_LENGTH.size + header_length])
    blobs = []
    position = _LENGTH.size + header_length
    for size in header.pop("blobs", []):
        blobs.append(body[position:position + size])
        position += size
    return header, blobs


def encode_message(source: int, message: RaftMessage) -> bytes:
    header: dict[str, Any] = {"kind": "raft", "source": source, "type": type(message).__name__}
    blobs: list[bytes] = []
    for field in dataclasses.fields(message):
        value = getattr(message, field.name)
        if field.name == "batches":
            header["batches"] = len(value)
            blobs.extend(value)
        elif field.name == "chunk":
            header["chunk"] = len(blobs)
            blobs.append(value)
        elif isinstance(value, DivergingEpoch | SnapshotRef):
            header[field.name] = dataclasses.asdict(value)
        elif isinstance(value, tuple):
            header[field.name] = list(value)
        else:
            header[field.name] = value
    return encode_frame(header, blobs)


def decode_message(header: dict[str, Any], blobs: list[bytes]) -> tuple[int, RaftMessage]:
    cls = _MESSAGE_TYPES[header["type"]]
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name == "batches":
            values["batches"] = tuple(blobs[: header["batches"]])
        elif field.name == "chunk":
            values["chunk"] = blobs[header["chunk"]]
        elif field.name == "diverging_epoch":
            raw = header.get(field.name)
            values[field.name] = None if raw is None else DivergingEpoch(**raw)
        elif field.name == "snapshot":
            raw = header.get(field.name)
            values[field.name] = None if raw is None else SnapshotRef(**raw)
        elif field.name == "preferred_successors":
            values[field.name] = tuple(header[field.name])
        else:
            values[field.name] = header[field.name]
    return header["source"], cls(**values)


async def request(host: str, port: int, header: dict[str, Any], timeout: float) -> dict[str, Any]:
    """A one-shot client call (append, describe): send one frame, read one frame back."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        writer.write(encode_frame(header))
        await writer.drain()
        response, _ = await asyncio.wait_for(read_frame(reader), timeout)
        return response
    finally:
        writer.close()
