"""The controller's working state: an image plus a delta holding every record replayed on top of it.

On the active controller the delta holds its own uncommitted records too (Kafka's timeline structures do
the same job): validating a request against it sees the effect of requests ahead of it in the log. The
state is only ever changed by `kraftlake.replay`, so it equals the replay of the log it was built from. Reverse
indexes (broker -> partitions it leads or is in the ISR of, leaderless partitions) make fencing and
elections cost the partitions concerned, not the whole cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kraftlake.records import metadata_types as mt
from kraftlake.replay.cluster import BrokerRegistration, ClusterDelta
from kraftlake.replay.configs import ConfigResource, ConfigurationsDelta
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.features import FeaturesDelta
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.topics import PartitionRegistration, TopicsDelta

TopicPartition = tuple[str, int]  # (topic id, partition id)

_PARTITION_TYPES = (mt.PartitionRecord, mt.PartitionChangeRecord)


class ControllerState:
    def __init__(self, image: MetadataImage) -> None:
        self.base = image
        self.delta = MetadataDelta(image)
        self.partitions_of_broker: dict[int, set[TopicPartition]] = {}
        self.elr_partitions_of_broker: dict[int, set[TopicPartition]] = {}
        self.leaderless: set[TopicPartition] = set()
        self.reassigning: set[TopicPartition] = set()
        for topic in image.topics.by_id.values():
            for partition_id, partition in topic.partitions.items():
                self._index((topic.topic_id, partition_id), None, partition)

    def rebase(self, image: MetadataImage) -> None:
        """Start a fresh delta on `image`, which must hold exactly this state (nothing in flight): keeps the
        indexes, which rebuilding from the image would cost a pass over every partition."""
        self.base = image
        self.delta = MetadataDelta(image)

    # -- reads -------------------------------------------------------------------------------------------

    @property
    def topics(self) -> TopicsDelta:
        return self.delta.topics_delta()

    @property
    def cluster(self) -> ClusterDelta:
        return self.delta.cluster_delta()

    @property
    def configs_delta(self) -> ConfigurationsDelta:
        return self.delta.configs_delta()

    @property
    def features(self) -> FeaturesDelta:
        return self.delta.features_delta()

    @property
    def metadata_version(self) -> int | None:
        return self.features.level("metadata.version")

    def feature_level(self, name: str) -> int:
        return self.features.level(name) or 0

    def topic_id(self, name: str) -> str | None:
        topics = self.topics
        created = topics.created.get(name)
        if created is not None:
            return created
        topic = topics.image.by_name.get(name)
        return None if topic is None or topic.topic_id in topics.deleted else topic.topic_id

    def topic_name(self, topic_id: str) -> str | None:
        topic = self.topics.topic(topic_id)
        return None if topic is None else topic.name

    def topic_names(self) -> list[str]:
        topics = self.topics
        return sorted(t.name for t in (topics.topic(tid) for tid in topics.live_topic_ids()) if t is not None)

    def partition(self, topic_id: str, partition_id: int) -> PartitionRegistration | None:
        return self.topics.partition(topic_id, partition_id)

    def partition_ids(self, topic_id: str) -> list[int]:
        return self.topics.partition_ids(topic_id)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.cluster.broker(broker_id)

    def brokers(self) -> Iterator[BrokerRegistration]:
        cluster = self.cluster
        for broker_id in sorted(set(cluster.image.brokers) | set(cluster.broker_changes)):
            broker = cluster.broker(broker_id)
            if broker is not None:
                yield broker

    def configs(self, resource_type: int, resource_name: str) -> dict[str, str]:
        return dict(self.configs_delta.configs(ConfigResource(resource_type, resource_name)))

    # -- the one way to change it --------------------------------------------------------------------------

    def replay(self, message: Any) -> None:
        kind = type(message)
        if kind in _PARTITION_TYPES:
            key = (message.topic_id, message.partition_id)
            before = self.partition(*key)
            self.delta.replay(message)
            self._index(key, before, self.partition(*key))
        elif kind is mt.ClearElrRecord:
            keys = [(topic_id, p) for held in self.elr_partitions_of_broker.values() for topic_id, p in held]
            cleared = {key: self.partition(*key) for key in keys}
            self.delta.replay(message)
            for key, partition in cleared.items():
                self._index(key, partition, self.partition(*key))
        elif kind is mt.RemoveTopicRecord:
            doomed = [(message.topic_id, p, self.partition(message.topic_id, p))
                      for p in self.partition_ids(message.topic_id)]
            self.delta.replay(message)
            for topic_id, partition_id, before in doomed:
                self._index((topic_id, partition_id), before, None)
        else:
            self.delta.replay(message)

    def _index(self, key: TopicPartition, before: PartitionRegistration | None,
               after: PartitionRegistration | None) -> None:
        _reindex(self.partitions_of_broker, key, _members(before), _members(after))
        _reindex(self.elr_partitions_of_broker, key, _elr_members(before), _elr_members(after))
        if after is not None and after.leader < 0:
            self.leaderless.add(key)
        else:
            self.leaderless.discard(key)
        if after is not None and (after.adding_replicas or after.removing_replicas):
            self.reassigning.add(key)
        else:
            self.reassigning.discard(key)


def _reindex(index: dict[int, set[TopicPartition]], key: TopicPartition, old: set[int], new: set[int]) -> None:
    for broker_id in old - new:
        held = index.get(broker_id)
        if held is not None:
            held.discard(key)
    for broker_id in new - old:
        index.setdefault(broker_id, set()).add(key)


def _elr_members(partition: PartitionRegistration | None) -> set[int]:
    return set() if partition is None else set(partition.elr)


def _members(partition: PartitionRegistration | None) -> set[int]:
    if partition is None:
        return set()
    members = set(partition.isr)
    if partition.leader >= 0:
        members.add(partition.leader)
    return members
