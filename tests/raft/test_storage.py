"""Durable storage in Kafka's layout: segments, torn-tail recovery, truncation, rolling, snapshots and
the quorum-state file; a former leader restarts Resigned."""

from __future__ import annotations

import json
import random
from pathlib import Path

from kraftlake.raft.core import RaftConfig, RaftNode
from kraftlake.raft.election_state import ElectionState, FileElectionStore
from kraftlake.raft.log import LOG_DIR_NAME, RaftLog, SegmentStorage
from kraftlake.raft.messages import SnapshotRef
from kraftlake.raft.roles import Role
from kraftlake.raft.snapshots import encode_snapshot, snapshot_data_batches
from kraftlake.records import metadata_types as mt
from kraftlake.records import read_batches
from kraftlake.records.metadata_types import NoOpRecord
from tests.raft.scripted import batch


def _log(tmp_path: Path, segment_bytes: int = 1024 * 1024) -> RaftLog:
    return RaftLog(SegmentStorage(tmp_path, segment_bytes))


def _fill(log: RaftLog, count: int, epoch: int = 1) -> None:
    for _ in range(count):
        log.append(batch(log.end_offset, epoch))
    log.flush()


def test_segments_are_kafka_files_and_survive_reopen(tmp_path: Path) -> None:
    log = _log(tmp_path)
    _fill(log, 5)
    segment = tmp_path / LOG_DIR_NAME / "00000000000000000000.log"
    assert [b.base_offset for b in read_batches(segment)] == [0, 1, 2, 3, 4]
    reopened = _log(tmp_path)
    assert reopened.end_offset == 5 and reopened.last_epoch == 1
    assert [e.data for e in reopened.entries] == [e.data for e in log.entries]


def test_a_torn_tail_is_cut_on_recovery(tmp_path: Path) -> None:
    log = _log(tmp_path)
    _fill(log, 3)
    segment = tmp_path / LOG_DIR_NAME / "00000000000000000000.log"
    whole = segment.stat().st_size
    with segment.open("ab") as handle:
        handle.write(batch(3, 1).data[:30])  # a crash in the middle of writing batch 3
    reopened = _log(tmp_path)
    assert reopened.end_offset == 3
    assert segment.stat().st_size == whole
    reopened.append(batch(3, 2))
    reopened.flush()
    assert [b.base_offset for b in read_batches(segment)] == [0, 1, 2, 3]


def test_segments_roll_and_truncation_crosses_them(tmp_path: Path) -> None:
    log = _log(tmp_path, segment_bytes=200)
    _fill(log, 10)
    directory = tmp_path / LOG_DIR_NAME
    segments = sorted(directory.glob("*.log"))
    assert len(segments) > 2
    log.truncate_to(4)
    assert log.end_offset == 4
    reopened = _log(tmp_path, segment_bytes=200)
    assert reopened.end_offset == 4
    assert [b.base_offset for path in sorted(directory.glob("*.log")) for b in read_batches(path)] == [0, 1, 2, 3]


def test_divergence_lookup_and_batch_boundaries(tmp_path: Path) -> None:
    log = _log(tmp_path)
    _fill(log, 3, epoch=1)
    _fill(log, 2, epoch=3)
    assert log.end_offset_for_epoch(1) == (1, 3)
    assert log.end_offset_for_epoch(2) == (1, 3)
    assert log.end_offset_for_epoch(7) == (3, 5)
    assert log.epoch_before(4) == 3 and log.epoch_start_offset(3) == 3


