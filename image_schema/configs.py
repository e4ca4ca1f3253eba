"""The configs table: one row per (resource, config name); a secret's value (Kafka's rule,
`kraftlake.records.config_secrecy`) is written "[redacted]": that it changed, and when, stays visible."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kraftlake.image_schema.spec import Key, Row, SubImageTables, TableRows, dict_table, grouped
from kraftlake.records import metadata_types as mt
from kraftlake.replay.canonical import REDACTED, config_value
from kraftlake.replay.configs import RESOURCE_TYPE_NAMES, ConfigResource, ConfigurationsImage
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import MetadataImage

RESOURCE_TYPE_IDS = {name: type_id for type_id, name in RESOURCE_TYPE_NAMES.items()}


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
        "value": config_value(resource, name, value),
    }


def _config_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for resource, configs in image.configs.resources.items():
        for name, value in configs.items():
            yield (config_resource_type(resource), resource.resource_name, name), config_row(resource, name, value)


def _config_row(delta: MetadataDelta, key: Key) -> Row | None:
    resource = config_resource(key[0], key[1])
    value = delta.configs_delta().configs(resource).get(key[2])
    return None if value is None else config_row(resource, key[2], value)


def _touched(record: Any, delta: MetadataDelta) -> Iterator[tuple[str, Key]]:
    resource = ConfigResource(record.resource_type, record.resource_name)
    yield "configs", (config_resource_type(resource), record.resource_name, record.name)


def _rebuild(tables: TableRows) -> ConfigurationsImage:
    rows = tables.get("configs", ())
    return ConfigurationsImage(grouped(rows, lambda r: config_resource(r["resource_type"], r["resource_name"]),
                                       "name", "value"))


CONFIGS = SubImageTables(
    "configs",
    (
        dict_table(
            "configs",
            "configs",
            ("resource_type", "resource_name", "name"),
            pa.schema([
                ("resource_type", pa.string()),
                ("resource_name", pa.string()),
                ("name", pa.string()),
                ("value", pa.string()),
            ]),
            _config_rows,
            _config_row,
            lambda row: row["value"] == REDACTED,
        ),
    ),
    {mt.ConfigRecord: _touched},
    _rebuild,
)
