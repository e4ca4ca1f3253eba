"""The topics and partitions tables: the topics sub-image, partitions flattened one row each (the hot path
of a bootstrap: a million-partition image builds a million rows)."""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from kraftlake.image_schema.configs import config_resource_type
from kraftlake.image_schema.spec import INTS, STRINGS, Key, Row, SubImageTables, TableRows, TableSpec, Values, single
from kraftlake.records import metadata_types as mt
from kraftlake.replay.configs import TOPIC, ConfigResource
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.topics import PartitionRegistration, TopicImage, TopicsImage


def partition_values(topic_id: str, topic_name: str, partition_id: int, p: PartitionRegistration) -> Values:
    """The partitions row, in schema order (the hot path of a bootstrap: one tuple, nothing copied)."""
    return (
        topic_id,
        topic_name,
        partition_id,
        p.replicas,
        p.directories,
        p.isr,
        p.removing_replicas,
        p.adding_replicas,
        p.elr,
        p.last_known_elr,
        p.leader,
        p.leader_recovery_state,
        p.leader_epoch,
        p.partition_epoch,
    )


def _topic_rows(image: MetadataImage) -> Iterator[tuple[Key, Values]]:
    for topic in image.topics.by_id.values():
        yield (topic.topic_id,), (topic.topic_id, topic.name)


def _partition_rows(image: MetadataImage) -> Iterator[tuple[Key, Values]]:
    for topic in image.topics.by_id.values():
        for partition_id, partition in topic.partitions.items():
            yield (topic.topic_id, partition_id), partition_values(topic.topic_id, topic.name, partition_id, partition)


def _topic_row(delta: MetadataDelta, key: Key) -> Values | None:
    topic = delta.topics_delta().topic(key[0])
    return None if topic is None else (topic.topic_id, topic.name)


def _partition_row(delta: MetadataDelta, key: Key) -> Values | None:
    found = delta.topics_delta().named_partition(key[0], key[1])
    return None if found is None else partition_values(key[0], found[0], key[1], found[1])


# -- rows each record touches ---------------------------------------------------------------------------

_PARTITION_KEY = attrgetter("topic_id", "partition_id")  # a record's partitions key, in one C call


def _topic_and_partitions(delta: MetadataDelta, topic_id: str) -> Iterator[tuple[str, Key]]:
    """The topic's own row and every partition row it has now."""
    yield "topics", (topic_id,)
    for partition_id in delta.topics_delta().partition_ids(topic_id):
        yield "partitions", (topic_id, partition_id)


def _removed_topic(record: Any, delta: MetadataDelta) -> Iterator[tuple[str, Key]]:
    """The topic, its partitions, and its configs (the delta deletes those with it)."""
    topic = delta.topics_delta().topic(record.topic_id)
    yield from _topic_and_partitions(delta, record.topic_id)
    if topic is not None:
        resource = ConfigResource(TOPIC, topic.name)
        for name in delta.configs_delta().configs(resource):
            yield "configs", (config_resource_type(resource), topic.name, name)


def _cleared_elr(record: Any, delta: MetadataDelta) -> Iterator[tuple[str, Key]]:
    topics = delta.topics_delta()
    for topic_id in topics.live_topic_ids():
        topic = topics.topic(topic_id)
        if topic is None or (record.topic_name and topic.name != record.topic_name):
            continue
        for partition_id in topics.partition_ids(topic_id):
            partition = topics.partition(topic_id, partition_id)
            if partition is not None and (partition.elr or partition.last_known_elr):
                yield "partitions", (topic_id, partition_id)


# -- the sub-image back from rows -----------------------------------------------------------------------


def _partition(r: Row) -> PartitionRegistration:
    def ints(name: str) -> tuple[int, ...]:
        return tuple(r[name] or ())

    return PartitionRegistration(
        replicas=ints("replicas"),
        directories=tuple(r["directories"] or ()),
        isr=ints("isr"),
        removing_replicas=ints("removing_replicas"),
        adding_replicas=ints("adding_replicas"),
        elr=ints("elr"),
        last_known_elr=ints("last_known_elr"),
        leader=r["leader"],
        leader_recovery_state=r["leader_recovery_state"],
        leader_epoch=r["leader_epoch"],
        partition_epoch=r["partition_epoch"],
    )


def _rebuild(tables: TableRows) -> TopicsImage:
    partitions: dict[str, dict[int, PartitionRegistration]] = {}
    for r in tables.get("partitions", ()):
        partitions.setdefault(r["topic_id"], {})[r["partition_id"]] = _partition(r)
    by_id = {
        r["topic_id"]: TopicImage(r["name"], r["topic_id"], MappingProxyType(partitions.get(r["topic_id"], {})))
        for r in tables.get("topics", ())
    }
    return TopicsImage(MappingProxyType(by_id), MappingProxyType({t.name: t for t in by_id.values()}))


TOPICS = SubImageTables(
    "topics",
    (
        TableSpec(
            "topics",
            "topics",
            ("topic_id",),
            pa.schema([("topic_id", pa.string()), ("name", pa.string())]),
            _topic_rows,
            _topic_row,
        ),
        TableSpec(
            "partitions",
            "topics",
            ("topic_id", "partition_id"),
            pa.schema([
                ("topic_id", pa.string()),
                ("topic_name", pa.string()),
                ("partition_id", pa.int32()),
                ("replicas", INTS),
                ("directories", STRINGS),
                ("isr", INTS),
                ("removing_replicas", INTS),
                ("adding_replicas", INTS),
                ("elr", INTS),
                ("last_known_elr", INTS),
                ("leader", pa.int32()),
                ("leader_recovery_state", pa.int8()),
                ("leader_epoch", pa.int32()),
                ("partition_epoch", pa.int32()),
            ]),
            _partition_rows,
            _partition_row,
        ),
    ),
    {
        mt.TopicRecord: lambda r, delta: _topic_and_partitions(delta, r.topic_id),
        mt.PartitionRecord: single("partitions", _PARTITION_KEY),
        mt.PartitionChangeRecord: single("partitions", _PARTITION_KEY),
        mt.RemoveTopicRecord: _removed_topic,
        mt.ClearElrRecord: _cleared_elr,
    },
    _rebuild,
)
