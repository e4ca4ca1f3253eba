"""The controller on the real quorum client (one voter, real files): record versions follow the cluster's
metadata.version in the log and in snapshots, the snapshot generator's snapshots reload after a restart,
and the log prefix behind a snapshot stays until its holder (the publisher) lets it go."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kraftlake.controller import BrokerRegistrationRequest, ControllerConfig, Listener, QuorumController
from kraftlake.controller.raft_log import RaftMetadataLog
from kraftlake.controller.replication import NewTopic
from kraftlake.controller.snapshot_generator import SnapshotGenerator
from kraftlake.controller.versions import SUPPORTED_FEATURES
from kraftlake.raft.client import RaftClient, monotonic_ms
from kraftlake.raft.core import RaftConfig
from kraftlake.raft.log import LOG_DIR_NAME
from kraftlake.raft.messages import Envelope
from kraftlake.raft.snapshots import snapshot_data_batches
from kraftlake.records import MetadataLogDir, decode_batches
from kraftlake.records import metadata_types as mt
from kraftlake.records.control_types import KRaftVersionRecord, SnapshotHeaderRecord, VotersRecord

T = TypeVar("T")
TIMEOUT = 60


class Node:
    """A lone voter on an asyncio loop in a thread, with the controller and the snapshot generator on top."""

    def __init__(self, data_dir: Path, floor: Callable[[], int], kraft_version: int = 0) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = RaftClient(RaftConfig(node_id=1, voters=(1,), kraft_version=kraft_version), data_dir,
                                 self._discard)
        self.client.hold_log_prefix(floor)
        self.log = RaftMetadataLog(self.client, self.loop)
        config = ControllerConfig(metadata_version="3.3", noop_interval_ms=0, bootstrap_features={})
        self.controller = QuorumController(self.log, config, background_tasks=False).start()
        self.snapshots = SnapshotGenerator(self.controller, self.log, max_new_bytes=1 << 40,
                                           max_interval_ms=1 << 40).start()
        self.on_loop(self.client.start)

    @staticmethod
    def _discard(envelope: Envelope) -> None:
        """A single voter has no peers."""

    def on_loop(self, function: Callable[[], T]) -> T:
        async def call() -> T:
            return function()

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(TIMEOUT)

    def close(self) -> None:
        self.snapshots.close()
        self.controller.close()
        asyncio.run_coroutine_threadsafe(self.client.stop(), self.loop).result(TIMEOUT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()


def wait_until(condition: Callable[[], Any]) -> None:
    for _ in range(TIMEOUT * 100):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def floor() -> list[int]:
    return [0]


@pytest.fixture
def node(tmp_path: Path, floor: list[int]) -> Iterator[Node]:
    running = Node(tmp_path, lambda: floor[0])
    yield running
    running.close()


def _populate(controller: QuorumController) -> None:
    wait_until(lambda: controller.is_active)
    request = BrokerRegistrationRequest(1, "AAAAAAAAAAAAAAAAAAAAAQ", [Listener("PLAINTEXT", "localhost", 9092)],
                                        dict(SUPPORTED_FEATURES))
    epoch = controller.register_broker(request).result(TIMEOUT)
    controller.broker_heartbeat(1, epoch, controller.committed_offset).result(TIMEOUT)  # unfenced
    controller.create_topics([NewTopic("orders", partitions=3, replication_factor=1)]).result(TIMEOUT)


def test_the_log_and_snapshots_hold_the_versions_of_the_metadata_version(node: Node, tmp_path: Path) -> None:
    _populate(node.controller)
    written = {(type(r.message), r.version) for b in MetadataLogDir(tmp_path / LOG_DIR_NAME).log_batches()
               if not b.is_control for r in b.records}
    assert (mt.PartitionRecord, 0) in written and (mt.RegisterBrokerRecord, 1) in written  # 3.3: not the latest
    snapshot = node.snapshots.write_snapshot()
    assert snapshot is not None
    data = (tmp_path / LOG_DIR_NAME / snapshot.file_name()).read_bytes()
    in_snapshot = {(type(r.message), r.version) for b in snapshot_data_batches(data) for r in b.records}
    assert (mt.PartitionRecord, 0) in in_snapshot and (mt.RegisterBrokerRecord, 1) in in_snapshot


def test_the_prefix_behind_a_snapshot_waits_for_its_holder(node: Node, floor: list[int]) -> None:
    _populate(node.controller)
    snapshot = node.snapshots.write_snapshot()
    assert snapshot is not None and snapshot.end_offset > 0
    assert node.on_loop(lambda: node.client.core.log.start_offset) == 0
    assert next(base for base, _ in node.log.read_committed(0)) == 0  # a publisher could still read it all
    floor[0] = 2
    node.controller.create_topics([NewTopic("later", partitions=1, replication_factor=1)]).result(TIMEOUT)
    start = node.on_loop(lambda: node.client.core.log.start_offset)
    assert 0 < start <= 2
    floor[0] = 1 << 40
    node.controller.create_topics([NewTopic("last", partitions=1, replication_factor=1)]).result(TIMEOUT)
    assert node.on_loop(lambda: node.client.core.log.start_offset) == snapshot.end_offset  # never past it
    with pytest.raises(LookupError):
        list(node.log.read_committed(0))


def test_a_restarted_node_starts_from_its_snapshot(tmp_path: Path, floor: list[int]) -> None:
    first = Node(tmp_path, lambda: floor[0])
    try:
        _populate(first.controller)
        snapshot = first.snapshots.write_snapshot()
        topics = first.controller.committed_image.topics
    finally:
        first.close()
    second = Node(tmp_path, lambda: floor[0])
    try:
        wait_until(lambda: second.controller.is_active)
        assert second.snapshots.latest == snapshot
        assert second.controller.committed_image.topics == topics
    finally:
        second.close()


def test_the_controller_keeps_writing_across_a_voter_change_and_snapshots_carry_the_voters(
    tmp_path: Path, floor: list[int]
) -> None:
    """KIP-853: the Raft layer writes its own VotersRecord between the controller's batches; the active
    controller carries on after it, and its snapshots hold KRaftVersion + Voters in the header batch."""
    node = Node(tmp_path, lambda: floor[0], kraft_version=1)
    try:
        _populate(node.controller)
        core = node.client.core
        voters_offset = node.on_loop(lambda: core.update_voter(monotonic_ms(), core.config.key))
        node.controller.create_topics([NewTopic("after", partitions=1, replication_factor=1)]).result(TIMEOUT)
        assert node.controller.is_active and "after" in node.controller.committed_image.topics.by_name
        kinds = {type(r.message) for b in MetadataLogDir(tmp_path / LOG_DIR_NAME).log_batches()
                 if b.base_offset <= voters_offset <= b.last_offset for r in b.records}
        assert kinds == {VotersRecord}
        snapshot = node.snapshots.write_snapshot()
        assert snapshot is not None
        header = next(iter(decode_batches((tmp_path / LOG_DIR_NAME / snapshot.file_name()).read_bytes())))
        assert [type(r.message) for r in header.records] == [SnapshotHeaderRecord, KRaftVersionRecord, VotersRecord]
    finally:
        node.close()
