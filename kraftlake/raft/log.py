"""The replicated log: an in-memory index of RecordBatch v2 batches over a pluggable durable storage.

The Raft core only sees `RaftLog`; durability is the storage's business. `SegmentStorage` writes Kafka's
`__cluster_metadata-0/<base offset>.log` segments and `<end>-<epoch>.checkpoint` snapshots; `SimulatedDisk`
keeps flushed and unflushed writes apart so the simulation can crash a node and lose its unflushed tail.
The whole log is indexed in memory (metadata logs are small and snapshots bound them).
"""

from __future__ import annotations

import bisect
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kraftlake.raft.messages import SnapshotRef
from kraftlake.records import RecordFormatError, scan_batches
from kraftlake.records.files import SnapshotId, segment_base_offset, snapshot_id
from kraftlake.settings import DEFAULT_SEGMENT_BYTES

LOG_DIR_NAME = "__cluster_metadata-0"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One batch of the log: its offsets, its leader epoch and its exact bytes (CRC included)."""

    base_offset: int
    last_offset: int
    epoch: int
    data: bytes

    @property
    def end_offset(self) -> int:
        return self.last_offset + 1


def entry_from_bytes(data: bytes) -> LogEntry:
    """Index a single encoded batch (framing and CRC checked, records not decoded)."""
    headers = list(scan_batches(data, "<fetched batch>"))
    if len(headers) != 1 or headers[0].size_in_bytes != len(data):
        raise RecordFormatError("expected exactly one batch", source="<fetched batch>")
    header = headers[0]
    return LogEntry(header.base_offset, header.last_offset, header.partition_leader_epoch, bytes(data))


@dataclass(frozen=True, slots=True)
class RecoveredLog:
    entries: list[LogEntry]
    snapshot: SnapshotRef | None
    snapshot_data: bytes | None


class LogStorage(Protocol):
    """Where the log's bytes live. `append` may stay volatile until `flush`; the others are durable at once."""

    def recover(self) -> RecoveredLog: ...

    def append(self, entry: LogEntry) -> None: ...

    def flush(self) -> None: ...

    def truncate(self, offset: int) -> None: ...

    def delete_prefix(self, offset: int) -> None: ...

    def save_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None: ...

    def replace_with_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None: ...


