"""Partition reassignment: the exact records of starting one, of the AlterPartition that completes it
(moving leadership off a removed replica answers NEW_LEADER_ELECTED), of a cancellation, and the refusals."""

from __future__ import annotations

from kraftlake.controller import IsrChange, NewTopic
from kraftlake.controller.errors import (
    InvalidReplicaAssignmentError,
    NewLeaderElectedError,
    NoReassignmentInProgressError,
    UnknownTopicError,
)
from kraftlake.controller.reassignment import OngoingReassignment
from kraftlake.records import metadata_types as mt
from kraftlake.replay.topics import MIGRATING_DIRECTORY
from tests.controller.conftest import Harness

M = MIGRATING_DIRECTORY  # the harness's brokers register no log directory


def _setup(h: Harness) -> str:
    for b in range(4):
        h.register(b)
    h.wait(h.controller.create_topics([NewTopic("t", assignments={0: [0, 1, 2]})]))
    return h.image.topics.by_name["t"].topic_id


def test_reassignment_completes_when_the_new_replica_joins_the_isr(harness: Harness) -> None:
    topic_id = _setup(harness)
    mark = harness.offset()
    result = harness.wait(harness.controller.alter_partition_reassignments({("t", 0): [3, 1, 2]}))
    assert result == {"t": {0: None}}
    assert harness.records_after(mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, replicas=(3, 1, 2, 0), removing_replicas=(0,), adding_replicas=(3,),
        directories=(M, M, M, M),
    )]
    assert harness.wait(harness.controller.list_partition_reassignments()) == {
        "t": {0: OngoingReassignment((3, 1, 2, 0), (3,), (0,))}
    }
    p = harness.partition("t", 0)
    assert (p.leader, p.isr) == (0, (0, 1, 2))
    mark = harness.offset()
    [outcome] = harness.wait(harness.controller.alter_partition(0, harness.epochs[0], [
        IsrChange("t", 0, p.leader_epoch, p.partition_epoch, (0, 1, 2, 3))  # broker 3 caught up
    ]))
    assert isinstance(outcome.error, NewLeaderElectedError)
    assert harness.records_after(mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, isr=(1, 2, 3), leader=3, replicas=(3, 1, 2), removing_replicas=(),
        adding_replicas=(), directories=(M, M, M),
    )]
    p = harness.partition("t", 0)
    assert (p.replicas, p.isr, p.leader, p.leader_epoch) == ((3, 1, 2), (1, 2, 3), 3, 1)
    assert harness.wait(harness.controller.list_partition_reassignments()) == {}


def test_cancel_reverts_to_the_original_replicas(harness: Harness) -> None:
    topic_id = _setup(harness)
    harness.wait(harness.controller.alter_partition_reassignments({("t", 0): [0, 1, 3]}))
    assert harness.partition("t", 0).replicas == (0, 1, 3, 2)
    mark = harness.offset()
    assert harness.wait(harness.controller.alter_partition_reassignments({("t", 0): None})) == {"t": {0: None}}
    assert harness.records_after(mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, leader=0, replicas=(0, 1, 2), removing_replicas=(), adding_replicas=(),
        directories=(M, M, M),
    )]  # leader=0: dropping broker 3 bumps the leader epoch, as every replica removal does
    result = harness.wait(harness.controller.alter_partition_reassignments({("t", 0): None}))
    assert isinstance(result["t"][0], NoReassignmentInProgressError)


def test_bad_reassignments_are_refused_and_write_nothing(harness: Harness) -> None:
    _setup(harness)
    mark = harness.offset()
    result = harness.wait(harness.controller.alter_partition_reassignments({
        ("t", 0): [0, 9], ("t", 5): [0, 1], ("nope", 0): [0], ("t", 1): [],
    }))
    assert isinstance(result["t"][0], InvalidReplicaAssignmentError) and "broker 9" in str(result["t"][0])
    assert isinstance(result["t"][5], UnknownTopicError) and isinstance(result["nope"][0], UnknownTopicError)
    assert isinstance(result["t"][1], UnknownTopicError)
    assert harness.records_after(mark) == []
    result = harness.wait(harness.controller.alter_partition_reassignments({("t", 0): [1, 1]}))
    assert isinstance(result["t"][0], InvalidReplicaAssignmentError)
