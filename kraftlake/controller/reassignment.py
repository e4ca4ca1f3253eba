"""Partition reassignment (Kafka's AlterPartitionReassignments / ListPartitionReassignments in
ReplicationControlManager): a new target puts the partition's replicas at target + removing, with the new
brokers as adding replicas; the reassignment completes (in PartitionChangeBuilder) once every adding replica
is in the ISR, which the leader reports with AlterPartition. A cancellation reverts to the original replicas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.errors import (
    ControllerError,
    InvalidReplicaAssignmentError,
    InvalidReplicaStateError,
    NoReassignmentInProgressError,
    UnknownTopicError,
)
from kraftlake.controller.partition_change import ReplicaTarget, build_partition_change
from kraftlake.controller.replication import default_directory, elr_policy, is_acceptable_leader
from kraftlake.controller.working_state import ControllerState
from kraftlake.replay.topics import PartitionRegistration

PartitionKey = tuple[str, int]  # (topic name, partition id)


@dataclass(frozen=True)
class OngoingReassignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"replicas": list(self.replicas), "adding_replicas": list(self.adding),
                "removing_replicas": list(self.removing)}


def alter_partition_reassignments(
    ctx: WriteContext, targets: Mapping[PartitionKey, Sequence[int] | None]
) -> ControllerResult[dict[str, dict[int, ControllerError | None]]]:
    """Per partition: a target replica list starts (or replaces) a reassignment, None cancels it."""
    records: list[Any] = []
    outcomes: dict[str, dict[int, ControllerError | None]] = {}
    state = ctx.state
    changed: dict[tuple[str, int], PartitionRegistration] = {}
    for (topic_name, partition_id), target in targets.items():
        error: ControllerError | None = None
        try:
            topic_id, partition = _existing(state, topic_name, partition_id)
            if (topic_id, partition_id) in changed:
                partition = changed[(topic_id, partition_id)]
            if target is None:
                record = _cancel(ctx, topic_id, topic_name, partition_id, partition)
            else:
                record = _reassign(ctx, topic_id, partition_id, partition, tuple(target))
            if record is not None:
                records.append(record)
                changed[(topic_id, partition_id)] = partition.merge(record)
        except ControllerError as refused:
            error = refused
        outcomes.setdefault(topic_name, {})[partition_id] = error
    return ControllerResult(records, outcomes)


def list_partition_reassignments(
    ctx: WriteContext, partitions: Sequence[PartitionKey] | None
) -> ControllerResult[dict[str, dict[int, OngoingReassignment]]]:
    """The ongoing reassignments among `partitions` (None: all of them, from the reassigning index)."""
    state = ctx.state
    if partitions is None:
        keys = [(state.topic_name(tid) or "", p) for tid, p in sorted(state.reassigning)]
    else:
        keys = list(partitions)
    found: dict[str, dict[int, OngoingReassignment]] = {}
    for topic_name, partition_id in keys:
        topic_id = state.topic_id(topic_name)
        partition = None if topic_id is None else state.partition(topic_id, partition_id)
        if partition is not None and (partition.adding_replicas or partition.removing_replicas):
            found.setdefault(topic_name, {})[partition_id] = OngoingReassignment(
                partition.replicas, partition.adding_replicas, partition.removing_replicas
            )
    return ControllerResult([], found)


def _existing(state: ControllerState, topic_name: str, partition_id: int) -> tuple[str, PartitionRegistration]:
    topic_id = state.topic_id(topic_name)
    partition = None if topic_id is None else state.partition(topic_id, partition_id)
    if topic_id is None or partition is None:
        raise UnknownTopicError(f"partition {topic_name}-{partition_id} does not exist")
    return topic_id, partition


def _check_target(state: ControllerState, topic_name: str, partition_id: int, target: tuple[int, ...]) -> None:
    label = f"{topic_name}-{partition_id}"
    if not target:
        raise InvalidReplicaAssignmentError(f"the target replicas of {label} are empty")
    if len(set(target)) != len(target):
        raise InvalidReplicaAssignmentError(f"the target replicas {list(target)} of {label} repeat a broker")
    for broker_id in target:
        if state.broker(broker_id) is None:
            raise InvalidReplicaAssignmentError(
                f"the target replicas of {label} include broker {broker_id}, but no such broker is registered"
            )


def _reassign(
    ctx: WriteContext, topic_id: str, partition_id: int, partition: PartitionRegistration, target: tuple[int, ...]
) -> Any:
    state = ctx.state
    _check_target(state, state.topic_name(topic_id) or "", partition_id, target)
    current = partition.replicas
    removing = tuple(b for b in current if b not in target)
    adding = tuple(b for b in target if b not in current)
    return build_partition_change(
        topic_id, partition_id, partition,
        target=ReplicaTarget(target + removing, adding, removing),
        is_acceptable_leader=lambda b: is_acceptable_leader(state, b),
        metadata_version=ctx.metadata_version,
        elr=elr_policy(state, topic_id),
        default_directory=lambda b: default_directory(state, b),
    )


def _cancel(
    ctx: WriteContext, topic_id: str, topic_name: str, partition_id: int, partition: PartitionRegistration
) -> Any:
    """Back to the replicas before the reassignment: the adding ones leave replicas and ISR."""
    if not partition.adding_replicas and not partition.removing_replicas:
        raise NoReassignmentInProgressError(f"no reassignment of {topic_name}-{partition_id} is in progress")
    adding = set(partition.adding_replicas)
    isr = tuple(b for b in partition.isr if b not in adding)
    if not isr:
        raise InvalidReplicaStateError(
            f"cancelling the reassignment of {topic_name}-{partition_id} would leave an empty ISR (an unclean "
            f"election): complete it instead"
        )
    state = ctx.state
    return build_partition_change(
        topic_id, partition_id, partition,
        target_isr=isr,
        target=ReplicaTarget(tuple(b for b in partition.replicas if b not in adding), (), ()),
        is_acceptable_leader=lambda b: is_acceptable_leader(state, b),
        metadata_version=ctx.metadata_version,
        elr=elr_policy(state, topic_id),
        default_directory=lambda b: default_directory(state, b),
    )