class RaftLog:
    """The log as the Raft core sees it: offsets, epochs, divergence lookups, reads, truncation, snapshots."""

    def __init__(self, storage: LogStorage) -> None:
        self.storage = storage
        recovered = storage.recover()
        self.snapshot = recovered.snapshot
        self.snapshot_data = recovered.snapshot_data
        self._entries = _contiguous_log(recovered.entries, self.snapshot_end_offset)
        self.start_offset = self._entries[0].base_offset if self._entries else self.snapshot_end_offset
        self._bases = [entry.base_offset for entry in self._entries]
        self.flushed_end_offset = self.end_offset

    @property
    def end_offset(self) -> int:
        return self._entries[-1].end_offset if self._entries else self.start_offset

    @property
    def snapshot_end_offset(self) -> int:
        """Where the latest snapshot ends (0 without one): the log may still hold the prefix below it."""
        return self.snapshot.end_offset if self.snapshot else 0

    @property
    def last_epoch(self) -> int:
        if self._entries:
            return self._entries[-1].epoch
        return self.snapshot.epoch if self.snapshot else 0

    @property
    def entries(self) -> list[LogEntry]:
        return list(self._entries)

    def append(self, entry: LogEntry) -> None:
        if entry.base_offset != self.end_offset:
            raise ValueError(f"batch at offset {entry.base_offset} does not continue the log at {self.end_offset}")
        if entry.epoch < self.last_epoch:
            raise ValueError(f"batch epoch {entry.epoch} is below the log's last epoch {self.last_epoch}")
        self.storage.append(entry)
        self._entries.append(entry)
        self._bases.append(entry.base_offset)

    def flush(self) -> None:
        if self.flushed_end_offset != self.end_offset:
            self.storage.flush()
            self.flushed_end_offset = self.end_offset

    def truncate_to(self, offset: int) -> int:
        """Drop every batch ending after `offset` (a batch is never split); returns the new end offset."""
        index = bisect.bisect_right(self._bases, offset - 1) if self._entries else 0
        if index > 0 and self._entries[index - 1].end_offset > offset:
            index -= 1
        if index < len(self._entries):
            boundary = self._entries[index].base_offset
            self.storage.truncate(boundary)
            del self._entries[index:]
            del self._bases[index:]
        self.flushed_end_offset = min(self.flushed_end_offset, self.end_offset)
        return self.end_offset

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """Kafka's endOffsetForEpoch: the largest epoch <= `epoch` in the log and the offset where it ends."""
        for index in range(len(self._entries) - 1, -1, -1):
            entry = self._entries[index]
            if entry.epoch <= epoch:
                return entry.epoch, entry.end_offset
        if self.snapshot and self.snapshot.epoch <= epoch:
            return self.snapshot.epoch, self.snapshot.end_offset
        return 0, 0

    def epoch_start_offset(self, epoch: int) -> int:
        """The first offset this log holds in `epoch` (the log start when it holds none)."""
        return next((e.base_offset for e in self._entries if e.epoch == epoch), self.start_offset)

    def epoch_before(self, offset: int) -> int:
        """The epoch of the batch holding `offset - 1` (a snapshot's epoch is that of its last offset)."""
        if offset > self.start_offset:
            return self._entries[bisect.bisect_right(self._bases, offset - 1) - 1].epoch
        return self.snapshot.epoch if self.snapshot and offset == self.snapshot.end_offset else 0

    def is_batch_boundary(self, offset: int) -> bool:
        """Snapshots are only taken at batch boundaries: Kafka never splits a batch across them."""
        if offset in (self.start_offset, self.end_offset):
            return True
        index = bisect.bisect_left(self._bases, offset)
        return index < len(self._bases) and self._bases[index] == offset

    def read(self, from_offset: int, max_bytes: int) -> tuple[bytes, ...]:
        """Whole batches from `from_offset`, at least one when there is one, else at most `max_bytes`."""
        index = bisect.bisect_right(self._bases, from_offset) - 1
        index = max(index, 0)
        out: list[bytes] = []
        size = 0
        for entry in self._entries[index:]:
            if entry.end_offset <= from_offset:
                continue
            if out and size + len(entry.data) > max_bytes:
                break
            out.append(entry.data)
            size += len(entry.data)
        return tuple(out)

    def entries_between(self, start: int, end: int) -> list[LogEntry]:
        """The batches holding offsets in [start, end)."""
        index = max(bisect.bisect_right(self._bases, start) - 1, 0)
        stop = bisect.bisect_left(self._bases, end)
        return [e for e in self._entries[index:stop] if e.end_offset > start]

    def save_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None:
        """Keep a snapshot of [0, end); the log prefix it covers stays until `delete_prefix`."""
        self.storage.save_snapshot(snapshot, data)
        self.snapshot, self.snapshot_data = snapshot, data

    def delete_prefix(self, offset: int) -> int:
        """Forget the batches that end at or below `offset`, never past the latest snapshot (the data must
        stay somewhere); returns the new start offset, always a batch boundary."""
        limit = min(offset, self.snapshot_end_offset)
        if limit <= self.start_offset:
            return self.start_offset
        # the batch holding offset `limit` stays whole
        keep_from = len(self._entries) if limit >= self.end_offset else bisect.bisect_right(self._bases, limit) - 1
        if keep_from == 0:
            return self.start_offset
        new_start = self._entries[keep_from].base_offset if keep_from < len(self._entries) else self.end_offset
        del self._entries[:keep_from]
        del self._bases[:keep_from]
        self.storage.delete_prefix(new_start)
        self.start_offset = new_start
        self.flushed_end_offset = max(self.flushed_end_offset, self.start_offset)
        return new_start

    def install_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None:
        """Replace the whole log by a snapshot fetched from the leader (the follower was below its log start)."""
        self.storage.replace_with_snapshot(snapshot, data)
        self.snapshot, self.snapshot_data = snapshot, data
        self._entries, self._bases = [], []
        self.start_offset = snapshot.end_offset
        self.flushed_end_offset = self.start_offset


