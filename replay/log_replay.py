"""Replaying metadata files: snapshots and log segments, up to any offset.

The image at offset N is the state after every record with offset <= N that is visible at N: a batch that
straddles N is cut after N, and a transaction still open at N contributes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from kraftlake.records import RecordBatch
from kraftlake.records.files import (
    LogReader,
    SnapshotId,
    check_metadata_path,
    checkpoint_id,
    metadata_log_dir,
    read_snapshot,
    segment_base_offset,
)
from kraftlake.records.headers import HeaderCheckError
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.gc_pause import paused_collector
from kraftlake.replay.image import EMPTY_IMAGE, MetadataImage
from kraftlake.replay.loader import BatchLoader, Publisher, TransactionState


@dataclass(frozen=True)
class ReplayResult:
    image: MetadataImage
    transaction: TransactionState
    batches: int
    records: int


@dataclass(frozen=True)
class Source:
    """One input of a replay: a snapshot (loaded whole) or a run of log batches."""

    path: Path
    snapshot: SnapshotId | None  # None: a log segment (or bootstrap file) replayed batch by batch


def resolve_sources(paths: Iterable[Path], to_offset: int | None = None) -> list[Source]:
    """Files to replay, in order. A directory means: its latest snapshot ending at or before N+1, then
    its log segments. `bootstrap.checkpoint` is only read when named (the log repeats its contents)."""
    sources: list[Source] = []
    for path in paths:
        if path.is_dir():
            sources.extend(_directory_sources(path, to_offset))
        else:
            check_metadata_path(path)
            sources.append(Source(path, checkpoint_id(path)))
    return sources


def _directory_sources(path: Path, to_offset: int | None) -> list[Source]:
    log_dir = metadata_log_dir(path)
    path = log_dir.path
    latest = log_dir.latest_snapshot(None if to_offset is None else to_offset + 1)
    segments = log_dir.segments()
    first_logged = segment_base_offset(segments[0]) if segments else None
    if latest is None and first_logged:
        raise ReplayError(
            f"the log starts at offset {first_logged} and no snapshot covers the offsets before it",
            source=str(path),
        )
    sources = [Source(latest[1], latest[0])] if latest else []
    # segments that start after N are not read: the replay stops inside an earlier one, so the next would
    # look like a gap to the reader's offset check
    wanted = [s for s in segments if to_offset is None or (segment_base_offset(s) or 0) <= to_offset]
    return sources + [Source(segment, None) for segment in wanted]


def history_sources(path: Path) -> list[Source]:
    """Files that replay a metadata directory from the earliest offset they can: the log alone when it
    starts at 0, else the earliest snapshot the log continues from (or the latest, with no log)."""
    log_dir = metadata_log_dir(path)
    path = log_dir.path
    segments = log_dir.segments()
    log_start = segment_base_offset(segments[0]) if segments else None
    if log_start == 0:
        return [Source(segment, None) for segment in segments]
    snapshots = log_dir.snapshots()
    usable = [entry for entry in snapshots if log_start is None or entry[0].end_offset >= log_start]
    if not usable:
        raise ReplayError(f"no snapshot and no log from offset 0 in {path}: nothing to start from", source=str(path))
    first = usable[-1] if log_start is None else usable[0]
    return [Source(first[1], first[0]), *(Source(segment, None) for segment in segments)]


def cut_batches(batches: Iterable[RecordBatch], start: int, to_offset: int | None) -> Iterator[RecordBatch]:
    """The batches covering offsets [start, to_offset], a straddling batch cut to fit."""
    for batch, _ in _cut_batches(batches, start, to_offset):
        yield batch


def _cut_batches(
    batches: Iterable[RecordBatch], start: int, to_offset: int | None
) -> Iterator[tuple[RecordBatch, bool]]:
    """As `cut_batches`, each with whether it still ends where the original batch ends (batch-aligned)."""
    for batch in batches:
        if batch.last_offset < start:
            continue
        if to_offset is not None and batch.base_offset > to_offset:
            return
        whole = to_offset is None or batch.last_offset <= to_offset
        if batch.base_offset < start or not whole:
            end = batch.last_offset if to_offset is None else min(batch.last_offset, to_offset)
            kept = tuple(r for r in batch.records if start <= r.offset <= end)
            batch = replace(batch, records=kept, last_offset_delta=end - batch.base_offset)
        yield batch, whole


def replay_sources(
    sources: Iterable[Source],
    to_offset: int | None = None,
    publish: Publisher | None = None,
    image: MetadataImage = EMPTY_IMAGE,
) -> ReplayResult:
    """Replay `sources` in order, as one commit (one publish at the end, plus those transactions force)."""
    with paused_collector():
        return _replay_sources(sources, to_offset, BatchLoader(publish, image))


def _replay_sources(sources: Iterable[Source], to_offset: int | None, loader: BatchLoader) -> ReplayResult:
    reader = LogReader()
    batch_count = record_count = 0
    aligned = True
    for source in sources:
        if source.snapshot is not None:
            if to_offset is not None and source.snapshot.end_offset - 1 > to_offset:
                raise ReplayError(
                    f"the snapshot ends at offset {source.snapshot.end_offset - 1}, "
                    f"after the requested offset {to_offset}",
                    source=str(source.path),
                )
            loader.load_snapshot(read_snapshot(source.path, source.snapshot), source.snapshot, str(source.path))
            aligned = True
            continue
        start = loader.last_offset + 1
        for batch, whole in _cut_batches(reader.batches(source.path), start, to_offset):
            if batch.base_offset > loader.last_offset + 1:
                raise HeaderCheckError(
                    f"gap in the log: offset {loader.last_offset + 1} comes next", source=str(source.path),
                    position=batch.position, offset=batch.base_offset,
                )
            loader.load_batch(batch, str(source.path))
            aligned = whole
            batch_count += 1
            record_count += len(batch.records)
    if loader.in_transaction:
        return ReplayResult(loader.visible_image(), loader.transaction, batch_count, record_count)
    loader.flush(aligned)
    return ReplayResult(loader.image, loader.transaction, batch_count, record_count)


def replay_paths(paths: Iterable[Path], to_offset: int | None = None) -> ReplayResult:
    return replay_sources(resolve_sources(list(paths), to_offset), to_offset)
