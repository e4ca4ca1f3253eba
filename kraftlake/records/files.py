"""Kafka's metadata files: `.log` segments, `O-E.checkpoint` snapshots, `bootstrap.checkpoint`, and the
`__cluster_metadata-0` directory that holds them."""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kraftlake.records.batch import MAGIC, RecordBatch, decode_batches
from kraftlake.records.errors import NotAMetadataLogError
from kraftlake.records.headers import HeaderCheckError, LogChecker, SnapshotChecker, read_leader_epochs

SEGMENT_PATTERN = re.compile(r"^(\d{20})\.log$")
SNAPSHOT_PATTERN = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP_NAME = "bootstrap.checkpoint"
METADATA_PARTITION_DIR = "__cluster_metadata-0"
EXPECTED_DIRECTORY = f"expected a copy of a `{METADATA_PARTITION_DIR}` directory (or the log directory holding it)"
EXPECTED_FILE = "expected a `*.log` segment or a `*.checkpoint` snapshot of a metadata log"
EXPECTED_PATH = f"expected a `*.log` segment, a `*.checkpoint` snapshot or a `{METADATA_PARTITION_DIR}` directory"
_MAGIC_POSITION = 16  # baseOffset, batchLength, partitionLeaderEpoch, then the magic byte


@dataclass(frozen=True, order=True)
class SnapshotId:
    """A snapshot's end offset (exclusive: lastContainedLogOffset + 1) and the epoch of that offset."""

    end_offset: int
    epoch: int

    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}.checkpoint"

    def bridges(self, read_through: int) -> tuple[int, int] | None:
        """The offsets this snapshot bridges after a reader read the log through `read_through` (-1: nothing
        read, so nothing is bridged): from the first one not read to the one before the snapshot's own offset
        (`end_offset - 1`, whose state it holds); None when the log reaches the snapshot. What a warehouse's
        `gaps` row and a follower's status both record."""
        first, last = read_through + 1, self.end_offset - 2
        return (first, last) if read_through >= 0 and first <= last else None


BOOTSTRAP_ID = SnapshotId(0, 0)  # bootstrap.checkpoint: offsets from 0, written before any leader (epoch 0)


def snapshot_id(path: Path) -> SnapshotId | None:
    """The id encoded in a snapshot file name, or None for any other file."""
    match = SNAPSHOT_PATTERN.match(path.name)
    return SnapshotId(int(match.group(1)), int(match.group(2))) if match else None


def checkpoint_id(path: Path) -> SnapshotId | None:
    """The id a checkpoint file is read as: its name's, or offset 0 epoch 0 for bootstrap.checkpoint."""
    return BOOTSTRAP_ID if path.name == BOOTSTRAP_NAME else snapshot_id(path)


def segment_base_offset(path: Path) -> int | None:
    match = SEGMENT_PATTERN.match(path.name)
    return int(match.group(1)) if match else None


def read_batches(path: Path) -> Iterator[RecordBatch]:
    """The batches of one `.log` or `.checkpoint` file, headers checked as its kind calls for (a snapshot
    against its name, a log against its name and leader-epoch-checkpoint). Read a directory's segments through
    one LogReader (or MetadataLogDir.log_batches) so that they are also checked across segments."""
    return read_snapshot(path) if checkpoint_id(path) is not None else LogReader().batches(path)


def decode_file(path: Path) -> Iterator[RecordBatch]:
    """The batches of a file, framing and CRCs checked but not the header fields no CRC covers; read through
    a memory map (segments reach 1 GiB). A file that is no metadata log at all (not named as Kafka names them,
    and empty or not starting with a RecordBatch v2) is refused as such rather than read as an empty log or
    reported as a corrupt batch."""
    check_metadata_path(path, EXPECTED_FILE)
    with path.open("rb") as handle:
        if path.stat().st_size == 0:
            _refuse_foreign(path, b"")
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            _refuse_foreign(path, mapped)
            view = memoryview(mapped)
            try:
                yield from decode_batches(view, str(path))
            finally:
                view.release()


def _refuse_foreign(path: Path, content: bytes | mmap.mmap) -> None:
    """Raise NotAMetadataLogError for a file named otherwise than Kafka names them that is empty or does not
    start with a RecordBatch v2 (a README, meta.properties...): a file so named is read, damage and all."""
    if is_metadata_file_name(path):
        return
    if not content:
        raise NotAMetadataLogError(f"an empty file: {EXPECTED_FILE}", source=str(path), position=0)
    if len(content) <= _MAGIC_POSITION or content[_MAGIC_POSITION] != MAGIC:
        raise NotAMetadataLogError(f"no RecordBatch v2 at its start: {EXPECTED_FILE}", source=str(path), position=0)


