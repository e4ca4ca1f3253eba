"""Time travel: the image at any metadata offset or time, read from the warehouse.

The image at offset N starts from the newest published image at or before N (each table read at the
Delta version its `images` row names) and applies the history rows in (that offset, N]. Only what a
published image covers is readable: an offset past the last `images` row is refused, so a reader never
sees half of an image that was being written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from image_schema.rebuild import image_from_rows
from image_schema.tables import TABLES, Row
from jobs.warehouse import BATCHES, IMAGES, Warehouse, history_name, history_schema
from replay.canonical import canonical_json
from replay.image import MetadataImage, Provenance


class TimeTravelError(Exception):
    """An offset or time the warehouse cannot answer for (before its history, after its last image)."""


@dataclass(frozen=True)
class ImageRow:
    offset: int
    epoch: int
    log_time_ms: int
    snapshot: bool
    table_versions: Mapping[str, int]


@dataclass(frozen=True)
class WarehouseImage:
    """Each sub-image table at one offset, as Arrow, with the provenance of that offset."""

    provenance: Provenance
    tables: Mapping[str, pa.Table]

    def to_image(self) -> MetadataImage:
        return image_from_rows({name: table.to_pylist() for name, table in self.tables.items()}, self.provenance)

    def canonical_json(self, indent: int | None = 2) -> str:
        return canonical_json(self.to_image(), indent=indent)


def published_images(warehouse: Warehouse) -> list[ImageRow]:
    if not warehouse.exists():
        raise TimeTravelError(f"{warehouse.root} is not a kraftlake warehouse (no images table)")
    rows = warehouse.table(IMAGES).to_pyarrow_table().sort_by("offset").to_pylist()
    return [
        ImageRow(r["offset"], r["epoch"], r["log_time_ms"], r["snapshot"], dict(r["table_versions"])) for r in rows
    ]


def image_at_offset(warehouse: Warehouse, offset: int) -> WarehouseImage:
    images = published_images(warehouse)
    if not images:
        raise TimeTravelError("the warehouse has no published image yet")
    latest = images[-1]
    if offset > latest.offset:
        raise TimeTravelError(f"offset {offset} is past the last published image (offset {latest.offset})")
    if offset < images[0].offset and images[0].snapshot:
        raise TimeTravelError(f"offset {offset} is before the history this warehouse holds (from {images[0].offset})")
    base = next((image for image in reversed(images) if image.offset <= offset), None)
    tables = {}
    for name, spec in TABLES.items():
        current = _current_rows(warehouse, name, base) if base is not None else {}
        since = -1 if base is None else base.offset
        for row in _history_rows(warehouse, name, latest.table_versions[history_name(name)], since, offset):
            key = tuple(row[column] for column in spec.key)
            if row["deleted"]:
                current.pop(key, None)
            else:
                current[key] = {column: row[column] for column in spec.schema.names}
        tables[name] = pa.Table.from_pylist(list(current.values()), schema=spec.schema)
    return WarehouseImage(_provenance(warehouse, offset, images), tables)


def image_at_time(warehouse: Warehouse, time_ms: int) -> WarehouseImage:
    """The image after the last batch appended at or before `time_ms` (capped at the last image)."""
    images = published_images(warehouse)
    if not images:
        raise TimeTravelError("the warehouse has no published image yet")
    batches = warehouse.table(BATCHES).to_pyarrow_table(
        columns=["last_offset", "append_time_ms"], filters=[("append_time_ms", "<=", time_ms)]
    )
    candidates = [image.offset for image in images if image.log_time_ms <= time_ms]
    if batches.num_rows:
        candidates.append(min(max(batches.column("last_offset").to_pylist()), images[-1].offset))
    if not candidates:
        raise TimeTravelError(f"no metadata was committed at or before {time_ms} ms")
    return image_at_offset(warehouse, max(candidates))


def changes_between(warehouse: Warehouse, from_offset: int, to_offset: int) -> dict[str, pa.Table]:
    """Per table, the row versions that start in (from_offset, to_offset]: what changed between them."""
    images = published_images(warehouse)
    if not images or to_offset > images[-1].offset:
        last = images[-1].offset if images else None
        raise TimeTravelError(f"offset {to_offset} is past the last published image (offset {last})")
    pinned = images[-1].table_versions
    result = {}
    for name in TABLES:
        rows = _history_rows(warehouse, name, pinned[history_name(name)], from_offset, to_offset)
        result[name] = pa.Table.from_pylist(rows, schema=history_schema(name))
    return result


def _current_rows(warehouse: Warehouse, name: str, image: ImageRow) -> dict[tuple, Row]:
    spec = TABLES[name]
    rows = warehouse.table(name, image.table_versions[name]).to_pyarrow_table().to_pylist()
    return {tuple(row[column] for column in spec.key): row for row in rows}


def _history_rows(warehouse: Warehouse, name: str, version: int, after: int, through: int) -> list[Row]:
    table = warehouse.table(history_name(name), version).to_pyarrow_table(
        filters=[("from_offset", ">", after), ("from_offset", "<=", through)]
    )
    return table.sort_by("from_offset").to_pylist()


def _provenance(warehouse: Warehouse, offset: int, images: list[ImageRow]) -> Provenance:
    """Epoch and append time of the batch holding `offset` (or of the snapshot image ending there)."""
    found = warehouse.table(BATCHES).to_pyarrow_table(
        filters=[("base_offset", "<=", offset), ("last_offset", ">=", offset)]
    )
    if found.num_rows:
        batch = found.to_pylist()[0]
        return Provenance(offset, batch["epoch"], batch["append_time_ms"], batch["last_offset"] == offset)
    image = next((image for image in images if image.offset == offset), None)
    if image is not None:
        return Provenance(offset, image.epoch, image.log_time_ms, True)
    return Provenance(offset, -1, -1, False)


def dataframes(spark: Any, image: WarehouseImage) -> dict[str, Any]:
    """Each sub-image table of `image` as a Spark DataFrame (Spark reads the Arrow data directly)."""
    return {name: spark.createDataFrame(table) for name, table in image.tables.items()}
