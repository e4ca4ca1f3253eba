"""Seed inputs for each target, cut from the real Kafka files of ../shared/kafka-samples (plus compressed
re-encodings and a batch of every record kind, which the samples lack), and the regression inputs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path

from kraftlake.records import compression, framing, rpc
from kraftlake.records import metadata_types as mt
from kraftlake.records.batch import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    RecordBatch,
    decode_batch,
    decode_batches,
    encode_batch,
    make_batch,
    scan_batches,
)
from kraftlake.records.control_types import BY_CONTROL_TYPE
from kraftlake.records.rpc_frames import response_header_version
from kraftlake.records.topic import SNAPSHOT_KEY, encode_key
from tests.conftest import SAMPLES
from tests.fuzz.targets import CONTROL_ENTRY, ENDS_BATCH, RECORD_ENTRY, RPC_APIS, SEGMENT_MARK
from tests.replay.builders import rich_records

REGRESSIONS = Path(__file__).parent / "regressions"
LOGS = (
    "Niloufar1171_LDI-POC/__cluster_metadata-0/00000000000000000000.log",
    "rjmfernandes_flink-on-prem/data/__cluster_metadata-0/00000000000000000000.log",
    "Jeong-Rae_KafkaDemo/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log",
)
SNAPSHOTS = (
    "kckoh_xflow/kafka-data/__cluster_metadata-0/00000000000000007605-0000000001.checkpoint",
    "rjmfernandes_flink-on-prem/data/__cluster_metadata-0/00000000000000007752-0000000001.checkpoint",
    "Niloufar1171_LDI-POC/bootstrap.checkpoint",
)
LOG_HEAD_BATCHES = 120  # the bootstrap transaction, registrations, topics: past the NoOp heartbeats


def _read(relative: str) -> bytes:
    return (SAMPLES / relative).read_bytes()


def _raw_batches(raw: bytes, limit: int | None = None) -> list[bytes]:
    """The bytes of each batch of a file, as a message value holds one."""
    return [raw[h.position : h.position + h.size_in_bytes] for h in islice(scan_batches(raw), limit)]


def _distinct_batches(raw: bytes) -> list[bytes]:
    """One batch per shape (control flag, record types), so that 16 000 NoOp heartbeats count once."""
    seen: dict[tuple[bool, tuple[str, ...]], bytes] = {}
    for found, cut in zip(decode_batches(raw), _raw_batches(raw), strict=True):
        shape = (found.is_control, tuple(sorted({type(r.message).__name__ for r in found.records})))
        seen.setdefault(shape, cut)
    return list(seen.values())


def _rich_batches() -> list[RecordBatch]:
    """rich_records as the batches a leader would write them: control records in their own batches."""
    batches = []
    for offset, message in enumerate(rich_records()):
        batches.append(make_batch(offset, 1, 1_700_000_000_000, [message], control=_is_control(message)))
    return batches


def _is_control(message: object) -> bool:
    return hasattr(message, "CONTROL_TYPE")


def _compressed_variants(batches: list[RecordBatch]) -> list[bytes]:
    out = []
    for codec in (compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD):
        for found in batches:
            attributes = (found.attributes & ~COMPRESSION_MASK) | codec
            out.append(encode_batch(_with(found, attributes=attributes)))
    return out


def _with(found: RecordBatch, **changes: int) -> RecordBatch:
    return RecordBatch(**{**{f: getattr(found, f) for f in RecordBatch.__slots__}, **changes})


def _several_records() -> list[RecordBatch]:
    """Sample batches with the most records (compression matters where there is something to compress)."""
    raw = _read(LOGS[1])
    found = sorted(decode_batches(raw), key=lambda b: -len(b.records))
    return [*found[:3], make_batch(0, 1, 0, [m for m in rich_records() if not _is_control(m)])]


def batch_seeds() -> Iterator[bytes]:
    for relative in LOGS + SNAPSHOTS:
        yield from _distinct_batches(_read(relative))
    yield b"".join(_raw_batches(_read(LOGS[2]), 40))
    yield from (encode_batch(b) for b in _rich_batches())
    yield from _compressed_variants(_several_records())


def metadata_value_seeds() -> Iterator[bytes]:
    """Byte 0 even: a metadata record value follows (every type at every version, default fields, and the
    rich records); odd: a control record's 4-byte key then its value."""
    for schema in mt.BY_API_KEY.values():
        for version in range(schema.min_version, schema.max_version + 1):
            yield b"\x00" + framing.encode_metadata_value(schema.cls(), version)
    for found in _rich_batches():
        for record in found.records:
            if found.is_control:
                key, value = framing.encode_control(record.message)
                yield b"\x01" + key + value
            else:
                yield b"\x00" + framing.encode_metadata_value(record.message, record.version)
    for schema in BY_CONTROL_TYPE.values():
        key, value = framing.encode_control(schema.cls())
        yield b"\x01" + key + value


def compressed_seeds() -> Iterator[bytes]:
    for raw in _compressed_variants(_several_records()):
        yield bytes([decode_batch(raw).compression]) + raw[HEADER_SIZE:]


def topic_message_seeds() -> Iterator[bytes]:
    for value in _raw_batches(_read(LOGS[0]), LOG_HEAD_BATCHES):
        yield bytes([8]) + encode_key(int.from_bytes(value[:8], "big", signed=True)) + value
    key = SNAPSHOT_KEY.pack(7605, 1)
    for value in _raw_batches(_read(SNAPSHOTS[0])):
        yield bytes([len(key)]) + key + value
    yield b"\xff" + _raw_batches(_read(LOGS[0]), 1)[0]


