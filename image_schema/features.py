"""The features table: finalized feature levels, metadata.version among them (kraft.version is the quorum's)."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from kraftlake.image_schema.spec import Key, Row, SubImageTables, TableRows, dict_table
from kraftlake.records import metadata_types as mt
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.features import KRAFT_VERSION, METADATA_VERSION, FeaturesImage
from kraftlake.replay.image import MetadataImage


def _feature_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    features = image.features
    if features.metadata_version is not None:
        yield ("metadata.version",), {"name": "metadata.version", "level": features.metadata_version}
    for name, level in features.finalized.items():
        yield (name,), {"name": name, "level": level}


def _feature_row(delta: MetadataDelta, key: Key) -> Row | None:
    level = delta.features_delta().level(key[0])
    return None if level is None else {"name": key[0], "level": level}


def _touched(record: Any, delta: MetadataDelta) -> Iterator[tuple[str, Key]]:
    if record.name != KRAFT_VERSION:
        yield "features", (record.name,)


def _rebuild(tables: TableRows) -> FeaturesImage:
    levels = {r["name"]: r["level"] for r in tables.get("features", ())}
    metadata_version = levels.pop(METADATA_VERSION, None)
    return FeaturesImage(metadata_version, MappingProxyType(dict(sorted(levels.items()))))


FEATURES = SubImageTables(
    "features",
    (
        dict_table(
            "features", "features", ("name",), pa.schema([("name", pa.string()), ("level", pa.int16())]),
            _feature_rows, _feature_row,
        ),
    ),
    {mt.FeatureLevelRecord: _touched},
    _rebuild,
)
