"""The quorum as a state machine sees it (KRaft's RaftClient): append records and await their commit,
listen for committed batches, snapshot loads and leader changes, write snapshots.

`RaftClient` is also the real-process driver of the I/O-free core: one asyncio task feeds it inbound
messages, client appends and clock ticks, fsyncs the log after each round of inputs (so concurrent appends
share one fsync), and hands outbound messages to the transport's `send` callable.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, overload

from kraftlake.raft.core import NotLeaderError, RaftConfig, RaftNode, VoterChangeError
from kraftlake.raft.election_state import FileElectionStore
from kraftlake.raft.log import LogEntry, RaftLog, SegmentStorage
from kraftlake.raft.messages import Envelope, RaftMessage, SnapshotRef
from kraftlake.raft.roles import Leader, Role
from kraftlake.raft.snapshots import snapshot_data_batches
from kraftlake.records import RecordBatch, decode_batch
from kraftlake.settings import DEFAULT_SEGMENT_BYTES


def _decode_entries(entries: Sequence[LogEntry]) -> list[RecordBatch]:
    return [decode_batch(entry.data, "<raft log>") for entry in entries]


class LazyBatches(Sequence[RecordBatch]):
    """Batches decoded on first use, once, by whichever thread uses them first: listeners get them on the
    event loop, but decoding 10k-record batches there (and a big snapshot even more) would stall the quorum."""

    def __init__(self, decode: Callable[[], list[RecordBatch]], byte_size: int = 0) -> None:
        self.byte_size = byte_size  # of the encoded batches, known without decoding them
        self._decode: Callable[[], list[RecordBatch]] | None = decode
        self._batches: list[RecordBatch] = []
        self._lock = threading.Lock()

    def _decoded(self) -> list[RecordBatch]:
        with self._lock:
            if self._decode is not None:
                self._batches, self._decode = self._decode(), None
            return self._batches

    @overload
    def __getitem__(self, index: int) -> RecordBatch: ...

    @overload
    def __getitem__(self, index: slice) -> list[RecordBatch]: ...

    def __getitem__(self, index: int | slice) -> RecordBatch | list[RecordBatch]:
        return self._decoded()[index]

    def __len__(self) -> int:
        return len(self._decoded())

    def __iter__(self) -> Iterator[RecordBatch]:
        return iter(self._decoded())


@dataclass(frozen=True, slots=True)
class SnapshotReader:
    """A snapshot handed to a listener: its id and its state-machine batches, decoded on demand."""

    snapshot: SnapshotRef
    data: bytes

    def batches(self) -> Iterator[RecordBatch]:
        return snapshot_data_batches(self.data)


class RaftListener(Protocol):
    """What a state machine implements. Callbacks run on the quorum's event loop, in offset order.

    As in Kafka, this node's own election is reported only once every batch below its epoch's start has
    been handed to `handle_commit`: a new leader's state machine starts from the whole committed history.
    """

    def handle_commit(self, batches: LazyBatches) -> None: ...

    def handle_load_snapshot(self, reader: SnapshotReader) -> None: ...

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None: ...


class AppendFuture(asyncio.Future[int]):
    """Completes with the batch's last offset once committed; `base_offset` is known at once (-1 if refused)."""

    base_offset: int = -1


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class RaftClient:
    """One node of the quorum in a real process: durable storage under `data_dir`, driven by asyncio."""

    def __init__(
        self,
        config: RaftConfig,
        data_dir: Path,
        send: Callable[[Envelope], None],
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        rng: random.Random | None = None,
    ) -> None:
        wall_minus_monotonic = time.time() * 1000.0 - monotonic_ms()
        self.storage = SegmentStorage(data_dir, segment_bytes)
        self.core = RaftNode(
            config,
            RaftLog(self.storage),
            FileElectionStore(data_dir, config.voters),
            rng or random.Random(),
            monotonic_ms(),
            timestamp_of=lambda now: int(now + wall_minus_monotonic),
        )
        self._send = send
        self._listeners: list[RaftListener] = []
        self._inbox: asyncio.Queue[tuple[int, RaftMessage]] = asyncio.Queue()
        self._wakeup = asyncio.Event()
        self._pending: dict[int, tuple[int, asyncio.Future[int]]] = {}  # last offset -> (epoch, future)
        self._delivered_end = 0
        self._snapshot_delivered: SnapshotRef | None = None
        self._known_leader: tuple[int | None, int] = (None, -1)
        self._announced_leader: tuple[int | None, int] = (None, -1)  # what the listeners were told
        self._prefix_floor: Callable[[], int] | None = None
        self._task: asyncio.Task[None] | None = None

    # -- the API a state machine uses ---------------------------------------------------------------------

    def register(self, listener: RaftListener) -> None:
        """Register before `start`: the listener then sees the whole committed history from the start."""
        self._listeners.append(listener)

    @property
    def node_id(self) -> int:
        return self.core.config.node_id

    @property
    def leader_id(self) -> int | None:
        return self.core.leader_id

    @property
    def epoch(self) -> int:
        return self.core.epoch

    @property
    def high_watermark(self) -> int:
        return self.core.high_watermark

    @property
    def end_offset(self) -> int:
        return self.core.log.end_offset

    def append(self, messages: Sequence[Any], versions: Mapping[type, int] | None = None) -> AppendFuture:
        """Append one batch, each record type at `versions[type]` (default: its latest version). The future
        carries the batch's base offset at once and completes with its last offset once committed, or fails
        with NotLeaderError (naming the known leader) if this node is not, or stops being, the leader."""
        future = AppendFuture(loop=asyncio.get_running_loop())
        try:
            last_offset = self.core.append(monotonic_ms(), messages, versions=versions)
        except NotLeaderError as error:
            future.set_exception(error)
            return future
        future.base_offset = last_offset - len(messages) + 1
        self._pending[last_offset] = (self.core.epoch, future)
        self._wakeup.set()
        return future

    def change_voters(self, add: bool, node_id: int) -> AppendFuture:
        """AddRaftVoter (the observer's key as it fetched) or RemoveRaftVoter of `node_id`; the future completes
        with the VotersRecord's offset once the new voter set committed it. NotLeaderError or VoterChangeError
        (Kafka's error code in `.code`) when refused."""
        future = AppendFuture(loop=asyncio.get_running_loop())
        core, now = self.core, monotonic_ms()
        try:
            if add:
                offset = core.add_voter(now, core.observer_key(node_id))
            else:
                key = core.voters.key_of(node_id)
                if key is None:
                    raise VoterChangeError("VOTER_NOT_FOUND", f"node {node_id} is not a voter")
                offset = core.remove_voter(now, key)
        except (NotLeaderError, VoterChangeError) as error:
            future.set_exception(error)
            return future
        future.base_offset = offset
        self._pending[offset] = (core.epoch, future)
        self._wakeup.set()
        return future

    def append_encoded(self, data: bytes) -> AppendFuture:
        """`append` for a batch already encoded (RecordBatch v2 bytes) at `end_offset` in this leader's epoch,
        so that a big batch need not be encoded on the event loop. ValueError if it does not fit there."""
        future = AppendFuture(loop=asyncio.get_running_loop())
        try:
            entry = self.core.append_encoded(monotonic_ms(), data)
        except NotLeaderError as error:
            future.set_exception(error)
            return future
        future.base_offset = entry.base_offset
        self._pending[entry.last_offset] = (self.core.epoch, future)
        self._wakeup.set()
        return future

    def read_committed(self, start_offset: int, max_batches: int) -> list[tuple[int, bytes]]:
        """(base offset, bytes) of up to `max_batches` committed batches from `start_offset` (a batch
        boundary) on; LookupError when it is below the log start (deleted behind a snapshot)."""
        log = self.core.log
        if start_offset < log.start_offset:
            raise LookupError(f"offset {start_offset} is below the log start {log.start_offset}")
        entries = log.entries_between(start_offset, self.core.high_watermark)
        return [(e.base_offset, e.data) for e in entries if e.base_offset >= start_offset][:max_batches]

    def create_snapshot(self, end_offset: int, records: Sequence[tuple[Any, int]], timestamp_ms: int) -> SnapshotRef:
        """The snapshot hook: the state machine passes its (record, version) pairs as of `end_offset`
        (committed, exclusive, a batch boundary), e.g. `QuorumController.snapshot_records()`."""
        snapshot = self.core.create_snapshot(end_offset, records, timestamp_ms)
        self._release_prefix()
        return snapshot

    def snapshot_id(self, end_offset: int) -> SnapshotRef:
        """The id of a snapshot ending at `end_offset`, checked; with `save_snapshot` it lets a big snapshot
        be encoded (`kraftlake.raft.snapshots.encode_snapshot`) off the event loop."""
        return self.core.snapshot_id(end_offset)

    def snapshot_quorum_records(self, end_offset: int) -> tuple[Any, ...]:
        """The KRaftVersion + Voters records a snapshot ending at `end_offset` carries (`encode_snapshot`)."""
        return self.core.snapshot_quorum_records(end_offset)

    def save_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None:
        self.core.save_snapshot(snapshot, data)
        self._release_prefix()

    def hold_log_prefix(self, floor: Callable[[], int]) -> None:
        """Keep the log from `floor()` on even once a snapshot covers it (e.g. until a publisher has copied
        it elsewhere); without a floor the prefix goes as soon as a snapshot covers it."""
        self._prefix_floor = floor

    def resign(self) -> None:
        """Graceful hand-off: resign and tell the voters (EndQuorumEpoch) who should succeed."""
        self.core.resign(monotonic_ms())
        self._wakeup.set()

    def describe(self) -> dict[str, Any]:
        """This node's view, like kafka-metadata-quorum describe --status/--replication (leader only). An
        observer's role is "Observer", its Raft state (Unattached or Follower) is in "state"."""
        core = self.core
        view: dict[str, Any] = {
            "nodeId": self.node_id,
            "role": core.role.value if core.is_voter else "Observer",
            "state": core.role.value,
            "leaderId": core.leader_id,
            "leaderEpoch": core.epoch,
            "highWatermark": core.high_watermark,
            "logStartOffset": core.log.start_offset,
            "logEndOffset": core.log.end_offset,
            "voters": list(core.voters.ids),
            "currentVoters": [  # as kafka-metadata-quorum prints them under kraft.version 1
                {"id": key.node_id, "directoryId": key.directory_id,
                 "endpoints": [f"{e.name}://{e.host}:{e.port}" for e in core.voters.endpoints_of(key.node_id)]}
                for key in core.voters.keys
            ],
        }
        if isinstance(core.state, Leader):
            end = core.log.end_offset
            now = monotonic_ms()
            state = core.state

            def row(node_id: int, offset: int, last_fetch_ms: float | None) -> dict[str, Any]:
                return {
                    "nodeId": node_id,
                    "logEndOffset": offset,
                    "lag": end - offset if offset >= 0 else None,
                    "lastFetchMsAgo": None if last_fetch_ms is None else round(now - last_fetch_ms),
                }

            view["replicas"] = [
                row(voter, offset, now if voter == self.node_id else state.replicas[voter].last_fetch_ms)
                for voter, offset in sorted(core.replica_end_offsets().items())
            ]
            view["observers"] = [
                row(observer, progress.end_offset, progress.last_fetch_ms)
                for observer, progress in sorted(state.observers.items())
            ]
        return view

    # -- driving the core ------------------------------------------------------------------------------------

    def deliver(self, source: int, message: RaftMessage) -> None:
        """Called by the transport for every inbound Raft message."""
        self._inbox.put_nowait((source, message))

    def start(self) -> None:
        self._after_step()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.storage.close()

    async def _run(self) -> None:
        while True:
            timeout = max(0.0, (self.core.next_deadline(monotonic_ms()) - monotonic_ms()) / 1000.0)
            inbox_wait = asyncio.ensure_future(self._inbox.get())
            wakeup_wait = asyncio.ensure_future(self._wakeup.wait())
            try:
                done, _ = await asyncio.wait(
                    {inbox_wait, wakeup_wait}, timeout=min(timeout, 3600.0), return_when=asyncio.FIRST_COMPLETED
                )
            finally:  # also when `stop` cancels this task: no waiter may outlive it
                for task in (inbox_wait, wakeup_wait):
                    task.cancel()
            self._wakeup.clear()
            now = monotonic_ms()
            if inbox_wait in done:
                self.core.handle(now, *inbox_wait.result())
            while not self._inbox.empty():
                self.core.handle(monotonic_ms(), *self._inbox.get_nowait())
            self.core.tick(monotonic_ms())
            self._after_step()

    def _after_step(self) -> None:
        """Send, fsync, let the core count the flushed tail, send again, then notify listeners."""
        for envelope in self.core.take_outbox():
            self._send(envelope)
        if self.core.log.flushed_end_offset < self.core.log.end_offset:
            self.core.log.flush()
            self.core.on_flushed(monotonic_ms())
            for envelope in self.core.take_outbox():
                self._send(envelope)
        self._notify()
        self._release_prefix()

    def _release_prefix(self) -> None:
        """Delete what the latest snapshot covers, down to the holder's floor; whole batches only."""
        log = self.core.log
        if log.start_offset < log.snapshot_end_offset:
            limit = log.snapshot_end_offset if self._prefix_floor is None else self._prefix_floor()
            self.core.delete_log_prefix(limit)

    def _notify(self) -> None:
        core = self.core
        log = core.log
        # A listener below the log start can only catch up from the snapshot; a new one starts from it too
        # (the log may still hold the prefix behind it, kept for another reader).
        behind = self._delivered_end < log.start_offset or (
            self._delivered_end == 0 and self._snapshot_delivered is None
        )
        if log.snapshot is not None and log.snapshot_data is not None and (
            behind and self._delivered_end < log.snapshot.end_offset and log.snapshot != self._snapshot_delivered
        ):
            reader = SnapshotReader(log.snapshot, log.snapshot_data)
            for listener in self._listeners:
                listener.handle_load_snapshot(reader)
            self._snapshot_delivered = log.snapshot
            self._delivered_end = log.snapshot.end_offset
        if core.high_watermark > self._delivered_end:
            entries = log.entries_between(self._delivered_end, core.high_watermark)
            batches = LazyBatches(
                functools.partial(_decode_entries, entries),
                sum(len(entry.data) for entry in entries),
            )
            self._delivered_end = core.high_watermark
            if entries:
                for listener in self._listeners:
                    listener.handle_commit(batches)
        for last_offset in sorted(self._pending):
            if last_offset >= core.high_watermark:
                break
            _, future = self._pending.pop(last_offset)
            if not future.done():
                future.set_result(last_offset)
        leadership = (core.leader_id, core.epoch)
        if leadership != self._known_leader:
            self._known_leader = leadership
            for last_offset, (epoch, future) in list(self._pending.items()):
                if core.role is not Role.LEADER or core.epoch != epoch:
                    del self._pending[last_offset]
                    if not future.done():
                        future.set_exception(NotLeaderError(core.leader_id, core.epoch))
        self._announce_leader()

    def _announce_leader(self) -> None:
        """Tell the listeners who leads; this node's own leadership waits until every batch below the
        epoch's start has been delivered (they commit together with the epoch's LeaderChange batch)."""
        core = self.core
        leadership = (core.leader_id, core.epoch)
        if leadership == self._announced_leader:
            return
        if isinstance(core.state, Leader) and self._delivered_end < core.state.epoch_start_offset:
            return
        self._announced_leader = leadership
        for listener in self._listeners:
            listener.handle_leader_change(*leadership)
