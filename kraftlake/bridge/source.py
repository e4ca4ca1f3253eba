"""What the topic producer needs from a log, as small Protocols: the controller's `MetadataLog` is one (the
arrow points controller -> bridge, never back), and so is any other log that commits batches and says who
leads it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from kraftlake.records import RecordBatch, SnapshotId


class Leadership(Protocol):
    """Who leads the log now (None while an election runs)."""

    @property
    def leader_id(self) -> int | None: ...


class CommitListener(Protocol):
    """The callbacks a log makes: they only wake the producer, which then reads the committed log itself."""

    def handle_commit(self, batches: Sequence[RecordBatch]) -> None: ...

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None: ...

    def handle_leader_change(self, leader: Leadership) -> None: ...


class CommittedLog(Protocol):
    def register(self, listener: CommitListener) -> None:
        """Start delivering callbacks to `listener`."""

    def read_committed(self, start_offset: int) -> Iterator[tuple[int, bytes]]:
        """(base offset, RecordBatch v2 bytes) of committed batches whose base offset >= `start_offset`, in
        order; LookupError when `start_offset` was snapshotted away."""
