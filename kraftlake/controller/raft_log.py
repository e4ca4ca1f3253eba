"""`MetadataLog` over the quorum's `RaftClient`, which lives on an asyncio loop in another thread.

The controller and the publisher run on threads of their own; every call into the Raft client is made on
its loop, and its callbacks (already in offset order, this node's own election only once every earlier
batch is delivered) are handed to them as they are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kraftlake.controller.metadata_log import LeaderAndEpoch, MetadataListener
from kraftlake.raft.client import LazyBatches, RaftClient, SnapshotReader
from kraftlake.raft.core import NotLeaderError
from kraftlake.raft.snapshots import encode_snapshot
from kraftlake.records import SnapshotId, encode_batch, make_batch

READ_CHUNK_BATCHES = 1000


class RaftMetadataLog:
    def __init__(self, client: RaftClient, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop
        self._listeners: list[MetadataListener] = []
        self.committed_bytes = 0  # of the batches committed since the process started (snapshots aside)
        client.register(self)

    def _on_loop(self, function: Any) -> Any:
        async def call() -> Any:
            return function()

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result()

    # -- MetadataLog -----------------------------------------------------------------------------------------

    def register(self, listener: MetadataListener) -> None:
        """Register before the client starts: the listener then sees the whole committed history."""
        self._listeners.append(listener)

    def append(self, epoch: int, messages: Sequence[Any], versions: Mapping[type, int], time_ms: int) -> int:
        """Encodes the batch on the calling thread: a 10k-record batch costs ~0.1 s of CPU (seconds on a busy
        machine), which on the quorum's loop would stall replication and can cost the leadership."""

        def not_leader() -> NotLeaderError:
            return NotLeaderError(self._client.leader_id, self._client.epoch)

        def position() -> int:
            if self._client.epoch != epoch or self._client.leader_id != self._client.node_id:
                raise not_leader()
            return self._client.end_offset

        base = self._on_loop(position)
        data = encode_batch(make_batch(base, epoch, time_ms, messages, versions=versions))

        def append_on_loop() -> int:
            try:
                future = self._client.append_encoded(data)
            except ValueError:  # only a new epoch moves the log under the controller's feet
                raise not_leader() from None
            if future.done() and future.exception() is not None:
                raise not_leader()
            future.add_done_callback(lambda done: done.cancelled() or done.exception())  # commit comes by listener
            return future.base_offset

        return self._on_loop(append_on_loop)

    def end_offset(self) -> int:
        return self._on_loop(lambda: self._client.end_offset)

    def read_committed(self, start_offset: int) -> Iterator[tuple[int, bytes]]:
        while True:
            batches = self._on_loop(lambda start=start_offset: self._client.read_committed(start, READ_CHUNK_BATCHES))
            if not batches:
                return
            yield from batches
            start_offset = batches[-1][0] + 1

    def write_snapshot(
        self, end_offset: int, records: Sequence[tuple[Any, int]], log_time_ms: int
    ) -> tuple[SnapshotId, int]:
        """Snapshot [0, end_offset) as `kraftlake.records` ((record, version) pairs); returns its id and size in bytes.
        Encoded on the calling thread, so a big image does not stall the quorum's loop; ValueError when
        `end_offset` is no snapshot point."""
        snapshot, quorum_records = self._on_loop(
            lambda: (self._client.snapshot_id(end_offset), self._client.snapshot_quorum_records(end_offset))
        )
        data = encode_snapshot(snapshot.epoch, records, log_time_ms, quorum_records)
        self._on_loop(lambda: self._client.save_snapshot(snapshot, data))
        return SnapshotId(snapshot.end_offset, snapshot.epoch), len(data)

    # -- RaftListener (on the loop) ------------------------------------------------------------------------------

    def handle_commit(self, batches: LazyBatches) -> None:
        """Passed on undecoded: the controller decodes them on its own thread."""
        self.committed_bytes += batches.byte_size
        for listener in self._listeners:
            listener.handle_commit(batches)

    def handle_load_snapshot(self, reader: SnapshotReader) -> None:
        snapshot_id = SnapshotId(reader.snapshot.end_offset, reader.snapshot.epoch)
        batches = LazyBatches(lambda: list(reader.batches()))
        for listener in self._listeners:
            listener.handle_load_snapshot(snapshot_id, batches)

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        for listener in self._listeners:
            listener.handle_leader_change(LeaderAndEpoch(leader_id, epoch))
