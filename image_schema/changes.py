"""Row-level history: which table rows each record changes, and at which offset the change is visible.

`ChangeRecorder` observes a `replay.BatchLoader`: before a record is replayed it notes the rows the record
can touch (with their values then); when the loader says the records so far are visible (a plain record,
or the End of a transaction) it reads those rows again and emits a `RowVersion` for each row whose value
changed. An aborted transaction emits nothing. A snapshot load is diffed table by table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from image_schema.tables import TABLES, Key, Values, config_resource_type, mechanism_name
from records import metadata_types as mt
from replay.canonical import quota_entity_text
from replay.client_quotas import quota_entity
from replay.configs import TOPIC, ConfigResource
from replay.delta import STATE_CHANGING_TYPES, MetadataDelta
from replay.features import KRAFT_VERSION
from replay.image import MetadataImage


class RowVersion(NamedTuple):
    """The value `row` (None: deleted) that `table`'s row `key` holds from metadata offset `offset` on.
    A named tuple, not a dataclass: a bootstrap makes one per partition."""

    table: str
    key: Key
    row: Values | None
    offset: int


TouchedRows = Callable[[Any, MetadataDelta], Iterable[tuple[str, Key]]]


def _topic_rows(delta: MetadataDelta, topic_id: str) -> Iterator[tuple[str, Key]]:
    """The topic's own row and every partition row it has now."""
    yield "topics", (topic_id,)
    for partition_id in delta.topics_delta().partition_ids(topic_id):
        yield "partitions", (topic_id, partition_id)


def _removed_topic(record: Any, delta: MetadataDelta) -> Iterator[tuple[str, Key]]:
    topic = delta.topics_delta().topic(record.topic_id)
    yield from _topic_rows(delta, record.topic_id)
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


def _config(record: Any, delta: MetadataDelta) -> Iterator[tuple[str, Key]]:
    resource = ConfigResource(record.resource_type, record.resource_name)
    yield "configs", (config_resource_type(resource), record.resource_name, record.name)


def _feature(record: Any, delta: MetadataDelta) -> Iterator[tuple[str, Key]]:
    if record.name != KRAFT_VERSION:
        yield "features", (record.name,)


def _single(table: str, key: Callable[[Any], Key]) -> TouchedRows:
    def touched(record: Any, delta: MetadataDelta) -> Iterator[tuple[str, Key]]:
        yield table, key(record)

    return touched


TOUCHED_ROWS: dict[type, TouchedRows] = {
    mt.FeatureLevelRecord: _feature,
    mt.RegisterBrokerRecord: _single("brokers", lambda r: (r.broker_id,)),
    mt.UnregisterBrokerRecord: _single("brokers", lambda r: (r.broker_id,)),
    mt.FenceBrokerRecord: _single("brokers", lambda r: (r.id,)),
    mt.UnfenceBrokerRecord: _single("brokers", lambda r: (r.id,)),
    mt.BrokerRegistrationChangeRecord: _single("brokers", lambda r: (r.broker_id,)),
    mt.RegisterControllerRecord: _single("controllers", lambda r: (r.controller_id,)),
    mt.TopicRecord: lambda r, delta: _topic_rows(delta, r.topic_id),
    mt.PartitionRecord: _single("partitions", lambda r: (r.topic_id, r.partition_id)),
    mt.PartitionChangeRecord: _single("partitions", lambda r: (r.topic_id, r.partition_id)),
    mt.RemoveTopicRecord: _removed_topic,
    mt.ClearElrRecord: _cleared_elr,
    mt.ConfigRecord: _config,
    mt.ClientQuotaRecord: _single("client_quotas", lambda r: (quota_entity_text(quota_entity(r)), r.key)),
    mt.ProducerIdsRecord: _single("producer_ids", lambda r: ("cluster",)),
    mt.AccessControlEntryRecord: _single("acls", lambda r: (r.id,)),
    mt.RemoveAccessControlEntryRecord: _single("acls", lambda r: (r.id,)),
    mt.UserScramCredentialRecord: _single("scram_credentials", lambda r: (r.name, mechanism_name(r.mechanism))),
    mt.RemoveUserScramCredentialRecord: _single(
        "scram_credentials", lambda r: (r.name, mechanism_name(r.mechanism))
    ),
    mt.DelegationTokenRecord: _single("delegation_tokens", lambda r: (r.token_id,)),
    mt.RemoveDelegationTokenRecord: _single("delegation_tokens", lambda r: (r.token_id,)),
}


def _check_against_the_delta() -> None:
    """Every record type the delta replays must say which rows it touches, else its changes would never reach
    the history tables; fail on import rather than lose them silently."""
    missing = STATE_CHANGING_TYPES - TOUCHED_ROWS.keys()
    unknown = TOUCHED_ROWS.keys() - STATE_CHANGING_TYPES
    if missing or unknown:
        names = sorted(record_type.__name__ for record_type in missing | unknown)
        raise RuntimeError(f"TOUCHED_ROWS and replay.delta disagree on {', '.join(names)}")


_check_against_the_delta()


def diff_images(before: MetadataImage, after: MetadataImage, offset: int) -> list[RowVersion]:
    """Row versions that turn `before` into `after`; sub-images shared by both are skipped unread."""
    versions: list[RowVersion] = []
    for name, spec in TABLES.items():
        if getattr(before, spec.sub_image) is getattr(after, spec.sub_image):
            continue
        old = dict(spec.image_rows(before))
        new = dict(spec.image_rows(after))
        versions.extend(RowVersion(name, key, None, offset) for key in old.keys() - new.keys())
        versions.extend(RowVersion(name, key, row, offset) for key, row in new.items() if old.get(key) != row)
    return versions


class ChangeRecorder:
    """A LoaderObserver that turns visibility into row versions, collected until `take()`."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, Key], Values | None] = {}
        self._versions: list[RowVersion] = []

    def before_replay(self, offset: int, message: Any, delta: MetadataDelta) -> None:
        touched = TOUCHED_ROWS.get(type(message))
        if touched is None:
            return
        pending = self._pending
        for table_key in touched(message, delta):
            if table_key not in pending:
                pending[table_key] = TABLES[table_key[0]].row(delta, table_key[1])

    def became_visible(self, offset: int, delta: MetadataDelta) -> None:
        if not self._pending:
            return
        for (table, key), before in self._pending.items():
            after = TABLES[table].row(delta, key)
            if after != before:
                self._versions.append(RowVersion(table, key, after, offset))
        self._pending.clear()

    def transaction_aborted(self, offset: int) -> None:
        self._pending.clear()

    def snapshot_loaded(self, before: MetadataImage, after: MetadataImage) -> None:
        self._pending.clear()
        self._versions.extend(diff_images(before, after, after.provenance.offset))

    def take(self) -> list[RowVersion]:
        """The versions recorded since the last call, in offset order."""
        versions, self._versions = self._versions, []
        return versions
