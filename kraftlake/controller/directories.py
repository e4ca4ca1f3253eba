"""JBOD directory assignment (KIP-858, Kafka's ReplicationControlManager.handleAssignReplicasToDirs and
handleDirectoriesOffline): a broker with several log directories tells the controller which directory holds
each of its replicas, and reports directories that failed. A replica in a failed (or unknown) directory
leaves the ISR and leadership as if its broker were fenced for that partition alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.errors import (
    ControllerError,
    InvalidRequestError,
    NotLeaderOrFollowerError,
    UnknownTopicError,
    UnsupportedVersionError,
)
from kraftlake.controller.replication import (
    elr_policy,
    registered_broker,
    removing_broker_change,
)
from kraftlake.controller.versions import MV_3_7_IV2
from kraftlake.controller.working_state import ControllerState
from kraftlake.records import metadata_types as mt
from kraftlake.records.wire import uuid_from_text
from kraftlake.replay.cluster import BrokerRegistration
from kraftlake.replay.topics import PartitionRegistration

TopicIdPartition = tuple[str, int]


@dataclass(frozen=True)
class DirectoryAssignment:
    """One partition of an AssignReplicasToDirs request: which directory of the broker holds its replica."""

    directory: str
    topic_id: str
    partition: int


def assign_replicas_to_dirs(
    ctx: WriteContext, broker_id: int, broker_epoch: int, assignments: Sequence[DirectoryAssignment]
) -> ControllerResult[dict[str, dict[int, ControllerError | None]]]:
    """Per partition (by topic id): None when assigned, else why not."""
    if ctx.metadata_version < MV_3_7_IV2:
        raise UnsupportedVersionError(
            f"directory assignment needs metadata.version {MV_3_7_IV2} or later (the cluster is at "
            f"{ctx.metadata_version})"
        )
    broker = registered_broker(ctx.state, broker_id, broker_epoch)
    state = ctx.state
    records: list[Any] = []
    outcomes: dict[str, dict[int, ControllerError | None]] = {}
    changed: dict[TopicIdPartition, PartitionRegistration] = {}
    offline: list[TopicIdPartition] = []
    for item in assignments:
        key = (item.topic_id, item.partition)
        error: ControllerError | None = None
        partition = changed.get(key) or state.partition(*key)
        if not _is_uuid(item.directory):
            error = InvalidRequestError(f"directory id {item.directory!r} is not a Kafka Uuid")
        elif partition is None:
            error = UnknownTopicError(f"partition {item.topic_id}:{item.partition} does not exist")
        elif broker_id not in partition.replicas:
            error = NotLeaderOrFollowerError(
                f"broker {broker_id} is not a replica of {item.topic_id}:{item.partition}"
            )
        else:
            directories = tuple(
                item.directory if replica == broker_id else directory
                for replica, directory in zip(partition.replicas, partition.directories, strict=True)
            )
            if directories != partition.directories:
                record = mt.PartitionChangeRecord(
                    partition_id=item.partition, topic_id=item.topic_id, directories=directories
                )
                records.append(record)
                changed[key] = partition.merge(record)
            if item.directory not in broker.directories:
                offline.append(key)
        outcomes.setdefault(item.topic_id, {})[item.partition] = error
    records += _leave_isr(ctx, broker_id, offline, changed)
    return ControllerResult(records, outcomes)


def offline_directory_records(
    ctx: WriteContext, broker: BrokerRegistration, offline_dirs: Iterable[str]
) -> list[Any]:
    """For newly failed directories of `broker`: its replicas there leave ISRs and leadership, then the
    broker's registration keeps only its online directories. Nothing when no directory newly failed."""
    failed = set(offline_dirs) & set(broker.directories)
    if not failed:
        return []
    state = ctx.state
    held = [
        key for key in sorted(state.partitions_of_broker.get(broker.broker_id, ()))
        if _directory_of(state, key, broker.broker_id) in failed
    ]
    records = _leave_isr(ctx, broker.broker_id, held, {})
    online = tuple(d for d in broker.directories if d not in failed)
    records.append(mt.BrokerRegistrationChangeRecord(
        broker_id=broker.broker_id, broker_epoch=broker.epoch, fenced=0, in_controlled_shutdown=0, log_dirs=online,
    ))
    return records


def _is_uuid(text: str) -> bool:
    try:
        uuid_from_text(text)
    except ValueError:
        return False
    return True


def _directory_of(state: ControllerState, key: TopicIdPartition, broker_id: int) -> str | None:
    partition = state.partition(*key)
    if partition is None:
        return None
    return dict(zip(partition.replicas, partition.directories, strict=True)).get(broker_id)


def _leave_isr(
    ctx: WriteContext, broker_id: int, keys: Sequence[TopicIdPartition],
    changed: Mapping[TopicIdPartition, PartitionRegistration],
) -> list[Any]:
    """Kafka's generateLeaderAndIsrUpdates with `broker_id` to remove, for these partitions only."""
    state = ctx.state
    records = []
    for topic_id, partition_id in keys:
        partition = changed.get((topic_id, partition_id)) or state.partition(topic_id, partition_id)
        if partition is None:
            continue
        record = removing_broker_change(ctx, topic_id, partition_id, partition, broker_id, elr_policy(state, topic_id))
        if record is not None:
            records.append(record)
    return records