def is_metadata_file_name(path: Path) -> bool:
    """Named as Kafka names a metadata log's files: a segment, a snapshot or bootstrap.checkpoint."""
    return checkpoint_id(path) is not None or segment_base_offset(path) is not None


def check_metadata_path(path: Path, expected: str = EXPECTED_PATH) -> None:
    """Refuse a path that does not exist, naming what was expected there."""
    if not path.exists():
        raise NotAMetadataLogError(f"no such file or directory: {expected}", source=str(path))


def metadata_log_dir(path: Path) -> MetadataLogDir:
    """The metadata log a directory argument names: `path/__cluster_metadata-0` when there is one, else
    `path` itself. Refused when it holds no segment and no snapshot, so that an unrelated or empty directory
    is not replayed (or published, or ingested) as an empty log."""
    check_metadata_path(path, EXPECTED_DIRECTORY)
    if not path.is_dir():
        raise NotAMetadataLogError(f"not a directory: {EXPECTED_DIRECTORY}", source=str(path))
    partition = path / METADATA_PARTITION_DIR
    log_dir = MetadataLogDir(partition if partition.is_dir() else path)
    if not log_dir.segments() and not log_dir.snapshots():
        raise NotAMetadataLogError(f"no `*.log` segment or `*.checkpoint` snapshot in this directory: "
                                   f"{EXPECTED_DIRECTORY}", source=str(log_dir.path))
    return log_dir


class LogReader:
    """Reads log files with their headers checked (records.headers): the batches of the files of one directory
    must follow each other, so read them in offset order through one reader."""

    def __init__(self) -> None:
        self._checkers: dict[Path, LogChecker] = {}

    def batches(self, path: Path) -> Iterator[RecordBatch]:
        checker = self._checkers.get(path.parent)
        if checker is None:
            checker = self._checkers[path.parent] = LogChecker(read_leader_epochs(path.parent))
        source = str(path)
        checker.start_segment(segment_base_offset(path), source)
        for batch in decode_file(path):
            checker.check(batch, source)
            yield batch


def read_snapshot(path: Path, snapshot: SnapshotId | None = None) -> Iterator[RecordBatch]:
    """The batches of a snapshot file, checked against its id (by default its name's). A missing footer is
    raised once the last batch was read, so a loader that applies a snapshot only after reading all of it
    never applies a bad one."""
    snapshot = snapshot or checkpoint_id(path)
    if snapshot is None:
        raise HeaderCheckError("not a snapshot: the name is not endOffset-epoch.checkpoint", source=str(path))
    checker = SnapshotChecker(snapshot.epoch, str(path), framed=False)
    if path.name != BOOTSTRAP_NAME:  # bootstrap files from other tools (and tests) may lack header and footer
        epochs = read_leader_epochs(path.parent)
        checker = SnapshotChecker(snapshot.epoch, str(path), epochs=epochs, end_offset=snapshot.end_offset)
    for batch in decode_file(path):
        checker.check(batch)
        yield batch
    checker.finish()


@dataclass(frozen=True)
class MetadataLogDir:
    """A `__cluster_metadata-0` directory: its log segments and snapshots, in offset order."""

    path: Path

    def segments(self) -> list[Path]:
        found = [p for p in self.path.iterdir() if segment_base_offset(p) is not None]
        return sorted(found, key=lambda p: segment_base_offset(p) or 0)

    def snapshots(self) -> list[tuple[SnapshotId, Path]]:
        found = [(sid, p) for p in self.path.iterdir() if (sid := snapshot_id(p)) is not None]
        return sorted(found)

    def latest_snapshot(self, end_offset_at_most: int | None = None) -> tuple[SnapshotId, Path] | None:
        eligible = [
            entry for entry in self.snapshots()
            if end_offset_at_most is None or entry[0].end_offset <= end_offset_at_most
        ]
        return eligible[-1] if eligible else None

    def log_batches(self) -> Iterator[RecordBatch]:
        """Every batch of the log, in offset order, headers checked across segments."""
        reader = LogReader()
        for segment in self.segments():
            yield from reader.batches(segment)
