"""A real cluster's `__cluster_metadata-0` directory into the metadata topic, exactly once by offset.

Messages are those the controllers' publisher writes (`kraftlake.records.topic`), through the same idempotent producer
session. Where to start is read from the topic itself, so a rerun (or a rerun on a longer copy of the same
log) publishes only what the topic lacks:

- the topic's last message is a log batch ending at offset L: the directory's log from L + 1, after
  checking that the directory holds the same batch there (another cluster's log is refused);
- it is the footer of a snapshot ending at E: the log from E;
- it is a snapshot cut short (an earlier run stopped half-way): that snapshot again, whole, then the log;
- the topic lacks offsets the directory's log no longer holds (the log starts past them, or there is no log):
  the newest usable snapshot first (one the log continues from), then the log from its end, as Kafka's
  loader loads a snapshot and then the log.

Every file is read through `kraftlake.records` and fully checked before anything of it is produced; a corrupt or
truncated batch stops the run with the file and offset named, after the batches before it and nothing past it.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from kraftlake.bridge.publisher import (
    ProducerSession,
    PublisherConfig,
    PublishError,
    TopicTail,
    ensure_topic,
    read_tail,
)
from kraftlake.records import MetadataLogDir, RecordBatch, SnapshotId, read_batches
from kraftlake.records.batch import read_header
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.files import metadata_log_dir, segment_base_offset
from kraftlake.records.topic import encode_snapshot_key, ends_snapshot, starts_snapshot

FLUSH_EVERY = 1_000  # batches produced between checks that the broker acknowledged them


class LogDirPublishError(Exception):
    """The directory cannot go into the topic as it is: the message names the file, offset or topic."""


@dataclass(frozen=True)
class PublishResult:
    snapshot: SnapshotId | None  # the snapshot published first, if any
    first_offset: int | None  # the log batches published, first and last offset (None: none)
    last_offset: int | None
    messages: int


def publish_log_dir(directory: Path, config: PublisherConfig) -> PublishResult:
    """Publish what the topic lacks of `directory`'s metadata log (see the module docstring)."""
    log_dir = metadata_log_dir(directory)  # refuses an unrelated or empty directory before Kafka is asked
    ensure_topic(config)
    tail = read_tail(config)
    segments = log_dir.segments()
    log_start = segment_base_offset(segments[0]) if segments else None
    snapshot = _snapshot_to_publish(log_dir, tail, log_start)
    session = ProducerSession(config)
    try:
        produced = 0
        start = tail.next_offset
        if snapshot is not None:
            produced += _produce_snapshot(session, snapshot[0], snapshot[1])
            start = snapshot[0].end_offset
        elif tail.last_batch is not None:
            _check_same_log(segments, tail, config.topic)
        first = last = None
        for raw, batch in _log_from(segments, start):
            session.produce(batch.base_offset, batch.last_offset, raw)
            first = batch.base_offset if first is None else first
            last = batch.last_offset
            produced += 1
            if produced % FLUSH_EVERY == 0:
                session.flush()
        _drain(session)
    except (RecordFormatError, LogDirPublishError):
        with suppress(PublishError):
            _drain(session)  # what came before the bad batch goes out whole; a rerun continues from there
        raise
    finally:
        session.close()
    return PublishResult(None if snapshot is None else snapshot[0], first, last, produced)


