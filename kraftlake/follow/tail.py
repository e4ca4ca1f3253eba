"""`kraftlake publish DIR --follow`: a live node's `__cluster_metadata-0` directory, tailed as Kafka writes it.

Each `poll()` hands on the whole batches appended since the last one, read with `kraftlake.records`' readers and checks
(framing, CRC, contiguity and epochs across segments: `kraftlake.records.headers.LogChecker`), from the byte where the
last poll stopped, so a poll costs what was appended, not the segment's size:
- a batch still being written at the tail of the newest segment (the file ends inside it) is waited for;
  a segment that ends inside a batch while a newer segment exists is damaged, and stops the tail;
- the next segment is taken when the current one is read to its end and Kafka rolled a new one;
- a segment Kafka deleted after it was read is of no concern; when the next offset is no longer in any segment
  (Kafka's retention deleted it before it was read, or the run starts after that), the newest snapshot the log
  continues from goes first, whole, as `kraftlake publish` does: offsets between the last one read and the
  snapshot are lost, and the warehouse records a snapshot there, as it does for Kafka's own loader;
- a segment shorter than the byte already read (a node that truncated an uncommitted tail) stops the tail:
  the topic may hold batches this log no longer has.

The leader-epoch-checkpoint is not checked against (Kafka rewrites it as epochs begin, after or before the
batches it names): the batches' epochs are still checked never to go back. A node's files may hold a tail that
is not committed yet; a node of a one-controller quorum (or the controller that leads) writes only what it
commits, others may have to truncate: the network observer (`kraftlake follow`) hands on only committed batches.
"""

from __future__ import annotations

import logging
import mmap
import time
from dataclasses import dataclass, field
from pathlib import Path

from kraftlake.follow.client import FollowError
from kraftlake.follow.observer import CommittedBatch, FetchedSnapshot
from kraftlake.follow.status import offsets_behind
from kraftlake.records.batch import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, decode_batch_at, read_header
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.files import MetadataLogDir, SnapshotId, read_snapshot, segment_base_offset
from kraftlake.records.headers import LogChecker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TailConfig:
    directory: MetadataLogDir
    poll_interval_s: float = 0.5  # how long a poll that found nothing new waits before the next


@dataclass
class TailPosition:
    """Where the tail stands, for the periodic log line and the status file."""

    next_offset: int  # the first offset not handed on
    high_watermark: int = -1  # the end of the whole batches on disk (the next offset Kafka will write)
    segment: Path | None = None
    advanced_at: float = field(default_factory=time.time)  # when `next_offset` last moved (the stall rule)
    answered_at: float = field(default_factory=time.time)  # when the directory was last read

    def describe(self) -> str:
        behind = offsets_behind(self)
        lag = "?" if behind is None else behind
        return f"offset {self.next_offset}, end of log {self.high_watermark}, lag {lag}, reading {self.segment}"


@dataclass
class _Cursor:
    segment: Path
    byte: int  # where the next batch starts in `segment`


