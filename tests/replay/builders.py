"""Small builders for replay tests: records, batches, a recording publisher, one-delta replay.

Named after the notation of ../shared/reference/loader-test-cases.md (B, E, A, N, T(x), P(x, i), MV) so a test
reads like the scenario it restates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from records import RecordBatch, make_batch
from records import metadata_types as mt
from records.wire import uuid_to_text
from replay.delta import MetadataDelta
from replay.image import EMPTY_IMAGE, MetadataImage, Provenance
from replay.loader import Manifest


def uuid(n: int) -> str:
    """A valid, readable base64 UUID for the n-th test entity (never the reserved ids 0..99)."""
    return uuid_to_text((n + 1000).to_bytes(16, "big"))


def B(name: str = "txn") -> Any:
    return mt.BeginTransactionRecord(name=name)


def E() -> Any:
    return mt.EndTransactionRecord()


def A(reason: str = "aborted") -> Any:
    return mt.AbortTransactionRecord(reason=reason)


def N() -> Any:
    return mt.NoOpRecord()


def MV(level: int = 7) -> Any:
    return mt.FeatureLevelRecord(name="metadata.version", feature_level=level)


def T(name: str, topic_id: str | None = None) -> Any:
    return mt.TopicRecord(name=name, topic_id=topic_id or topic_id_of(name))


def P(
    topic: str,
    partition_id: int,
    replicas: Sequence[int] = (0, 1, 2),
    *,
    topic_id: str | None = None,
    isr: Sequence[int] | None = None,
    leader: int | None = None,
    leader_epoch: int = 0,
    partition_epoch: int = 0,
    **fields: Any,
) -> Any:
    return mt.PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id or topic_id_of(topic),
        replicas=tuple(replicas),
        isr=tuple(replicas if isr is None else isr),
        leader=replicas[0] if leader is None else leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        **fields,
    )


def change(topic: str, partition_id: int, *, topic_id: str | None = None, **fields: Any) -> Any:
    """A PartitionChangeRecord: every field not given is absent (null, leader -2, recovery state -1)."""
    return mt.PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id or topic_id_of(topic), **fields)


def remove(topic: str, topic_id: str | None = None) -> Any:
    return mt.RemoveTopicRecord(topic_id=topic_id or topic_id_of(topic))


_TOPIC_IDS: dict[str, str] = {}


def topic_id_of(name: str) -> str:
    """A stable id per topic name, so scenarios can say T("foo") and P("foo", 0)."""
    return _TOPIC_IDS.setdefault(name, uuid(len(_TOPIC_IDS) + 1))


def data(base: int, epoch: int, size: int, messages: Sequence[Any], append_time_ms: int = 0) -> RecordBatch:
    """`Batch.data(base, epoch, appendTs, sizeInBytes, records)` of the scenarios."""
    return dataclasses.replace(make_batch(base, epoch, append_time_ms, list(messages)), size_in_bytes=size)


def control(base: int, epoch: int, size: int, messages: Sequence[Any], append_time_ms: int = 0) -> RecordBatch:
    batch = make_batch(base, epoch, append_time_ms, list(messages), control=True)
    return dataclasses.replace(batch, size_in_bytes=size)


def apply_records(records: Iterable[Any], image: MetadataImage = EMPTY_IMAGE, offset: int = 0) -> MetadataImage:
    """`records` replayed into one delta on `image` and applied (no transactions: markers are the loader's)."""
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(Provenance(offset, 1, 0, True))


@dataclasses.dataclass
class Published:
    delta: MetadataDelta
    image: MetadataImage
    manifest: Manifest


class Recorder:
    """A publisher that keeps every (delta, image, manifest) it is handed."""

    def __init__(self) -> None:
        self.updates: list[Published] = []

    def __call__(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        self.updates.append(Published(delta, image, manifest))

    @property
    def latest(self) -> Published:
        return self.updates[-1]

    def __len__(self) -> int:
        return len(self.updates)
