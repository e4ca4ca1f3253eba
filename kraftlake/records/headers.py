"""Checks on the batch header fields no CRC covers: baseOffset and partitionLeaderEpoch.

The leader assigns both after the CRC is computed, so a flipped bit there decodes as a valid batch; a reader
has to check them against what surrounds the batch, as Kafka's log recovery does. The metadata log is never
compacted, so each batch starts right after the one before it; leader epochs never decrease, and where the
directory has a `leader-epoch-checkpoint` each batch carries the epoch that file gives its offset.
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from kraftlake.records.batch import RecordBatch
from kraftlake.records.control_types import SnapshotFooterRecord, SnapshotHeaderRecord
from kraftlake.records.errors import RecordFormatError

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class HeaderCheckError(RecordFormatError):
    """A batch whose offset or leader epoch contradicts the batch before it, its file's name, or the
    directory's leader-epoch-checkpoint."""


@dataclass(frozen=True)
class EpochStart:
    """One line of leader-epoch-checkpoint: the first offset written in `epoch`."""

    epoch: int
    start_offset: int


@dataclass(frozen=True)
class LeaderEpochs:
    """A directory's leader-epoch-checkpoint: which epoch each offset was written in."""

    starts: tuple[EpochStart, ...]
    source: str

    def epoch_at(self, offset: int) -> int | None:
        """The epoch of `offset`, or None when it precedes every entry (history truncated away)."""
        return self.range_at(offset)[2]

    def range_at(self, offset: int) -> tuple[int, int, int | None]:
        """The offsets [first, end) that share `offset`'s epoch, and that epoch (as `epoch_at`)."""
        index = bisect_right(self.starts, offset, key=lambda start: start.start_offset)
        first = self.starts[index - 1].start_offset if index else -1
        end = self.starts[index].start_offset if index < len(self.starts) else sys.maxsize
        return first, end, self.starts[index - 1].epoch if index else None


def read_leader_epochs(directory: Path) -> LeaderEpochs | None:
    """The directory's leader-epoch-checkpoint (version line, count line, `epoch startOffset` lines), if any."""
    path = directory / LEADER_EPOCH_CHECKPOINT
    if not path.is_file():
        return None
    try:
        lines = path.read_bytes().decode("ascii").split("\n")
        version, count = int(lines[0]), int(lines[1])
        starts = tuple(EpochStart(*map(int, line.split())) for line in lines[2 : 2 + count])
    except (IndexError, ValueError, TypeError):
        raise HeaderCheckError("not a leader-epoch-checkpoint (version, count, then epoch-offset lines)",
                               source=str(path)) from None
    if version != 0 or len(starts) != count:
        raise HeaderCheckError(f"version {version} with {len(starts)} of {count} entries: not a version 0 "
                               "leader-epoch-checkpoint", source=str(path))
    if any(b.epoch <= a.epoch or b.start_offset < a.start_offset for a, b in pairwise(starts)):
        raise HeaderCheckError("epochs or start offsets decrease", source=str(path))
    return LeaderEpochs(starts, str(path))


def epoch_regression(previous_epoch: int, epoch: int) -> str | None:
    """Why a batch of `epoch` cannot follow one of `previous_epoch`, or None when it can."""
    if epoch < previous_epoch:
        return f"leader epoch {epoch} after epoch {previous_epoch}: epochs never decrease"
    return None


def _error(reason: str, batch: RecordBatch, source: str) -> HeaderCheckError:
    return HeaderCheckError(reason, source=source, position=batch.position, offset=batch.base_offset)


class LogChecker:
    """Follows a log's batches in offset order, across segments, and rejects an uncovered header field that
    contradicts them. Readers feed it every batch they read (`check`) and every segment they open."""

    def __init__(self, epochs: LeaderEpochs | None = None) -> None:
        self.epochs = epochs
        self.next_offset: int | None = None
        self.epoch = -1
        self._epoch_range: tuple[int, int, int | None] = (0, 0, None)  # the last epochs.range_at looked up

    def start_segment(self, base_offset: int | None, source: str) -> None:
        """A new segment begins; its name says its first offset (None: a file named otherwise)."""
        if base_offset is None:
            return
        if self.next_offset is not None and base_offset != self.next_offset:
            raise HeaderCheckError(
                f"the segment starts at offset {base_offset}, the previous one ended at {self.next_offset - 1}",
                source=source, position=0, offset=base_offset,
            )
        self.next_offset = base_offset

    def check(self, batch: RecordBatch, source: str) -> None:
        base, epoch = batch.base_offset, batch.partition_leader_epoch
        if base != self.next_offset and self.next_offset is not None:
            raise _error(f"base offset {base} where offset {self.next_offset} comes next "
                         "(the metadata log is contiguous)", batch, source)
        if epoch != self.epoch and (reason := epoch_regression(self.epoch, epoch)) is not None:
            raise _error(reason, batch, source)
        if self.epochs is not None:
            first, end, expected = self._epoch_range
            if not first <= base < end:
                first, end, expected = self._epoch_range = self.epochs.range_at(base)
            if expected not in (None, epoch):
                raise _error(f"leader epoch {epoch}, but {self.epochs.source} gives epoch {expected} "
                             "for this offset", batch, source)
        self.next_offset = batch.last_offset + 1
        self.epoch = epoch


class SnapshotChecker:
    """A snapshot file's batches against its id: offsets from 0 without a gap, every batch in the id's epoch,
    and when `framed`, a SnapshotHeader batch first and a SnapshotFooter batch last."""

    def __init__(
        self, epoch: int, source: str, *, framed: bool = True, epochs: LeaderEpochs | None = None, end_offset: int = 0
    ) -> None:
        self.epoch = epoch
        self.source = source
        self.framed = framed
        self.next_offset = 0
        self.last: RecordBatch | None = None
        if epochs is not None and end_offset > 0:
            expected = epochs.epoch_at(end_offset - 1)
            if expected not in (None, epoch):
                raise HeaderCheckError(f"the file name says epoch {epoch}, {epochs.source} gives epoch {expected} "
                                       f"for offset {end_offset - 1}", source=source, offset=end_offset - 1)

    def check(self, batch: RecordBatch) -> None:
        if batch.base_offset != self.next_offset:
            raise _error(f"base offset {batch.base_offset} where offset {self.next_offset} comes next "
                         "(snapshot offsets run from 0)", batch, self.source)
        if batch.partition_leader_epoch != self.epoch:
            raise _error(f"leader epoch {batch.partition_leader_epoch} in a snapshot of epoch {self.epoch}",
                         batch, self.source)
        if self.framed and self.last is None and not _opens_with(batch, SnapshotHeaderRecord):
            raise _error("the first batch is not a SnapshotHeader control batch", batch, self.source)
        self.next_offset = batch.last_offset + 1
        self.last = batch

    def finish(self) -> None:
        if not self.framed:
            return
        if self.last is None:
            raise HeaderCheckError("an empty snapshot: no SnapshotHeader", source=self.source, position=0)
        if not _ends_with(self.last, SnapshotFooterRecord):
            raise _error("the last batch is not a SnapshotFooter control batch", self.last, self.source)


def _opens_with(batch: RecordBatch, kind: type) -> bool:
    """Whether `batch` is a control batch whose first record is a `kind` (Kafka 3.9 adds KRaftVersion and
    Voters records after the SnapshotHeader, in the same batch)."""
    return batch.is_control and bool(batch.records) and isinstance(batch.records[0].message, kind)


def _ends_with(batch: RecordBatch, kind: type) -> bool:
    return batch.is_control and bool(batch.records) and isinstance(batch.records[-1].message, kind)
