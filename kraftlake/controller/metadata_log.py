"""What the controller needs from the Raft log, as a small Protocol, and an in-memory single-node log.

The controller appends as leader and learns everything else through a listener: committed batches in
offset order, snapshot loads, leader changes. The quorum's real client implements the same Protocol (see
`kraftlake.controller.raft_log`); `LocalMetadataLog` lets unit tests decide when batches commit and when
leadership moves, without processes or sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kraftlake.raft.core import NotLeaderError
from kraftlake.records import RecordBatch, SnapshotId, decode_batch, encode_batch, make_batch
from kraftlake.records.control_types import LeaderChangeMessage, Voter


@dataclass(frozen=True)
class LeaderAndEpoch:
    """Who leads the log in `epoch` (None while an election runs)."""

    leader_id: int | None
    epoch: int


class MetadataListener(Protocol):
    """Callbacks from the log. They may arrive on any thread; the controller re-queues them on its own."""

    def handle_commit(self, batches: Sequence[RecordBatch]) -> None:
        """Batches now committed, in offset order, each exactly once (control batches included)."""

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None:
        """The log start moved past what was delivered: the state is the snapshot's data batches."""

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        """Fired for this node only once every batch below its epoch's start has been delivered."""


class MetadataLog(Protocol):
    def register(self, listener: MetadataListener) -> None:
        """Start delivering callbacks to `listener`, from the start of the log (or its snapshot)."""

    def append(self, epoch: int, messages: Sequence[Any], versions: Mapping[type, int], time_ms: int) -> int:
        """Append one batch as leader of `epoch`; returns its base offset. Raises NotLeaderError when this
        node does not lead `epoch` any more. Commitment is reported through `handle_commit`."""

    def end_offset(self) -> int:
        """The next offset the log will assign."""

    def read_committed(self, start_offset: int) -> Iterator[tuple[int, bytes]]:
        """(base offset, RecordBatch v2 bytes) of committed batches whose base offset >= `start_offset`, in
        order. Raises LookupError when `start_offset` is below the log start (snapshotted away)."""


class LocalMetadataLog:
    """A single in-memory log shared by the "nodes" of a test: one leader appends; `commit` makes batches
    committed (all by default, or up to an offset); `elect` moves leadership and drops uncommitted batches
    as a new Raft leader would (it writes a LeaderChangeMessage at the new epoch start)."""

    def __init__(self, auto_commit: bool = True) -> None:
        self.auto_commit = auto_commit
        self._lock = threading.RLock()
        self._batches: list[bytes] = []  # every batch in the log, committed or not
        self._base_offsets: list[int] = []
        self._end_offset = 0
        self._committed_count = 0  # batches [0, n) are committed
        self._leader = LeaderAndEpoch(None, 0)
        self._listeners: list[MetadataListener] = []
        self._delivered: dict[int, int] = {}  # id(listener) -> batches delivered

    @property
    def leader(self) -> LeaderAndEpoch:
        return self._leader

    def register(self, listener: MetadataListener) -> None:
        with self._lock:
            self._listeners.append(listener)
            self._delivered[id(listener)] = 0
            self._deliver()
            if self._leader.leader_id is not None:
                listener.handle_leader_change(self._leader)

    def end_offset(self) -> int:
        with self._lock:
            return self._end_offset

    def append(self, epoch: int, messages: Sequence[Any], versions: Mapping[type, int], time_ms: int) -> int:
        with self._lock:
            if epoch != self._leader.epoch or self._leader.leader_id is None:
                raise NotLeaderError(self._leader.leader_id, self._leader.epoch)
            base = self._end_offset
            self._add(encode_batch(make_batch(base, epoch, time_ms, messages, versions=versions)), base, len(messages))
            if self.auto_commit:
                self._committed_count = len(self._batches)
                self._deliver()
            return base

    def _add(self, raw: bytes, base: int, count: int) -> None:
        self._batches.append(raw)
        self._base_offsets.append(base)
        self._end_offset = base + count

    def commit(self, up_to_offset: int | None = None) -> None:
        """Commit every batch whose last offset is <= `up_to_offset` (default: all of them)."""
        with self._lock:
            count = len(self._batches)
            if up_to_offset is not None:
                count = sum(1 for raw in self._batches if decode_batch(raw).last_offset <= up_to_offset)
            self._committed_count = max(self._committed_count, count)
            self._deliver()

    def elect(self, leader_id: int | None, time_ms: int = 0) -> LeaderAndEpoch:
        """A new epoch led by `leader_id`: uncommitted batches are lost (the new leader never had them)."""
        with self._lock:
            del self._batches[self._committed_count:]
            del self._base_offsets[self._committed_count:]
            self._end_offset = (
                decode_batch(self._batches[-1]).last_offset + 1 if self._batches else 0
            )
            self._leader = LeaderAndEpoch(leader_id, self._leader.epoch + 1)
            if leader_id is not None:
                change = LeaderChangeMessage(
                    version=0, leader_id=leader_id, voters=(Voter(voter_id=leader_id),), granting_voters=()
                )
                base = self._end_offset
                batch = make_batch(base, self._leader.epoch, time_ms, [change], control=True)
                self._add(encode_batch(batch), base, 1)
                self._committed_count = len(self._batches)
            self._deliver()
            for listener in self._listeners:
                listener.handle_leader_change(self._leader)
            return self._leader

    def _deliver(self) -> None:
        for listener in self._listeners:
            start = self._delivered[id(listener)]
            if start < self._committed_count:
                batches = [decode_batch(raw) for raw in self._batches[start:self._committed_count]]
                self._delivered[id(listener)] = self._committed_count
                listener.handle_commit(batches)

    def read_committed(self, start_offset: int) -> Iterator[tuple[int, bytes]]:
        with self._lock:
            committed = list(zip(self._base_offsets[:self._committed_count], self._batches, strict=False))
        for base, raw in committed:
            if base >= start_offset:
                yield base, raw

    def committed_batches(self) -> list[RecordBatch]:
        """Every committed batch, decoded (what a test compares the controller's output with)."""
        with self._lock:
            return [decode_batch(raw) for raw in self._batches[:self._committed_count]]