def test_snapshot_file_format_and_prefix_deletion(tmp_path: Path) -> None:
    log = _log(tmp_path, segment_bytes=200)
    _fill(log, 10, epoch=2)
    data = encode_snapshot(2, [(NoOpRecord(), 0)] * 3, 1234)
    log.save_snapshot(SnapshotRef(6, 2), data)
    directory = tmp_path / LOG_DIR_NAME
    checkpoint = directory / "00000000000000000006-0000000002.checkpoint"
    batches = list(read_batches(checkpoint))
    assert batches[0].is_control and batches[-1].is_control
    assert type(batches[0].records[0].message).__name__ == "SnapshotHeaderRecord"
    assert type(batches[-1].records[0].message).__name__ == "SnapshotFooterRecord"
    assert sum(len(b.records) for b in snapshot_data_batches(data)) == 3
    assert all(b.partition_leader_epoch == 2 for b in batches)
    assert log.start_offset == 0  # the prefix stays until its holder lets it go
    assert log.delete_prefix(100) == 6  # never past the snapshot
    assert min(int(p.stem) for p in directory.glob("*.log")) > 0  # whole segments below 6 are gone
    reopened = _log(tmp_path, segment_bytes=200)
    first_segment = min(int(p.stem) for p in directory.glob("*.log"))
    assert reopened.start_offset == first_segment <= 6 and reopened.end_offset == 10
    assert reopened.snapshot == SnapshotRef(6, 2)
    assert reopened.epoch_before(6) == 2


def test_a_held_prefix_survives_a_restart_and_is_deleted_later(tmp_path: Path) -> None:
    log = _log(tmp_path, segment_bytes=200)
    _fill(log, 10, epoch=2)
    log.save_snapshot(SnapshotRef(8, 2), encode_snapshot(2, [(NoOpRecord(), 0)], 1234))
    assert log.delete_prefix(3) == 3
    assert log.entries[0].base_offset == 3 and log.end_offset == 10
    reopened = _log(tmp_path, segment_bytes=200)
    assert reopened.start_offset <= 3 and reopened.snapshot == SnapshotRef(8, 2)
    assert [e.base_offset for e in reopened.entries] == list(range(reopened.start_offset, 10))
    assert reopened.delete_prefix(8) == 8
    assert reopened.entries_between(8, 10)[0].base_offset == 8


def test_snapshot_records_keep_their_versions() -> None:
    data = encode_snapshot(1, [(mt.PartitionRecord(partition_id=0), 0), (mt.PartitionRecord(partition_id=1), 2)], 5)
    records = [r for b in snapshot_data_batches(data) for r in b.records]
    assert [(r.version, r.message.partition_id) for r in records] == [(0, 0), (2, 1)]


def test_quorum_state_uses_kafka_field_names(tmp_path: Path) -> None:
    store = FileElectionStore(tmp_path, (1, 2, 3))
    store.write(ElectionState(epoch=4, leader_id=2, voted_id=3))
    document = json.loads((tmp_path / LOG_DIR_NAME / "quorum-state").read_text())
    assert document["leaderId"] == 2 and document["leaderEpoch"] == 4 and document["votedId"] == 3
    assert document["currentVoters"] == [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}]
    assert "appliedOffset" in document and document["data_version"] == 0
    assert store.read() == ElectionState(4, 2, 3)
    assert not (tmp_path / LOG_DIR_NAME / "quorum-state.tmp").exists()


def test_a_former_leader_restarts_resigned_in_its_epoch(tmp_path: Path) -> None:
    config = RaftConfig(node_id=1, voters=(1, 2, 3))
    store = FileElectionStore(tmp_path, config.voters)
    store.write(ElectionState(epoch=5, leader_id=1, voted_id=1))
    node = RaftNode(config, _log(tmp_path), store, random.Random(1), 0.0)
    assert node.role is Role.RESIGNED and node.epoch == 5
    node.tick(node.next_deadline(0.0))
    assert node.role in (Role.UNATTACHED, Role.PROSPECTIVE) and node.epoch == 6
    assert store.read() == ElectionState(6, None, None)


def test_a_lone_voter_elects_itself_and_commits(tmp_path: Path) -> None:
    config = RaftConfig(node_id=1, voters=(1,))
    node = RaftNode(config, _log(tmp_path), FileElectionStore(tmp_path, (1,)), random.Random(1), 0.0)
    assert node.role is Role.LEADER and node.epoch == 1
    last = node.append(1.0, [NoOpRecord()])
    assert node.high_watermark <= last
    node.log.flush()
    node.on_flushed(2.0)
    assert node.high_watermark == last + 1
