"""`MetadataLog` over the quorum's `RaftClient`, which lives on an asyncio loop in another thread.

The controller and the publisher run on threads of their own; every call into the Raft client is made on
its loop, and its callbacks (already in offset order) are handed to them as they are.

Gaps in the client's API, worked around here and listed for the quorum's owner: `append` takes no record
versions (the batch is written at each type's latest version, right only at the latest metadata.version),
and returns no base offset (read from the log end just before appending, on the loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from quorum.client import RaftClient, SnapshotReader
from quorum.controller.metadata_log import LeaderAndEpoch, MetadataListener, NotLeaderError
from records import RecordBatch, SnapshotId

READ_CHUNK_BATCHES = 1000


class RaftMetadataLog:
    def __init__(self, client: RaftClient, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop
        self._listeners: list[MetadataListener] = []
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
        def append_on_loop() -> int:
            client = self._client
            if client.epoch != epoch or client.leader_id != client.node_id:
                raise NotLeaderError(LeaderAndEpoch(client.leader_id, client.epoch))
            base = client.core.log.end_offset
            future = client.append(list(messages))
            if future.done() and future.exception() is not None:
                raise NotLeaderError(LeaderAndEpoch(client.leader_id, client.epoch))
            future.add_done_callback(lambda done: done.cancelled() or done.exception())  # commit comes by listener
            return base

        return self._on_loop(append_on_loop)

    def end_offset(self) -> int:
        return self._on_loop(lambda: self._client.core.log.end_offset)

    def read_committed(self, start_offset: int) -> Iterator[tuple[int, bytes]]:
        while True:
            def chunk(start: int = start_offset) -> list[tuple[int, bytes]]:
                core = self._client.core
                if start < core.log.start_offset:
                    raise LookupError(f"offset {start} is below the log start {core.log.start_offset}")
                entries = core.log.entries_between(start, core.high_watermark)[:READ_CHUNK_BATCHES]
                return [(e.base_offset, e.data) for e in entries if e.base_offset >= start]

            batches = self._on_loop(chunk)
            if not batches:
                return
            yield from batches
            start_offset = batches[-1][0] + 1

    # -- RaftListener (on the loop) ------------------------------------------------------------------------------

    def handle_commit(self, batches: list[RecordBatch]) -> None:
        for listener in self._listeners:
            listener.handle_commit(batches)

    def handle_load_snapshot(self, reader: SnapshotReader) -> None:
        snapshot_id = SnapshotId(reader.snapshot.end_offset, reader.snapshot.epoch)
        batches = list(reader.batches())
        for listener in self._listeners:
            listener.handle_load_snapshot(snapshot_id, batches)

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        for listener in self._listeners:
            listener.handle_leader_change(LeaderAndEpoch(leader_id, epoch))
