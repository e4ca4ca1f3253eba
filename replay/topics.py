"""Topics and partitions, with Kafka's TopicsDelta / PartitionRegistration.merge semantics.

A topic re-created under a new id replaces the old one; PartitionChangeRecord fields that are absent
(null, leader -2, recovery state -1) leave the partition unchanged; a leader change bumps the leader epoch
and every change bumps the partition epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from kraftlake.records.kafka_names import MIGRATING_DIRECTORY
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.mapping import copied, empty_map, merged

NO_LEADER_CHANGE = -2
NO_RECOVERY_STATE_CHANGE = -1


class PartitionRegistration(NamedTuple):
    replicas: tuple[int, ...]
    directories: tuple[str, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int

    @classmethod
    def from_record(cls, record: Any) -> PartitionRegistration:
        replicas = record.replicas
        return _new_partition(cls, (  # positional: the replay hot path (see bench/bench_replay.py)
            replicas,
            record.directories or _MIGRATING[len(replicas)],
            record.isr,
            record.removing_replicas,
            record.adding_replicas,
            record.eligible_leader_replicas or (),
            record.last_known_elr or (),
            record.leader,
            record.leader_recovery_state,
            record.leader_epoch,
            record.partition_epoch,
        ))

    def merge(self, change: Any) -> PartitionRegistration:
        (replicas, directories, isr, removing, adding, elr, last_known_elr, leader, recovery, leader_epoch,
         partition_epoch) = self
        if change.replicas is not None or change.directories is not None:
            replicas = replicas if change.replicas is None else change.replicas
            directories = _placed(replicas, directories if change.directories is None else change.directories)
        if change.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = change.leader, leader_epoch + 1
        if change.leader_recovery_state != NO_RECOVERY_STATE_CHANGE:
            recovery = change.leader_recovery_state
        return _new_partition(PartitionRegistration, (
            replicas,
            directories,
            isr if change.isr is None else change.isr,
            removing if change.removing_replicas is None else change.removing_replicas,
            adding if change.adding_replicas is None else change.adding_replicas,
            elr if change.eligible_leader_replicas is None else change.eligible_leader_replicas,
            last_known_elr if change.last_known_elr is None else change.last_known_elr,
            leader,
            recovery,
            leader_epoch,
            partition_epoch + 1,
        ))

    def cleared_elr(self) -> PartitionRegistration:
        """The partition after ClearElrRecord: a merge of empty ELR lists (so the partition epoch moves)."""
        return self._replace(elr=(), last_known_elr=(), partition_epoch=self.partition_epoch + 1)


def _placed(replicas: tuple[int, ...], directories: tuple[str, ...]) -> tuple[str, ...]:
    """Kafka's merge of a replica or directory change: the record's directories, else the partition's as they
    were (Kafka does not move them with their replicas); all MIGRATING (or none) stretch to the replicas."""
    if set(directories) <= {MIGRATING_DIRECTORY}:
        return _MIGRATING[len(replicas)]
    if len(directories) != len(replicas):
        raise ReplayError("The lengths for replicas and directories do not match")
    return directories


_new_partition = tuple.__new__


class _Migrating(dict[int, tuple[str, ...]]):
    """Kafka fills a missing directory list (records before 3.7-IV2) with MIGRATING per replica: one shared
    tuple per replica count (a million partitions need not hold a million copies), found by a subscript
    (no Python call on the replay hot path)."""

    def __missing__(self, replica_count: int) -> tuple[str, ...]:
        directories = self[replica_count] = (MIGRATING_DIRECTORY,) * replica_count
        return directories


_MIGRATING = _Migrating()


@dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: str
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=empty_map)


@dataclass(frozen=True)
class TopicsImage:
    by_id: Mapping[str, TopicImage] = field(default_factory=empty_map)
    by_name: Mapping[str, TopicImage] = field(default_factory=empty_map)

    def is_empty(self) -> bool:
        return not self.by_id

    def partition_count(self) -> int:
        return sum(len(topic.partitions) for topic in self.by_id.values())


class TopicDelta:
    """Changes to one topic. `image` is the topic as it stood when the delta first touched it."""

    __slots__ = ("image", "partition_changes")

    def __init__(self, image: TopicImage) -> None:
        self.image = image
        self.partition_changes: dict[int, PartitionRegistration] = {}

    def partition(self, partition_id: int) -> PartitionRegistration | None:
        found = self.partition_changes.get(partition_id)
        return found if found is not None else self.image.partitions.get(partition_id)

    def clear_elr(self) -> None:
        for partition_id in set(self.partition_changes) | set(self.image.partitions):
            partition = self.partition(partition_id)
            if partition is not None and (partition.elr or partition.last_known_elr):
                self.partition_changes[partition_id] = partition.cleared_elr()

    def apply(self) -> TopicImage:
        return TopicImage(self.image.name, self.image.topic_id, merged(self.image.partitions, self.partition_changes))


class TopicsDelta:
    def __init__(self, image: TopicsImage) -> None:
        self.image = image
        self.changed: dict[str, TopicDelta] = {}
        self.deleted: set[str] = set()
        self.created: dict[str, str] = {}  # name -> id of topics created by this delta

    def topic(self, topic_id: str) -> TopicImage | None:
        """The topic as this delta leaves it (its partitions may be stale: ask `partition`)."""
        delta = self.changed.get(topic_id)
        if delta is not None:
            return delta.image
        return None if topic_id in self.deleted else self.image.by_id.get(topic_id)

    def partition(self, topic_id: str, partition_id: int) -> PartitionRegistration | None:
        delta = self.changed.get(topic_id)
        if delta is not None:
            return delta.partition(partition_id)
        topic = None if topic_id in self.deleted else self.image.by_id.get(topic_id)
        return None if topic is None else topic.partitions.get(partition_id)

    def named_partition(self, topic_id: str, partition_id: int) -> tuple[str, PartitionRegistration] | None:
        """(topic name, partition) as this delta leaves them, None if either is gone: `topic` and `partition`
        in one lookup, for the change recorder (two per record of a bootstrap)."""
        delta = self.changed.get(topic_id)
        if delta is not None:
            name = delta.image.name
            partition = delta.partition_changes.get(partition_id) or delta.image.partitions.get(partition_id)
        else:
            topic = None if topic_id in self.deleted else self.image.by_id.get(topic_id)
            if topic is None:
                return None
            name = topic.name
            partition = topic.partitions.get(partition_id)
        return None if partition is None else (name, partition)

    def partition_ids(self, topic_id: str) -> list[int]:
        delta = self.changed.get(topic_id)
        if delta is not None:
            return sorted(set(delta.partition_changes) | set(delta.image.partitions))
        topic = None if topic_id in self.deleted else self.image.by_id.get(topic_id)
        return [] if topic is None else list(topic.partitions)

    def live_topic_ids(self) -> list[str]:
        live = [topic_id for topic_id in self.image.by_id if topic_id not in self.deleted]
        return list(dict.fromkeys([*live, *self.changed]))

    def _topic_delta(self, topic_id: str) -> TopicDelta:
        delta = self.changed.get(topic_id)
        if delta is None:
            topic = self.image.by_id.get(topic_id)
            if topic is None or topic_id in self.deleted:
                raise ReplayError(f"Unable to find topic with id {topic_id}")
            delta = self.changed[topic_id] = TopicDelta(topic)
        return delta

    def replay_topic(self, record: Any) -> None:
        self.changed[record.topic_id] = TopicDelta(TopicImage(record.name, record.topic_id))
        self.created[record.name] = record.topic_id

    def replay_partition(self, record: Any) -> None:
        delta = self.changed.get(record.topic_id) or self._topic_delta(record.topic_id)
        delta.partition_changes[record.partition_id] = PartitionRegistration.from_record(record)

    def replay_partition_change(self, record: Any) -> None:
        delta = self.changed.get(record.topic_id) or self._topic_delta(record.topic_id)
        changes = delta.partition_changes
        partition = changes.get(record.partition_id) or delta.image.partitions.get(record.partition_id)
        if partition is None:
            raise ReplayError(f"Unable to find partition {record.topic_id}:{record.partition_id}")
        changes[record.partition_id] = partition.merge(record)

    def replay_remove_topic(self, record: Any) -> str:
        """Removes the topic; returns its name (its configs go with it)."""
        topic_id = record.topic_id
        delta = self.changed.pop(topic_id, None)
        if delta is not None:
            name = delta.image.name
            if self.created.get(name) == topic_id:
                del self.created[name]
            if topic_id in self.image.by_id:
                self.deleted.add(topic_id)
            return name
        topic = self.image.by_id.get(topic_id)
        if topic is None or topic_id in self.deleted:
            raise ReplayError(f"Unable to delete topic with id {topic_id}: no such topic found.")
        self.deleted.add(topic_id)
        return topic.name

    def replay_clear_elr(self, record: Any) -> None:
        if record.topic_name:
            topic_id = self.created.get(record.topic_name)
            if topic_id is None:
                topic = self.image.by_name.get(record.topic_name)
                topic_id = topic.topic_id if topic is not None and topic.topic_id not in self.deleted else None
            if topic_id is None:
                raise ReplayError(
                    f"Unable to clear elr for topic with name {record.topic_name}: no such topic found."
                )
            self._topic_delta(topic_id).clear_elr()
            return
        live = [topic_id for topic_id in self.image.by_id if topic_id not in self.deleted]
        for topic_id in dict.fromkeys([*live, *self.created.values()]):
            if self._has_elr(topic_id):
                self._topic_delta(topic_id).clear_elr()

    def _has_elr(self, topic_id: str) -> bool:
        """Whether clearing ELRs would change the topic (skips a delta per untouched topic of a big image)."""
        delta = self.changed.get(topic_id)
        topics = (delta.partition(p) for p in delta.partition_changes) if delta is not None else ()
        image_topic = self.image.by_id.get(topic_id)
        partitions = [*topics, *(image_topic.partitions.values() if image_topic is not None else ())]
        return any(p is not None and (p.elr or p.last_known_elr) for p in partitions)

    def finish_snapshot(self) -> None:
        for topic_id in self.image.by_id:
            if topic_id not in self.changed:
                self.deleted.add(topic_id)

    def apply(self) -> TopicsImage:
        if not self.changed and not self.deleted:
            return self.image
        by_id = copied(self.image.by_id)
        by_name = copied(self.image.by_name)
        for topic_id in self.deleted:
            topic = by_id.pop(topic_id, None)
            if topic is not None and by_name.get(topic.name) is topic:
                del by_name[topic.name]
        for topic_id, delta in self.changed.items():
            topic = delta.apply()
            previous = by_id.get(topic_id)
            if previous is not None and previous.name != topic.name and by_name.get(previous.name) is previous:
                del by_name[previous.name]
            replaced = by_name.get(topic.name)
            if replaced is not None and replaced.topic_id != topic_id:
                by_id.pop(replaced.topic_id, None)
            by_id[topic_id] = topic
            by_name[topic.name] = topic
        return TopicsImage(MappingProxyType(by_id), MappingProxyType(by_name))
