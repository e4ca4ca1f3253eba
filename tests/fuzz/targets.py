"""One fuzz target per reader of untrusted bytes. Each takes the fuzzer's bytes and feeds them to the reader
as real input would reach it (a message value, a file in a metadata directory, a topic message...).

The invariant every target shares (`check`): the reader decodes the bytes or raises the project's own error
(RecordFormatError, ReplayError) naming where the bad bytes are; any other exception is a finding.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.records import compression, framing, rpc
from kraftlake.records.batch import RecordBatch, decode_batch, decode_batches, encode_batch, make_batch
from kraftlake.records.control_types import CONTROL_VALUE_VERSION
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.files import SnapshotId, read_snapshot
from kraftlake.records.headers import LEADER_EPOCH_CHECKPOINT
from kraftlake.records.json_form import message_to_json
from kraftlake.records.rpc_frames import decode_response
from kraftlake.records.topic import SNAPSHOT_KEY, decode_key, ends_snapshot, snapshot_of, starts_snapshot
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.loader import BatchLoader
from kraftlake.replay.log_replay import replay_paths

EXPECTED_ERRORS = (RecordFormatError, ReplayError)
SEGMENT_MARK = b"\n--segment--\n"  # log_dir inputs: leader-epoch-checkpoint text, this mark, segment bytes
SEGMENT_NAME = "00000000000000000000.log"
RPC_APIS = (rpc.FETCH, rpc.FETCH_SNAPSHOT, rpc.API_VERSIONS, rpc.SASL_HANDSHAKE, rpc.SASL_AUTHENTICATE)
ENDPOINT = "controller-1:9093"  # what the follow client names a response by: its bytes came off a socket


class UnlocatedError(AssertionError):
    """The reader raised its own error but did not say where the bad bytes are."""


def check(error: Exception) -> None:
    """Raise UnlocatedError unless `error` names a byte position or an offset. The one exception is a
    leader-epoch-checkpoint that does not parse: a text file, named whole."""
    if isinstance(error, RecordFormatError):
        located = error.position is not None or error.offset is not None
        located = located or (error.source or "").endswith(LEADER_EPOCH_CHECKPOINT)
    else:
        assert isinstance(error, ReplayError)
        located = error.offset is not None
    if not located:
        raise UnlocatedError(f"{type(error).__name__} without a location: {error}")


def batch(data: bytes) -> None:
    """A buffer of batches (a segment's bytes) and a single batch (a topic message's value). The CRC-checked
    read is the real path; the unchecked one lets mutations reach the records, which no mutation that keeps
    a CRC-32C valid would (a fuzzer cannot recompute it)."""
    try:
        for _ in decode_batches(data, "fuzz"):
            pass
    finally:
        for _ in decode_batches(data, "fuzz", verify_crc=False):
            pass
    decode_batch(data, "fuzz")


def metadata_value(data: bytes) -> None:
    """A record value: byte 0 even, a metadata record (frame, apiKey, version, body) follows; odd, a control
    record's 4-byte key and its value."""
    if not data:
        return
    if data[0] & 1:
        message, version = framing.decode_control(data[1:5], data[5:]), CONTROL_VALUE_VERSION
    else:
        message, version = framing.decode_metadata_value(data[1:])
    json.dumps(message_to_json(message, version))  # what `kraftlake dump` prints of it


def record_error(error: RecordFormatError) -> RecordFormatError:
    """Record-level errors carry no location until the batch layer adds it: locate them at byte 0."""
    return error.located(position=0)


def compressed(data: bytes) -> None:
    """A compressed records section: the first byte picks the codec (attributes & 7)."""
    if data:
        compression.decompress(data[0] % 8, data[1:])


def topic_message(data: bytes) -> None:
    """A metadata topic message: byte 0 is the key's length (255: no key), then the key, then the value."""
    if not data:
        return
    key_length = data[0]
    key = None if key_length == 255 else data[1 : 1 + key_length]
    value = data[1 + (key_length if key is not None else 0) :]
    snapshot = snapshot_of(key)
    found = decode_batch(value, "fuzz-topic")
    if snapshot is None:
        try:
            decode_key(key, "fuzz-topic")
        except RecordFormatError as error:  # a key alone has no offset: its consumer names the batch's
            raise error.located(offset=found.base_offset) from None
    starts_snapshot(found)
    ends_snapshot(found)


def log_dir(data: bytes) -> None:
    """A `__cluster_metadata-0` directory: its leader-epoch-checkpoint and a segment, replayed (as `kraftlake
    replay DIR` does: the directory listing, the header checks across batches, the loader)."""
    epochs, mark, segment = data.partition(SEGMENT_MARK)
    if not mark:
        epochs, segment = b"", data
    directory = _scratch("log_dir")
    checkpoint = directory / LEADER_EPOCH_CHECKPOINT
    if epochs:
        checkpoint.write_bytes(epochs)
    else:
        checkpoint.unlink(missing_ok=True)
    (directory / SEGMENT_NAME).write_bytes(segment)
    replay_paths([directory])


def snapshot_file(data: bytes) -> None:
    """A snapshot file: the first 12 bytes are its id (as a snapshot's topic key), the rest its bytes; it is
    read with its header checks and loaded into an empty image."""
    if len(data) < SNAPSHOT_KEY.size:
        return
    end_offset, epoch = SNAPSHOT_KEY.unpack_from(data)
    if end_offset < 0 or epoch < 0:
        return  # not a file name (20 and 10 digits)
    snapshot = SnapshotId(end_offset, epoch)
    path = _scratch("snapshot_file") / snapshot.file_name()
    path.write_bytes(data[SNAPSHOT_KEY.size :])
    try:
        BatchLoader().load_snapshot(read_snapshot(path), snapshot, str(path))
    finally:
        path.unlink()


