"""The API a state machine uses: append futures, commit / snapshot / leader-change callbacks, the snapshot
hook, and NotLeaderError naming the known leader."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kraftlake.raft.client import LazyBatches, RaftClient, SnapshotReader
from kraftlake.raft.core import NotLeaderError, RaftConfig
from kraftlake.raft.messages import Envelope
from kraftlake.records import RecordBatch, decode_batch, encode_batch, make_batch
from kraftlake.records import metadata_types as mt
from kraftlake.records.metadata_types import NoOpRecord


class RecordingListener:
    def __init__(self) -> None:
        self.committed: list[RecordBatch] = []
        self.snapshots: list[SnapshotReader] = []
        self.leaders: list[tuple[int | None, int]] = []

    def handle_commit(self, batches: LazyBatches) -> None:
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
        client.create_snapshot(last + 1, [(NoOpRecord(), 0)] * 2, 1_000)
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


def test_append_writes_the_versions_asked_for_and_knows_its_base_offset(tmp_path: Path) -> None:
    async def scenario() -> tuple[list[int], list[int], RecordingListener]:
        client = RaftClient(RaftConfig(node_id=1, voters=(1,)), tmp_path, _discard)
        listener = RecordingListener()
        client.register(listener)
        client.start()
        pinned = client.append([mt.PartitionRecord(partition_id=0)] * 2, versions={mt.PartitionRecord: 0})
        latest = client.append([mt.PartitionRecord(partition_id=1)])
        bases = [pinned.base_offset, latest.base_offset]
        lasts = [await pinned, await latest]
        await client.stop()
        return bases, lasts, listener

    bases, lasts, listener = asyncio.run(scenario())
    assert bases == [1, 3] and lasts == [2, 3]
    data = [b for b in listener.committed if not b.is_control]
    assert [r.version for b in data for r in b.records] == [0, 0, mt.PartitionRecord.MAX_VERSION]


def test_a_held_prefix_outlives_the_snapshot_until_its_holder_lets_go(tmp_path: Path) -> None:
    async def scenario() -> list[int]:
        client = RaftClient(RaftConfig(node_id=1, voters=(1,)), tmp_path, _discard)
        floor = [0]
        client.hold_log_prefix(lambda: floor[0])
        client.start()
        for _ in range(5):
            last = await client.append([NoOpRecord()])
        client.create_snapshot(last + 1, [(NoOpRecord(), 0)], 1_000)
        starts = [client.core.log.start_offset]
        floor[0] = 3
        await client.append([NoOpRecord()])
        starts.append(client.core.log.start_offset)
        floor[0] = 1_000
        await client.append([NoOpRecord()])
        starts.append(client.core.log.start_offset)
        await client.stop()
        return starts

    assert asyncio.run(scenario()) == [0, 3, 6]  # never past the snapshot at 6


def test_a_new_leader_hears_of_its_election_only_after_every_earlier_batch(tmp_path: Path) -> None:
    """Followers that replicated a batch but never heard it committed elect one of them: its listener must
    get that batch before its own leadership (as Kafka's listeners do), not after."""

    class OrderListener(RecordingListener):
        def __init__(self, node_id: int) -> None:
            super().__init__()
            self.node_id = node_id
            self.own_elections: list[tuple[int, int]] = []  # (epoch, delivered end when told)

        def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
            super().handle_leader_change(leader_id, epoch)
            if leader_id == self.node_id:
                self.own_elections.append((epoch, self.committed[-1].last_offset + 1 if self.committed else 0))

    async def scenario() -> tuple[dict[int, OrderListener], int]:
        clients: dict[int, RaftClient] = {}
        cut_off: set[int] = set()

        def route(envelope: Envelope) -> None:
            if envelope.source not in cut_off and envelope.destination in clients:
                clients[envelope.destination].deliver(envelope.source, envelope.message)

        listeners = {node: OrderListener(node) for node in (1, 2, 3)}
        for node in (1, 2, 3):
            config = RaftConfig(node_id=node, voters=(1, 2, 3), election_timeout_ms=300.0, fetch_timeout_ms=600.0)
            clients[node] = RaftClient(config, tmp_path / str(node), route)
            clients[node].register(listeners[node])
            clients[node].start()
        old = await _leader_of(clients)
        await clients[old].append([NoOpRecord()])
        tail = clients[old].append([NoOpRecord()])
        # the moment a follower's fetch commits the tail, the old leader goes silent: nobody learns it
        while clients[old].high_watermark <= tail.base_offset:
            await asyncio.sleep(0.001)
        cut_off.add(old)
        new = await _leader_of(clients, excluding=old)
        await clients[new].append([NoOpRecord()])
        for client in clients.values():
            await client.stop()
        return listeners, new

    listeners, new = asyncio.run(scenario())
    assert listeners[new].own_elections
    for epoch, delivered in listeners[new].own_elections:
        opening = next(b for b in listeners[new].committed if b.is_control and b.partition_leader_epoch == epoch)
        assert delivered >= opening.base_offset  # every batch below the epoch start came first


async def _leader_of(clients: dict[int, RaftClient], excluding: int | None = None) -> int:
    for _ in range(2_000):
        leaders = [n for n, c in clients.items() if n != excluding and c.leader_id == n and c.high_watermark > 0]
        if leaders:
            return leaders[0]
        await asyncio.sleep(0.005)
    raise AssertionError("no leader elected within 10 s")


def test_a_batch_encoded_elsewhere_is_appended_only_at_the_log_end(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, int]:
        client = RaftClient(RaftConfig(node_id=1, voters=(1,)), tmp_path, _discard)
        client.start()
        await client.append([NoOpRecord()])
        base, epoch = client.end_offset, client.epoch
        with pytest.raises(ValueError, match="does not continue the log"):
            client.append_encoded(encode_batch(make_batch(base + 1, epoch, 0, [NoOpRecord()])))
        future = client.append_encoded(encode_batch(make_batch(base, epoch, 0, [NoOpRecord()] * 2)))
        last = await future
        await client.stop()
        return future.base_offset, last

    assert asyncio.run(scenario()) == (2, 3)


def test_committed_batches_are_decoded_once_by_their_first_user() -> None:
    raw = encode_batch(make_batch(0, 1, 0, [NoOpRecord()]))
    calls: list[int] = []

    def decode() -> list[RecordBatch]:
        calls.append(1)
        return [decode_batch(raw)]

    lazy = LazyBatches(decode, len(raw))
    assert calls == [] and lazy.byte_size == len(raw)  # handing them over costs nothing
    assert len(lazy) == 1 and lazy[0] is next(iter(lazy)) and lazy[0].base_offset == 0
    assert calls == [1]