def _snapshot_to_publish(
    log_dir: MetadataLogDir, tail: TopicTail, log_start: int | None
) -> tuple[SnapshotId, Path] | None:
    """The snapshot that must go first, or None when the log continues the topic as it is."""
    if tail.cut_snapshot is None and log_start is not None and log_start <= tail.next_offset:
        return None
    usable = [
        (snapshot, path) for snapshot, path in log_dir.snapshots()
        if (log_start is None or snapshot.end_offset >= log_start)
        and snapshot.end_offset >= (tail.next_offset if tail.cut_snapshot is None else tail.cut_snapshot.end_offset)
    ]
    if usable:
        newest = usable[-1]
        needed = tail.cut_snapshot is not None or newest[0].end_offset > tail.next_offset
        return newest if needed else None
    if log_start is None and tail.cut_snapshot is None and any(
        snapshot.end_offset <= tail.next_offset for snapshot, _ in log_dir.snapshots()
    ):
        return None  # only snapshots the topic already covers: nothing new
    where = "has no log" if log_start is None else f"holds the log from offset {log_start}"
    wanted = "the snapshot it stopped inside" if tail.cut_snapshot else f"offset {tail.next_offset}"
    raise LogDirPublishError(
        f"{log_dir.path} {where} and no snapshot the log continues from reaches {wanted}: the topic cannot be "
        "continued without a gap"
    )


def _produce_snapshot(session: ProducerSession, snapshot: SnapshotId, path: Path) -> int:
    """Every batch of a snapshot file, checked whole before the first one is produced."""
    batches = list(read_batches(path))
    if not batches or not starts_snapshot(batches[0]) or not ends_snapshot(batches[-1]):
        raise LogDirPublishError(f"{path}: not a whole snapshot (no SnapshotHeaderRecord or SnapshotFooterRecord)")
    key_offset = snapshot.end_offset - 1
    with _mapped(path) as mapped:
        for batch in batches:
            raw = bytes(mapped[batch.position : batch.position + batch.size_in_bytes])
            session.produce(key_offset, key_offset, raw, key=encode_snapshot_key(snapshot))
    session.flush()
    return len(batches)


def _log_from(segments: list[Path], start: int) -> Iterator[tuple[bytes, RecordBatch]]:
    """(bytes, batch) of every log batch from offset `start` on; a gap or a batch across `start` is an error."""
    expected: int | None = None
    for segment in segments:
        base = segment_base_offset(segment) or 0
        if expected is not None and base != expected:
            raise LogDirPublishError(
                f"{segment}: the segment starts at offset {base}, the log before it ends at {expected - 1}"
            )
        with _mapped(segment) as mapped:
            for batch in read_batches(segment):
                if expected is not None and batch.base_offset != expected:
                    raise RecordFormatError(
                        f"the batch starts at offset {batch.base_offset}, expected {expected}",
                        source=str(segment), position=batch.position, offset=batch.base_offset,
                    )
                expected = batch.last_offset + 1
                if batch.last_offset < start:
                    continue
                if batch.base_offset < start:
                    raise LogDirPublishError(
                        f"{segment}: the batch at offset {batch.base_offset} runs past offset {start - 1}, where the "
                        "topic (or the snapshot published first) ends: not the same log"
                    )
                yield bytes(mapped[batch.position : batch.position + batch.size_in_bytes]), batch


def _check_same_log(segments: list[Path], tail: TopicTail, topic: str) -> None:
    """The topic's last batch must be the directory's batch at that offset, byte for byte, when it has it."""
    assert tail.last_batch is not None
    header = read_header(tail.last_batch, 0, topic, verify_crc=False)
    for segment in reversed(segments):
        if (segment_base_offset(segment) or 0) > header.base_offset:
            continue
        with _mapped(segment) as mapped:
            for batch in read_batches(segment):
                if batch.base_offset == header.base_offset:
                    if bytes(mapped[batch.position : batch.position + batch.size_in_bytes]) != tail.last_batch:
                        raise LogDirPublishError(
                            f"topic {topic} holds another batch at offset {batch.base_offset} than {segment}: "
                            "it holds another cluster's log"
                        )
                    return
        return


def _drain(session: ProducerSession) -> None:
    while not session.caught_up():
        session.flush()
    session.flush()


@contextmanager
def _mapped(path: Path) -> Iterator[mmap.mmap | bytes]:
    with path.open("rb") as handle:
        if path.stat().st_size == 0:
            yield b""
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            yield mapped