def log_dir_seeds() -> Iterator[bytes]:
    for relative in LOGS:
        epochs = (SAMPLES / relative).parent / "leader-epoch-checkpoint"
        head = b"".join(_raw_batches(_read(relative), LOG_HEAD_BATCHES))
        yield epochs.read_bytes() + SEGMENT_MARK + head
        yield head
    yield b"".join(encode_batch(b) for b in _rich_batches())


def snapshot_file_seeds() -> Iterator[bytes]:
    for relative in SNAPSHOTS[:2]:
        end_offset, epoch = map(int, Path(relative).stem.split("-"))
        yield SNAPSHOT_KEY.pack(end_offset, epoch) + _read(relative)
    yield SNAPSHOT_KEY.pack(0, 0) + _read(SNAPSHOTS[2])


def replay_seeds() -> Iterator[bytes]:
    for relative in LOGS:
        yield b"\x00" + b"".join(_raw_batches(_read(relative), LOG_HEAD_BATCHES))
    rich = b"".join(encode_batch(b) for b in _rich_batches())
    yield b"\x00" + rich
    yield b"\x01" + rich
    for relative in SNAPSHOTS[:1]:
        yield b"\x01" + _read(relative)


def replay_records_seeds() -> Iterator[bytes]:
    """The rich records, and the head of each sample log, as replay_records entries (log and snapshot)."""
    rich = b"".join(_entries_of(found) for found in _rich_batches())
    yield b"\x00" + rich
    yield b"\x01" + rich  # a snapshot holds no transaction markers: the logs' heads are seeds as logs only
    for relative in LOGS:
        yield b"\x00" + b"".join(_entries_of(decode_batch(raw)) for raw in _raw_batches(_read(relative), 60))


def _entries_of(found: RecordBatch) -> bytes:
    out = []
    for index, record in enumerate(found.records):
        if found.is_control:
            key, value = framing.encode_control(record.message)
            value = key + value
        else:
            value = framing.encode_metadata_value(record.message, record.version)
        flags = (CONTROL_ENTRY if found.is_control else 0) | (ENDS_BATCH if index == len(found.records) - 1 else 0)
        out.append(RECORD_ENTRY.pack(len(value), flags) + value)
    return b"".join(out)


def rpc_response_seeds() -> Iterator[bytes]:
    """Each API's response at each version restated; Fetch responses carry the head of each sample log."""
    heads = [b"".join(_raw_batches(_read(relative), 20)) for relative in LOGS]
    for index, api in enumerate(RPC_APIS):
        schema = rpc.RESPONSES[api]
        for version in range(schema.min_version, schema.max_version + 1):
            bodies = [fetch_response(records) for records in heads] if api == rpc.FETCH else [RPC_BODIES[api]]
            for body in bodies:
                out = bytearray()
                rpc.RESPONSE_HEADER.codec(response_header_version(api, version))[1](rpc.ResponseHeader(7), out)
                schema.codec(version)[1](body, out)
                yield bytes([index, version - schema.min_version]) + bytes(out)


def fetch_response(records: bytes) -> object:
    partition = rpc.PartitionData(partition_index=0, high_watermark=100, records=records,
                                  current_leader=rpc.LeaderIdAndEpoch(1, 3))
    return rpc.FetchResponse(responses=(rpc.FetchableTopicResponse(topic_id=TOPIC_ID, partitions=(partition,)),),
                             node_endpoints=(rpc.FetchNodeEndpoint(1, "localhost", 9093, None),))


TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
RPC_BODIES: dict[int, object] = {
    rpc.FETCH_SNAPSHOT: rpc.FetchSnapshotResponse(topics=(rpc.SnapshotTopicResponse("__cluster_metadata", (
        rpc.SnapshotPartitionResponse(index=0, snapshot_id=rpc.RequestedSnapshotId(20, 3), size=3,
                                      unaligned_records=b"abc"),)),)),
    rpc.API_VERSIONS: rpc.ApiVersionsResponse(api_keys=(rpc.ApiVersion(1, 4, 18), rpc.ApiVersion(59, 0, 1))),
    rpc.SASL_HANDSHAKE: rpc.SaslHandshakeResponse(mechanisms=("PLAIN", "SCRAM-SHA-512")),
    rpc.SASL_AUTHENTICATE: rpc.SaslAuthenticateResponse(auth_bytes=b"r=abc,s=c2FsdA==,i=4096"),
}


SEEDS: dict[str, Callable[[], Iterator[bytes]]] = {
    "batch": batch_seeds,
    "metadata_value": metadata_value_seeds,
    "compressed": compressed_seeds,
    "topic_message": topic_message_seeds,
    "log_dir": log_dir_seeds,
    "snapshot_file": snapshot_file_seeds,
    "replay": replay_seeds,
    "replay_records": replay_records_seeds,
    "rpc_response": rpc_response_seeds,
}


def seeds(target: str) -> list[bytes]:
    return list(SEEDS[target]())


def regressions(target: str) -> list[Path]:
    """The inputs that once broke `target`, each replayed by the smoke test."""
    folder = REGRESSIONS / target
    return sorted(folder.iterdir()) if folder.is_dir() else []