def replay(data: bytes) -> None:
    """Decoded records that may not apply: batches (CRCs not checked, so mutations reach the loader) replayed
    as a log, or as a snapshot when the first byte is odd; then the image as `kraftlake replay --json` prints
    it."""
    if not data:
        return
    batches: list[RecordBatch] = list(decode_batches(data[1:], "fuzz-replay", verify_crc=False))
    loader = BatchLoader()
    if data[0] & 1:
        loader.load_snapshot(batches, SnapshotId(batches[-1].last_offset + 1 if batches else 0, 0), "fuzz-replay")
    else:
        for found in batches:
            loader.load_batch(found, "fuzz-replay")
        loader.flush()
    canonical_json(loader.image)


RECORD_ENTRY = struct.Struct(">HB")  # replay_records inputs: value length, flags, then the value
CONTROL_ENTRY = 0x01  # the value is a control record: its 4-byte key, then its value
ENDS_BATCH = 0x02  # the record is the last of its batch


def replay_records(data: bytes) -> None:
    """Records that decode but may not apply, built into batches so that a mutation changes what a record
    says rather than how it is framed (the `replay` target's mutations mostly break the framing): byte 0 odd
    loads them as a snapshot, then entries of (length, flags, record value) follow. Entries that do not
    decode are skipped: decoding is the other targets' concern."""
    if not data:
        return
    batches: list[RecordBatch] = []
    pending: list[Any] = []
    control = False
    for message, flags in _entries(data[1:]):
        if pending and (flags & CONTROL_ENTRY) != control:
            batches.append(_batch(batches, pending, control))
            pending = []
        control = bool(flags & CONTROL_ENTRY)
        pending.append(message)
        if flags & ENDS_BATCH:
            batches.append(_batch(batches, pending, control))
            pending = []
    if pending:
        batches.append(_batch(batches, pending, control))
    replay(bytes([data[0]]) + b"".join(encode_batch(found) for found in batches))


def _entries(data: bytes) -> Iterator[tuple[Any, int]]:
    pos = 0
    while pos + RECORD_ENTRY.size <= len(data):
        length, flags = RECORD_ENTRY.unpack_from(data, pos)
        value = data[pos + RECORD_ENTRY.size : pos + RECORD_ENTRY.size + length]
        pos += RECORD_ENTRY.size + length
        try:
            if flags & CONTROL_ENTRY:
                yield framing.decode_control(value[:4], value[4:]), flags
            else:
                yield framing.decode_metadata_value(value)[0], flags
        except RecordFormatError:
            continue


def _batch(before: list[RecordBatch], messages: list[Any], control: bool) -> RecordBatch:
    base = before[-1].last_offset + 1 if before else 0
    return make_batch(base, 1, 1_700_000_000_000 + base, messages, control=control)


def rpc_response(data: bytes) -> None:
    """A controller's response to the follow client: byte 0 picks the API, byte 1 the version (among those
    `kraftlake.records.rpc` restates), the rest is the response's bytes without the size prefix; then the record
    batches a Fetch response carries, read as the observer reads them."""
    if len(data) < 2:
        return
    api = RPC_APIS[data[0] % len(RPC_APIS)]
    schema = rpc.RESPONSES[api]
    version = schema.min_version + data[1] % (schema.max_version - schema.min_version + 1)
    _, body = decode_response(api, version, data[2:], ENDPOINT)
    if api == rpc.FETCH:
        for topic in body.responses:
            for partition in topic.partitions:
                for _ in decode_batches(partition.records or b"", ENDPOINT):
                    pass


def endpoint_error(error: RecordFormatError) -> RecordFormatError:
    """A response that does not parse is located by the endpoint and API its message names (the batches it
    carries by their byte position, as any batch)."""
    if error.position is None and error.offset is None and error.source == ENDPOINT:
        return error.located(position=0)
    return error


@dataclass(frozen=True)
class Target:
    name: str
    run: Callable[[bytes], None]
    locate: Callable[[RecordFormatError], RecordFormatError] | None = None


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("batch", batch),
        Target("metadata_value", metadata_value, record_error),
        Target("compressed", compressed, record_error),
        Target("topic_message", topic_message),
        Target("log_dir", log_dir),
        Target("snapshot_file", snapshot_file),
        Target("replay", replay),
        Target("replay_records", replay_records),
        Target("rpc_response", rpc_response, endpoint_error),
    )
}


def run(target: Target, data: bytes) -> None:
    """Run one input; return if it decoded or failed as the invariant allows, else raise (a finding)."""
    try:
        target.run(data)
    except EXPECTED_ERRORS as error:
        if target.locate is not None and isinstance(error, RecordFormatError):
            error = target.locate(error)
        check(error)


@cache
def _scratch(name: str) -> Path:
    """One directory per target and process, rewritten by every input, on tmpfs where there is one (opening a
    file for writing took 150-300 us on this machine's disks, 9 us there). Removed at exit; libFuzzer exits
    without Python's cleanup, so the folders of runs that ended are removed here."""
    memory = Path("/dev/shm")
    root = memory if memory.is_dir() else Path(tempfile.gettempdir())
    for stale in root.glob(f"kraftlake-fuzz-{name}-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(stale, ignore_errors=True)
    path = root / f"kraftlake-fuzz-{name}-{os.getpid()}"
    path.mkdir(exist_ok=True)
    atexit.register(shutil.rmtree, path, True)
    return path
