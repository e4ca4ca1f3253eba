"""One Delta table per sub-image: its Arrow schema, its key, and how image state becomes its rows.

Rows carry no secret: SCRAM salts and keys never leave `replay`, and config values whose name marks them
sensitive are written as "[redacted]". Every table can produce its rows from a whole image (a snapshot,
a first publish) or one row by key from a delta being replayed (record-level history).

A row on its way to Delta is a tuple of its column values in schema order (`Values`), not a dict: a
bootstrap builds and compares a million of them, and Arrow columns are their transpose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa

from replay.acls import StandardAcl
from replay.canonical import config_value, quota_entity_text
from replay.client_quotas import QuotaEntity
from replay.cluster import BrokerRegistration, ControllerRegistration
from replay.configs import RESOURCE_TYPE_NAMES, ConfigResource
from replay.delegation_tokens import DelegationToken
from replay.delta import MetadataDelta
from replay.fields import plain
from replay.image import MetadataImage
from replay.scram import MECHANISMS, ScramKey
from replay.topics import PartitionRegistration

Key = tuple[Any, ...]
Row = dict[str, Any]
Values = tuple[Any, ...]  # a row's column values, in the order of its table's schema

_ENDPOINT = pa.struct(
    [("name", pa.string()), ("host", pa.string()), ("port", pa.int32()), ("security_protocol", pa.int16())]
)
_FEATURE_RANGE = pa.struct(
    [("name", pa.string()), ("min_supported_version", pa.int16()), ("max_supported_version", pa.int16())]
)
_INTS = pa.list_(pa.int32())
_STRINGS = pa.list_(pa.string())
RESOURCE_TYPE_IDS = {name: type_id for type_id, name in RESOURCE_TYPE_NAMES.items()}


@dataclass(frozen=True)
class TableSpec:
    """A table of one sub-image: `key` columns identify a row; `image_rows` lists them all; `row` reads one."""

    name: str
    sub_image: str  # the MetadataImage field its rows come from: a delta that leaves it alone changes none
    key: tuple[str, ...]
    schema: pa.Schema
    image_rows: Callable[[MetadataImage], Iterator[tuple[Key, Values]]]
    row: Callable[[MetadataDelta, Key], Values | None]

    @cached_property
    def _key_positions(self) -> tuple[int, ...]:
        return tuple(self.schema.names.index(column) for column in self.key)

    def key_only(self, key: Key) -> Values:
        """A row holding only `key` (other columns null): what a deletion writes."""
        values: list[Any] = [None] * len(self.schema)
        for position, part in zip(self._key_positions, key, strict=True):
            values[position] = part
        return tuple(values)

    def arrow(self, rows: Sequence[Values]) -> pa.Table:
        """Rows as an Arrow table of this schema, built column by column."""
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in self.schema]
        arrays = [pa.array(column, type=field.type) for column, field in zip(columns, self.schema, strict=True)]
        return pa.Table.from_arrays(arrays, schema=self.schema)


# -- row builders -------------------------------------------------------------------------------------


def broker_row(broker: BrokerRegistration) -> Row:
    return plain(broker)


def controller_row(controller: ControllerRegistration) -> Row:
    return plain(controller)


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


def config_resource(resource_type: str, resource_name: str) -> ConfigResource:
    """The resource a configs row names (a type Kafka adds later is kept as its number)."""
    type_id = RESOURCE_TYPE_IDS.get(resource_type)
    return ConfigResource(int(resource_type) if type_id is None else type_id, resource_name)


def config_resource_type(resource: ConfigResource) -> str:
    return RESOURCE_TYPE_NAMES.get(resource.resource_type, str(resource.resource_type))


def config_row(resource: ConfigResource, name: str, value: str) -> Row:
    return {
        "resource_type": config_resource_type(resource),
        "resource_name": resource.resource_name,
        "name": name,
        "value": config_value(name, value),
    }


def quota_row(entity: QuotaEntity, key: str, value: float) -> Row:
    return {
        "entity": quota_entity_text(entity),
        "entity_parts": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
        "key": key,
        "value": value,
    }


def acl_row(acl_id: str, acl: StandardAcl) -> Row:
    return {"acl_id": acl_id, **plain(acl)}


def scram_row(key: ScramKey, iterations: int) -> Row:
    return {"user": key.user, "mechanism": mechanism_name(key.mechanism), "iterations": iterations}


def mechanism_name(mechanism: int) -> str:
    return MECHANISMS.get(mechanism, str(mechanism))


def mechanism_id(name: str) -> int:
    """The inverse of `mechanism_name` (a mechanism Kafka adds later is kept as its number)."""
    found = next((mechanism for mechanism, known in MECHANISMS.items() if known == name), None)
    return int(name) if found is None else found


def token_row(token: DelegationToken) -> Row:
    return plain(token)


# -- whole-image rows ---------------------------------------------------------------------------------


def _feature_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    features = image.features
    if features.metadata_version is not None:
        yield ("metadata.version",), {"name": "metadata.version", "level": features.metadata_version}
    for name, level in features.finalized.items():
        yield (name,), {"name": name, "level": level}


def _broker_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for broker_id, broker in image.cluster.brokers.items():
        yield (broker_id,), broker_row(broker)


def _controller_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for controller_id, controller in image.cluster.controllers.items():
        yield (controller_id,), controller_row(controller)


def _topic_rows(image: MetadataImage) -> Iterator[tuple[Key, Values]]:
    for topic in image.topics.by_id.values():
        yield (topic.topic_id,), (topic.topic_id, topic.name)


def _partition_rows(image: MetadataImage) -> Iterator[tuple[Key, Values]]:
    for topic in image.topics.by_id.values():
        for partition_id, partition in topic.partitions.items():
            yield (topic.topic_id, partition_id), partition_values(topic.topic_id, topic.name, partition_id, partition)


def _config_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for resource, configs in image.configs.resources.items():
        for name, value in configs.items():
            yield (config_resource_type(resource), resource.resource_name, name), config_row(resource, name, value)


def _quota_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for entity, quotas in image.client_quotas.entities.items():
        for key, value in quotas.items():
            yield (quota_entity_text(entity), key), quota_row(entity, key, value)


def _producer_id_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    if not image.producer_ids.is_empty():
        yield ("cluster",), {"scope": "cluster", "next_producer_id": image.producer_ids.next_producer_id}


def _acl_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for acl_id, acl in image.acls.acls.items():
        yield (acl_id,), acl_row(acl_id, acl)


def _scram_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for key, credential in image.scram.credentials.items():
        yield (key.user, mechanism_name(key.mechanism)), scram_row(key, credential.iterations)


def _token_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for token_id, token in image.delegation_tokens.tokens.items():
        yield (token_id,), token_row(token)


# -- one row from a delta being replayed -------------------------------------------------------------


def _feature_row(delta: MetadataDelta, key: Key) -> Row | None:
    level = delta.features_delta().level(key[0])
    return None if level is None else {"name": key[0], "level": level}


def _broker_row(delta: MetadataDelta, key: Key) -> Row | None:
    broker = delta.cluster_delta().broker(key[0])
    return None if broker is None else broker_row(broker)


def _controller_row(delta: MetadataDelta, key: Key) -> Row | None:
    controller = delta.cluster_delta().controller(key[0])
    return None if controller is None else controller_row(controller)


def _topic_row(delta: MetadataDelta, key: Key) -> Values | None:
    topic = delta.topics_delta().topic(key[0])
    return None if topic is None else (topic.topic_id, topic.name)


def _partition_row(delta: MetadataDelta, key: Key) -> Values | None:
    topics = delta.topics_delta()
    topic = topics.topic(key[0])
    if topic is None:
        return None
    partition = topics.partition(key[0], key[1])
    return None if partition is None else partition_values(key[0], topic.name, key[1], partition)


def _config_row(delta: MetadataDelta, key: Key) -> Row | None:
    resource = config_resource(key[0], key[1])
    value = delta.configs_delta().configs(resource).get(key[2])
    return None if value is None else config_row(resource, key[2], value)


def _quota_row(delta: MetadataDelta, key: Key) -> Row | None:
    entity = parse_quota_entity(key[0])
    value = delta.client_quotas_delta().quotas(entity).get(key[1])
    return None if value is None else quota_row(entity, key[1], value)


def parse_quota_entity(text: str) -> QuotaEntity:
    """The inverse of `quota_entity_text` (entity names never hold ',' or '=' in Kafka)."""
    parts = [part.split("=", 1) for part in text.split(",")] if text else []
    return tuple((kind, None if name == "<default>" else name) for kind, name in parts)


def _producer_id_row(delta: MetadataDelta, key: Key) -> Row | None:
    next_id = delta.producer_ids_delta().next_producer_id
    return None if next_id == -1 else {"scope": "cluster", "next_producer_id": next_id}


def _acl_row(delta: MetadataDelta, key: Key) -> Row | None:
    acl = delta.acls_delta().acl(key[0])
    return None if acl is None else acl_row(key[0], acl)


def _scram_row(delta: MetadataDelta, key: Key) -> Row | None:
    scram_key = ScramKey(key[0], mechanism_id(key[1]))
    credential = delta.scram_delta().credential(scram_key)
    return None if credential is None else scram_row(scram_key, credential.iterations)


def _token_row(delta: MetadataDelta, key: Key) -> Row | None:
    token = delta.delegation_tokens_delta().token(key[0])
    return None if token is None else token_row(token)


def _dict_table(
    name: str,
    sub_image: str,
    key: tuple[str, ...],
    schema: pa.Schema,
    dict_rows: Callable[[MetadataImage], Iterator[tuple[Key, Row]]],
    dict_row: Callable[[MetadataDelta, Key], Row | None],
) -> TableSpec:
    """A small table whose rows are built as dicts (readable), handed out as `Values`."""

    def image_rows(image: MetadataImage) -> Iterator[tuple[Key, Values]]:
        for row_key, row in dict_rows(image):
            yield row_key, tuple(row[column] for column in schema.names)

    def row(delta: MetadataDelta, row_key: Key) -> Values | None:
        found = dict_row(delta, row_key)
        return None if found is None else tuple(found[column] for column in schema.names)

    return TableSpec(name, sub_image, key, schema, image_rows, row)


TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        _dict_table(
            "features", "features", ("name",), pa.schema([("name", pa.string()), ("level", pa.int16())]), _feature_rows,
            _feature_row,
        ),
        _dict_table(
            "brokers", "cluster",
            ("broker_id",),
            pa.schema([
                ("broker_id", pa.int32()),
                ("epoch", pa.int64()),
                ("incarnation_id", pa.string()),
                ("listeners", pa.list_(_ENDPOINT)),
                ("supported_features", pa.list_(_FEATURE_RANGE)),
                ("rack", pa.string()),
                ("fenced", pa.bool_()),
                ("in_controlled_shutdown", pa.bool_()),
                ("is_migrating_zk_broker", pa.bool_()),
                ("directories", _STRINGS),
            ]),
            _broker_rows,
            _broker_row,
        ),
        _dict_table(
            "controllers", "cluster",
            ("controller_id",),
            pa.schema([
                ("controller_id", pa.int32()),
                ("incarnation_id", pa.string()),
                ("zk_migration_ready", pa.bool_()),
                ("listeners", pa.list_(_ENDPOINT)),
                ("supported_features", pa.list_(_FEATURE_RANGE)),
            ]),
            _controller_rows,
            _controller_row,
        ),
        TableSpec(
            "topics",
            "topics",
            ("topic_id",),
            pa.schema([("topic_id", pa.string()), ("name", pa.string())]),
            _topic_rows,
            _topic_row,
        ),
        TableSpec(
            "partitions", "topics",
            ("topic_id", "partition_id"),
            pa.schema([
                ("topic_id", pa.string()),
                ("topic_name", pa.string()),
                ("partition_id", pa.int32()),
                ("replicas", _INTS),
                ("directories", _STRINGS),
                ("isr", _INTS),
                ("removing_replicas", _INTS),
                ("adding_replicas", _INTS),
                ("elr", _INTS),
                ("last_known_elr", _INTS),
                ("leader", pa.int32()),
                ("leader_recovery_state", pa.int8()),
                ("leader_epoch", pa.int32()),
                ("partition_epoch", pa.int32()),
            ]),
            _partition_rows,
            _partition_row,
        ),
        _dict_table(
            "configs", "configs",
            ("resource_type", "resource_name", "name"),
            pa.schema([
                ("resource_type", pa.string()),
                ("resource_name", pa.string()),
                ("name", pa.string()),
                ("value", pa.string()),
            ]),
            _config_rows,
            _config_row,
        ),
        _dict_table(
            "client_quotas", "client_quotas",
            ("entity", "key"),
            pa.schema([
                ("entity", pa.string()),
                ("entity_parts", pa.list_(pa.struct([("entity_type", pa.string()), ("entity_name", pa.string())]))),
                ("key", pa.string()),
                ("value", pa.float64()),
            ]),
            _quota_rows,
            _quota_row,
        ),
        _dict_table(
            "producer_ids", "producer_ids",
            ("scope",),
            pa.schema([("scope", pa.string()), ("next_producer_id", pa.int64())]),
            _producer_id_rows,
            _producer_id_row,
        ),
        _dict_table(
            "acls", "acls",
            ("acl_id",),
            pa.schema([
                ("acl_id", pa.string()),
                ("resource_type", pa.int8()),
                ("resource_name", pa.string()),
                ("pattern_type", pa.int8()),
                ("principal", pa.string()),
                ("host", pa.string()),
                ("operation", pa.int8()),
                ("permission_type", pa.int8()),
            ]),
            _acl_rows,
            _acl_row,
        ),
        _dict_table(
            "scram_credentials", "scram",
            ("user", "mechanism"),
            pa.schema([("user", pa.string()), ("mechanism", pa.string()), ("iterations", pa.int32())]),
            _scram_rows,
            _scram_row,
        ),
        _dict_table(
            "delegation_tokens", "delegation_tokens",
            ("token_id",),
            pa.schema([
                ("token_id", pa.string()),
                ("owner", pa.string()),
                ("requester", pa.string()),
                ("renewers", _STRINGS),
                ("issue_timestamp", pa.int64()),
                ("max_timestamp", pa.int64()),
                ("expiration_timestamp", pa.int64()),
            ]),
            _token_rows,
            _token_row,
        ),
    )
}
