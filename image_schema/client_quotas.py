"""The client_quotas table: one row per (entity, quota key), the entity also as its parts."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from kraftlake.image_schema.spec import Key, Row, SubImageTables, TableRows, dict_table, grouped, single
from kraftlake.records import metadata_types as mt
from kraftlake.replay.canonical import quota_entity_text
from kraftlake.replay.client_quotas import ClientQuotasImage, QuotaEntity, quota_entity
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import MetadataImage


def quota_row(entity: QuotaEntity, key: str, value: float) -> Row:
    return {
        "entity": quota_entity_text(entity),
        "entity_parts": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
        "key": key,
        "value": value,
    }


def parse_quota_entity(text: str) -> QuotaEntity:
    """The inverse of `quota_entity_text` (entity names never hold ',' or '=' in Kafka)."""
    parts = [part.split("=", 1) for part in text.split(",")] if text else []
    return tuple((kind, None if name == "<default>" else name) for kind, name in parts)


def _quota_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for entity, quotas in image.client_quotas.entities.items():
        for key, value in quotas.items():
            yield (quota_entity_text(entity), key), quota_row(entity, key, value)


def _quota_row(delta: MetadataDelta, key: Key) -> Row | None:
    entity = parse_quota_entity(key[0])
    value = delta.client_quotas_delta().quotas(entity).get(key[1])
    return None if value is None else quota_row(entity, key[1], value)


def _rebuild(tables: TableRows) -> ClientQuotasImage:
    return ClientQuotasImage(
        grouped(tables.get("client_quotas", ()), lambda r: parse_quota_entity(r["entity"]), "key", "value")
    )


CLIENT_QUOTAS = SubImageTables(
    "client_quotas",
    (
        dict_table(
            "client_quotas",
            "client_quotas",
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
    ),
    {mt.ClientQuotaRecord: single("client_quotas", lambda r: (quota_entity_text(quota_entity(r)), r.key))},
    _rebuild,
)