def _contiguous_log(entries: list[LogEntry], snapshot_end: int) -> list[LogEntry]:
    """The recovered batches that form one log with the snapshot: a contiguous run that starts at 0 or at a
    batch boundary no later than the snapshot's end, and reaches it. A gap past the snapshot can only follow
    a lost tail, so nothing after it is trustworthy; a run that stops short of the snapshot is useless."""
    kept: list[LogEntry] = []
    for entry in entries:
        if kept and entry.base_offset == kept[-1].end_offset:
            kept.append(entry)
            continue
        if kept and kept[-1].end_offset >= snapshot_end:
            break
        if entry.base_offset > snapshot_end:
            break
        kept = [entry]
    if kept and kept[-1].end_offset < snapshot_end:
        return []
    return kept


class SimulatedDisk:
    """A disk for the simulation: appends are volatile until flushed, so a crash can lose them."""

    def __init__(self) -> None:
        self.durable: list[LogEntry] = []
        self.pending: list[LogEntry] = []
        self.snapshot: SnapshotRef | None = None
        self.snapshot_data: bytes | None = None
        self.flush_count = 0

    def recover(self) -> RecoveredLog:
        return RecoveredLog(list(self.durable), self.snapshot, self.snapshot_data)

    def crash(self, lose_unflushed: bool) -> None:
        """A process crash keeps the page cache (unflushed writes survive); a power loss does not."""
        if not lose_unflushed:
            self.durable.extend(self.pending)
        self.pending = []

    def append(self, entry: LogEntry) -> None:
        self.pending.append(entry)

    def flush(self) -> None:
        self.durable.extend(self.pending)
        self.pending = []
        self.flush_count += 1

    def truncate(self, offset: int) -> None:
        self.durable = [e for e in self.durable if e.base_offset < offset]
        self.pending = [e for e in self.pending if e.base_offset < offset]

    def delete_prefix(self, offset: int) -> None:
        self.durable = [e for e in self.durable if e.end_offset > offset]

    def save_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None:
        self.snapshot, self.snapshot_data = snapshot, data

    def replace_with_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None:
        self.durable, self.pending = [], []
        self.save_snapshot(snapshot, data)


