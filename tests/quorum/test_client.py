"""The API a state machine uses: append futures, commit / snapshot / leader-change callbacks, the snapshot
hook, and NotLeaderError naming the known leader."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from quorum.client import RaftClient, SnapshotReader
from quorum.messages import Envelope
from quorum.raft import NotLeaderError, RaftConfig
from records import RecordBatch
from records.metadata_types import NoOpRecord


class RecordingListener:
    def __init__(self) -> None:
        self.committed: list[RecordBatch] = []
        self.snapshots: list[SnapshotReader] = []
        self.leaders: list[tuple[int | None, int]] = []

    def handle_commit(self, batches: list[RecordBatch]) -> None:
        self.committed += batches

    def handle_load_snapshot(self, reader: SnapshotReader) -> None:
        self.snapshots.append(reader)

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leaders.append((leader_id, epoch))


def _discard(envelope: Envelope) -> None:
    """No peers in these tests."""


def test_a_lone_voter_commits_appends_and_notifies_listeners(tmp_path: Path) -> None:
    async def scenario() -> tuple[list[int], RecordingListener]:
        client = RaftClient(RaftConfig(node_id=1, voters=(1,)), tmp_path, _discard)
        listener = RecordingListener()
        client.register(listener)
        client.start()
        offsets = [await client.append([NoOpRecord()] * 3) for _ in range(4)]
        await client.stop()
        return offsets, listener

    offsets, listener = asyncio.run(scenario())
    assert offsets == [3, 6, 9, 12]  # offset 0 is the epoch's LeaderChange control batch
    assert listener.leaders == [(1, 1)]
    assert listener.committed[0].is_control
    assert [b.last_offset for b in listener.committed if not b.is_control] == offsets


def test_snapshot_hook_and_reload_on_restart(tmp_path: Path) -> None:
    async def first_run() -> int:
        client = RaftClient(RaftConfig(node_id=1, voters=(1,)), tmp_path, _discard)
        client.start()
        last = await client.append([NoOpRecord()])
        client.create_snapshot(last + 1, [NoOpRecord()] * 2, 1_000)
        await client.append([NoOpRecord()])
        await client.stop()
        return last

    async def second_run() -> RecordingListener:
        client = RaftClient(RaftConfig(node_id=1, voters=(1,)), tmp_path, _discard)
        listener = RecordingListener()
        client.register(listener)
        client.start()
        await client.append([NoOpRecord()])
        await client.stop()
        return listener

    last = asyncio.run(first_run())
    listener = asyncio.run(second_run())
    assert [r.snapshot.end_offset for r in listener.snapshots] == [last + 1]
    assert sum(len(b.records) for b in listener.snapshots[0].batches()) == 2
    assert min(b.base_offset for b in listener.committed) == last + 1  # only what follows the snapshot


def test_append_on_a_non_leader_fails_naming_the_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        client = RaftClient(RaftConfig(node_id=1, voters=(1, 2, 3)), tmp_path, _discard)
        client.start()
        with pytest.raises(NotLeaderError, match="no leader is known"):
            await client.append([NoOpRecord()])
        await client.stop()

    asyncio.run(scenario())