class DirectoryTail:
    """The follower's source in file mode (the same `poll`/`position`/`close` as `observer.Observer`)."""

    def __init__(self, config: TailConfig, next_offset: int, snapshot_first: bool = False) -> None:
        self.config = config
        self.position = TailPosition(next_offset)
        self.leader_changes = 0  # a directory has no leader to change
        self.reconnects = 0  # nor a connection to open again
        self._snapshot_first = snapshot_first  # the topic ends inside a snapshot: a whole one must come first
        self._cursor: _Cursor | None = None
        self._checker = LogChecker()  # epochs only checked never to go back (see the module docstring)
        self._waiting_for: str | None = None  # what the last poll waited for, logged once

    def close(self) -> None:
        self._cursor = None

    def poll(self) -> list[CommittedBatch | FetchedSnapshot]:
        """What was appended since the last poll; after an empty one, wait `poll_interval_s` first."""
        handed = self._poll()
        self.position.answered_at = time.time()
        if handed:
            self.position.advanced_at = self.position.answered_at
        else:
            time.sleep(self.config.poll_interval_s)
        return handed

    def _poll(self) -> list[CommittedBatch | FetchedSnapshot]:
        segments = self.config.directory.segments()  # listed before reading: a newer one means the read is whole
        if self._snapshot_first or (self._cursor is None and not self._locate(segments)):
            snapshot = self._snapshot(segments)
            return [] if snapshot is None else [snapshot]
        assert self._cursor is not None
        base = segment_base_offset(self._cursor.segment) or 0
        newest = not any((segment_base_offset(s) or 0) > base for s in segments)
        try:
            handed = self._read(self._cursor, newest)
        except FileNotFoundError:  # deleted by retention since it was listed: find the offset again
            self._cursor = None
            return []
        if not handed and self._rolled(segments):
            return self._poll()
        return handed

    # -- the log --------------------------------------------------------------------------------------------

    def _locate(self, segments: list[Path]) -> bool:
        """Point the cursor at the next offset's batch; False when no segment holds it (any more)."""
        wanted = self.position.next_offset
        holding = [s for s in segments if (segment_base_offset(s) or 0) <= wanted]
        if not holding:
            return False
        segment = holding[-1]
        try:
            data = segment.read_bytes()
        except FileNotFoundError:
            return False
        byte = 0
        while byte < len(data) and not _incomplete(data, byte):  # skip what the topic holds: no CRC, no records
            try:
                header = read_header(data, byte, str(segment), verify_crc=False)
            except RecordFormatError as error:
                raise FollowError(str(error)) from None
            if header.last_offset >= wanted:
                if header.base_offset != wanted:
                    raise FollowError(f"{segment}, offset {header.base_offset}: the batch runs past offset "
                                      f"{wanted - 1}, where the topic ends: not the log the topic holds")
                break
            byte += header.size_in_bytes
        else:
            if segment != segments[-1]:
                return False  # the offset was never in this segment: a gap Kafka's retention left
        self._cursor = _Cursor(segment, byte)
        self._checker.next_offset = wanted
        self.position.segment = segment
        log.info("follow: reading %s from byte %d (offset %d)", segment, byte, wanted)
        return True

    def _read(self, cursor: _Cursor, newest: bool) -> list[CommittedBatch | FetchedSnapshot]:
        source = str(cursor.segment)
        with cursor.segment.open("rb") as handle:
            size = handle.seek(0, 2)
            if size < cursor.byte:
                raise FollowError(f"{source}: the segment is {size} bytes, shorter than the {cursor.byte} already "
                                  f"read (offset {self.position.next_offset} next): Kafka truncated its log")
            if size == cursor.byte:
                return []
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return self._batches(data, cursor, newest, source)

    def _batches(
        self, data: mmap.mmap, cursor: _Cursor, newest: bool, source: str
    ) -> list[CommittedBatch | FetchedSnapshot]:
        handed: list[CommittedBatch | FetchedSnapshot] = []
        while cursor.byte < len(data):
            try:
                if _incomplete(data, cursor.byte):
                    if not newest:
                        raise FollowError(f"{source}, byte position {cursor.byte}: the segment ends inside a batch, "
                                          f"and Kafka writes to a newer one (offset {self.position.next_offset} next)")
                    self._wait(f"{source}: the batch at byte {cursor.byte} is still being written")
                    break
                header = read_header(data, cursor.byte, source)
                batch = decode_batch_at(data, header, source)
                self._checker.check(batch, source)
            except (RecordFormatError, FollowError) as error:
                if handed:
                    break  # the batches before it go out first; the next poll stops at it
                raise error if isinstance(error, FollowError) else FollowError(str(error)) from None
            raw = bytes(data[cursor.byte : cursor.byte + header.size_in_bytes])
            handed.append(CommittedBatch(raw, header._replace(position=0)))
            cursor.byte += header.size_in_bytes
            self.position.next_offset = header.last_offset + 1
        self.position.high_watermark = max(self.position.high_watermark, self.position.next_offset)
        if handed:
            self._waiting_for = None
        return handed

    def _rolled(self, segments: list[Path]) -> bool:
        """The current segment is read to its end and Kafka writes to the next one: move on to it."""
        newer = [s for s in segments if segment_base_offset(s) == self.position.next_offset]
        if not newer or self._cursor is None or newer[0] == self._cursor.segment:
            return False
        self._checker.start_segment(self.position.next_offset, str(newer[0]))
        self._cursor = _Cursor(newer[0], 0)
        self.position.segment = newer[0]
        return True

    # -- snapshots ------------------------------------------------------------------------------------------

    def _snapshot(self, segments: list[Path]) -> FetchedSnapshot | None:
        """The newest snapshot the log continues from, past the next offset, read whole and checked."""
        log_start = segment_base_offset(segments[0]) if segments else None
        wanted = self.position.next_offset
        # past it; or at it when the topic ends inside that very snapshot (a directory holding only a snapshot
        # would otherwise hand the one it just handed, again and again)
        least = wanted if self._snapshot_first else wanted + 1
        usable = [
            (snapshot, path) for snapshot, path in self.config.directory.snapshots()
            if snapshot.end_offset >= least and (log_start is None or snapshot.end_offset >= log_start)
        ]
        if not usable:
            where = "no log" if log_start is None else f"the log from offset {log_start}"
            self._wait(f"{self.config.directory.path} holds {where} and no snapshot reaching offset {wanted} yet")
            return None
        snapshot, path = usable[-1]
        try:
            fetched = _read_snapshot(snapshot, path)
        except FileNotFoundError:  # replaced by a newer one since it was listed
            return None
        self._snapshot_first = False
        self._cursor = None
        self._checker = LogChecker()
        self.position.next_offset = snapshot.end_offset
        return fetched

    def _wait(self, why: str) -> None:
        if why != self._waiting_for:
            log.info("follow: %s; waiting", why)
            self._waiting_for = why


def _read_snapshot(snapshot: SnapshotId, path: Path) -> FetchedSnapshot:
    """A snapshot file's batches, checked by `kraftlake.records.files.read_snapshot` before any is handed on."""
    try:
        data = path.read_bytes()
        batches = [CommittedBatch(data[b.position : b.position + b.size_in_bytes], _header(data, b.position, path))
                   for b in read_snapshot(path, snapshot)]
    except RecordFormatError as error:
        raise FollowError(str(error)) from None
    return FetchedSnapshot(snapshot, tuple(batches))


def _header(data: bytes, position: int, path: Path) -> BatchHeader:
    return read_header(data, position, str(path), verify_crc=False)._replace(position=0)


def _incomplete(data: bytes | mmap.mmap, byte: int) -> bool:
    """The file ends before the batch at `byte` does (its length field itself may not be there yet)."""
    if len(data) - byte < LOG_OVERHEAD:
        return True
    length = int.from_bytes(data[byte + 8 : byte + 12], "big", signed=True)
    return length >= HEADER_SIZE - LOG_OVERHEAD and byte + LOG_OVERHEAD + length > len(data)