def fsync_directory(path: Path) -> None:
    """Make a create, rename or delete in `path` durable."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


@dataclass(slots=True)
class _Placement:
    """Where a batch sits on disk, so truncation knows which file to cut and where."""

    base_offset: int
    segment: Path
    position: int


class SegmentStorage:
    """Kafka's layout: `__cluster_metadata-0/<20-digit base offset>.log` segments of concatenated batches,
    rolled at `segment_bytes`, plus `<end offset>-<epoch>.checkpoint` snapshots written via `.part` + rename."""

    def __init__(self, data_dir: Path, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> None:
        self.directory = data_dir / LOG_DIR_NAME
        self.directory.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self._placements: list[_Placement] = []
        self._active: Path | None = None
        self._active_fd: int | None = None
        self._active_size = 0
        self._unflushed_segments: set[Path] = set()

    # -- recovery ----------------------------------------------------------------------------------------

    def recover(self) -> RecoveredLog:
        """Read back every segment, cutting a torn or corrupt tail (the unflushed end of a crash)."""
        for leftover in self.directory.glob("*.checkpoint.part"):
            leftover.unlink()
        snapshot, snapshot_data = self._latest_snapshot()
        segments = sorted(
            (p for p in self.directory.iterdir() if segment_base_offset(p) is not None),
            key=lambda p: segment_base_offset(p) or 0,
        )
        entries: list[LogEntry] = []
        for number, segment in enumerate(segments):
            data = segment.read_bytes()
            good_end = 0
            try:
                for header in scan_batches(data, str(segment)):
                    start = header.position
                    good_end = start + header.size_in_bytes
                    entry = LogEntry(
                        header.base_offset, header.last_offset, header.partition_leader_epoch, data[start:good_end]
                    )
                    entries.append(entry)
                    self._placements.append(_Placement(entry.base_offset, segment, start))
            except RecordFormatError:
                with segment.open("r+b") as handle:
                    handle.truncate(good_end)
                    os.fsync(handle.fileno())
                for later in segments[number + 1:]:
                    later.unlink()
                segments = segments[: number + 1]
                break
        if segments:
            self._open_active(segments[-1])
        else:
            start = snapshot.end_offset if snapshot else 0
            self._open_active(self.directory / segment_name(start))
            fsync_directory(self.directory)
        return RecoveredLog(entries, snapshot, snapshot_data)

    def _latest_snapshot(self) -> tuple[SnapshotRef | None, bytes | None]:
        found = sorted(
            (sid, path) for path in self.directory.iterdir() if (sid := snapshot_id(path)) is not None
        )
        if not found:
            return None, None
        sid, path = found[-1]
        return SnapshotRef(sid.end_offset, sid.epoch), path.read_bytes()

    def _open_active(self, path: Path) -> None:
        if self._active_fd is not None:
            os.close(self._active_fd)
        self._active = path
        self._active_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._active_size = os.fstat(self._active_fd).st_size

    # -- writes ------------------------------------------------------------------------------------------

    def append(self, entry: LogEntry) -> None:
        assert self._active is not None and self._active_fd is not None
        if self._active_size >= self.segment_bytes:
            self._roll(entry.base_offset)
        self._placements.append(_Placement(entry.base_offset, self._active, self._active_size))
        os.write(self._active_fd, entry.data)
        self._active_size += len(entry.data)
        self._unflushed_segments.add(self._active)

    def _roll(self, base_offset: int) -> None:
        """Close the full segment durably and start the next one, named by its first offset."""
        assert self._active_fd is not None
        os.fsync(self._active_fd)
        self._unflushed_segments.discard(self._active)
        self._open_active(self.directory / segment_name(base_offset))
        fsync_directory(self.directory)

    def flush(self) -> None:
        if self._active_fd is not None and self._active in self._unflushed_segments:
            os.fsync(self._active_fd)
        self._unflushed_segments.clear()

    def truncate(self, offset: int) -> None:
        cut = next((i for i, p in enumerate(self._placements) if p.base_offset >= offset), None)
        if cut is None:
            return
        first = self._placements[cut]
        later_segments = {p.segment for p in self._placements[cut:]} - {first.segment}
        for segment in later_segments:
            segment.unlink()
        del self._placements[cut:]
        if first.segment != self._active:
            self._open_active(first.segment)
        assert self._active_fd is not None  # _open_active or the segment already open
        os.ftruncate(self._active_fd, first.position)
        os.fsync(self._active_fd)
        self._active_size = first.position
        fsync_directory(self.directory)

    def delete_prefix(self, offset: int) -> None:
        """Delete whole segments below `offset` (Kafka never cuts a segment in place); the active one stays."""
        by_segment: dict[Path, int] = {}
        for placement in self._placements:
            by_segment.setdefault(placement.segment, placement.base_offset)
        segments = sorted(by_segment, key=lambda s: by_segment[s])
        removable: set[Path] = set()
        for current, following in itertools.pairwise(segments):
            if by_segment[following] <= offset and current != self._active:
                removable.add(current)
        for segment in removable:
            segment.unlink()
        self._placements = [p for p in self._placements if p.segment not in removable]
        if removable:
            fsync_directory(self.directory)

    def save_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None:
        name = SnapshotId(snapshot.end_offset, snapshot.epoch).file_name()
        partial = self.directory / f"{name}.part"
        with partial.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        partial.rename(self.directory / name)
        for path in self.directory.iterdir():
            sid = snapshot_id(path)
            if sid is not None and (sid.end_offset, sid.epoch) < (snapshot.end_offset, snapshot.epoch):
                path.unlink()
        fsync_directory(self.directory)

    def replace_with_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None:
        self.save_snapshot(snapshot, data)
        for segment in {p.segment for p in self._placements} | ({self._active} if self._active else set()):
            segment.unlink(missing_ok=True)
        self._placements = []
        self._open_active(self.directory / segment_name(snapshot.end_offset))
        fsync_directory(self.directory)

    def close(self) -> None:
        if self._active_fd is not None:
            os.close(self._active_fd)
            self._active_fd = None
