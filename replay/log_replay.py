"""Replaying metadata files: snapshots and log segments, and the image that answers any offset.

Batches are loaded whole (`replay.loader` publishes where Kafka does); the image at offset N is the last one
published at or before N (`replay.visibility`), and what the files do not say is refused (ReplayError).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
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
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.gc_pause import paused_collector
from kraftlake.replay.image import EMPTY_IMAGE, MetadataImage
from kraftlake.replay.loader import BatchLoader, Manifest, Publisher, TransactionState
from kraftlake.replay.visibility import BatchPublishes, Known, OffsetNotKnown, image_offset

# A directory or files holding a bootstrap checkpoint (ending at offset 0) and no log batch: Kafka's loader
# publishes the checkpoint's image only with the end of the log's first batch (`replay.loader.load_snapshot`).
BOOTSTRAP_ONLY = ("no image is published yet: a bootstrap checkpoint's image is published with the end of the "
                  "log's first batch, and no log batch follows it")


@dataclass(frozen=True)
class ReplayResult:
    """The image that answers offset `asked` (its provenance: where it was published), the transaction
    state after the last batch read, and what was read."""

    image: MetadataImage
    asked: int
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
    if log_start is None and usable[-1][0].end_offset == 0:
        raise ReplayError(BOOTSTRAP_ONLY, source=str(path))
    first = usable[-1] if log_start is None else usable[0]
    return [Source(first[1], first[0]), *(Source(segment, None) for segment in segments)]


def replay_sources(
    sources: Iterable[Source],
    to_offset: int | None = None,
    publish: Publisher | None = None,
    image: MetadataImage = EMPTY_IMAGE,
    named: str | None = None,
) -> ReplayResult:
    """The image that answers `to_offset` (None: the end of the files), replaying `sources` in order.
    ReplayError when no published image answers it (before the first, past the end), naming `named` (the path
    asked for; None: the first source)."""
    sources = list(sources)
    if named is None and sources:
        named = str(sources[0].path)
    with paused_collector():
        return _Replay(sources, to_offset, publish, image, named).run()


class _Replay:
    """One replay: it notes the publishes of the batch holding the offset asked, for `replay.visibility`."""

    def __init__(self, sources: list[Source], to_offset: int | None, publish: Publisher | None,
                 image: MetadataImage, named: str | None) -> None:
        self.sources = sources
        self.named = named
        self.to_offset = to_offset
        self.forward = publish
        self.loader = BatchLoader(self._published, image)
        start = self.loader.published
        self.first_image = None if start is None else start.provenance.offset
        self.answer = start  # the last image published at or before the offset asked
        self.in_batch: list[int] = []  # offsets published while the current batch loads
        self.holding: BatchPublishes | None = None  # the batch holding the offset asked
        self.batches = self.records = 0

    def _published(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        offset = image.provenance.offset
        if self.first_image is None:
            self.first_image = offset
        if self.to_offset is None or offset <= self.to_offset:
            self.answer = image
        self.in_batch.append(offset)
        if self.forward is not None:
            self.forward(delta, image, manifest)

    def _done(self) -> bool:
        """Past the offset asked, with a first image found (it names the known range in a refusal)."""
        return self.to_offset is not None and self.loader.last_offset >= self.to_offset and \
            self.first_image is not None

    def run(self) -> ReplayResult:
        reader = LogReader()
        for source in self.sources:
            if source.snapshot is not None:
                self._load_snapshot(source)
                continue
            for batch in reader.batches(source.path):
                if batch.last_offset <= self.loader.last_offset:
                    continue
                if self._done():
                    break
                if batch.base_offset != self.loader.last_offset + 1:
                    raise HeaderCheckError(
                        f"gap in the log: offset {self.loader.last_offset + 1} comes next", source=str(source.path),
                        position=batch.position, offset=batch.base_offset,
                    )
                self._load(batch, str(source.path))
        return self._result()

    def _load_snapshot(self, source: Source) -> None:
        assert source.snapshot is not None
        end = source.snapshot.end_offset - 1
        if self.to_offset is not None and end > self.to_offset:
            raise ReplayError(f"offset {self.to_offset} is before the history these files hold (from the snapshot "
                              f"at offset {end})", source=str(source.path))
        before = self.loader.published
        self.in_batch = []
        self.loader.load_snapshot(read_snapshot(source.path, source.snapshot), source.snapshot, str(source.path))
        self._note(end, end, before)

    def _load(self, batch: RecordBatch, source: str) -> None:
        before = self.loader.published
        self.in_batch = []
        self.loader.load_commit(batch, source)
        self.batches += 1
        self.records += len(batch.records)
        self._note(batch.base_offset, batch.last_offset, before)

    def _note(self, base: int, last: int, before: MetadataImage | None) -> None:
        if self.to_offset is None or base <= self.to_offset <= last:
            in_force = None if before is None else before.provenance.offset
            self.holding = BatchPublishes(base, last, tuple(self.in_batch), in_force)

    def _result(self) -> ReplayResult:
        loader = self.loader
        asked = loader.last_offset if self.to_offset is None else self.to_offset
        last_image = None if loader.published is None else loader.published.provenance.offset
        if self.first_image is None and loader.last_offset < 0 and any(s.snapshot is not None for s in self.sources):
            asking = "" if self.to_offset is None else f"offset {self.to_offset}: "
            raise ReplayError(asking + BOOTSTRAP_ONLY, source=self.named)
        known = Known(self.first_image, loader.last_offset, last_image)
        try:
            answered = image_offset(asked, self.holding, known)
        except OffsetNotKnown as error:
            raise ReplayError(str(error), source=self.named) from None
        assert self.answer is not None and self.answer.provenance.offset == answered
        return ReplayResult(self.answer, asked, loader.transaction, self.batches, self.records)


def replay_paths(paths: Iterable[Path], to_offset: int | None = None) -> ReplayResult:
    """`kraftlake replay PATH...`: a refusal names the first path as given (a directory, not a file in it)."""
    paths = list(paths)
    return replay_sources(resolve_sources(paths, to_offset), to_offset, named=str(paths[0]) if paths else None)
