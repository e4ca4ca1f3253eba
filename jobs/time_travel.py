"""Time travel: the image at any metadata offset or time, read from the warehouse.

The image at offset N starts from the newest published image at or before N (each table read at the
Delta version its `images` row names) and applies the history rows in (that offset, N]. Only what a
published image covers is readable: an offset past the last `images` row is refused, so a reader never
sees half of an image that was being written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from image_schema.rebuild import image_from_rows
from image_schema.tables import TABLES
from jobs.warehouse import BATCHES, IMAGES, Warehouse, history_name, history_schema
from replay.canonical import canonical_json
from replay.image import MetadataImage, Provenance

_INDEX = "__kraftlake_row"


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
    since = -1 if base is None else base.offset
    tables = {}
    for name, spec in TABLES.items():
        current = _current_table(warehouse, name, base)
        changes = _history_table(warehouse, name, latest.table_versions[history_name(name)], since, offset)
        tables[name] = _one_chunk(_apply_changes(current, changes, spec.key) if changes.num_rows else current)
    return WarehouseImage(_provenance(warehouse, offset, images), tables)


def _apply_changes(current: pa.Table, changes: pa.Table, key: Sequence[str]) -> pa.Table:
    """`current` with the last change of each key in `changes` (sorted by offset) applied, in Arrow throughout:
    rows whose key changed are dropped, then the last versions that are not deletions are added."""
    changes = changes.append_column(_INDEX, _row_numbers(changes))
    last = changes.group_by(list(key), use_threads=False).aggregate([(_INDEX, "max")])
    latest = changes.take(last[f"{_INDEX}_max"])
    current_keys = current.select(list(key)).append_column(_INDEX, _row_numbers(current))
    kept = current_keys.join(latest.select(list(key)), list(key), join_type="left anti")
    upserts = latest.filter(pc.invert(latest["deleted"])).select(current.schema.names)
    return pa.concat_tables([current.take(kept.sort_by(_INDEX)[_INDEX]), upserts.cast(current.schema)])


def _one_chunk(table: pa.Table) -> pa.Table:
    """Each column in one chunk, also when empty (Spark's createDataFrame refuses a column of no chunks)."""
    return table.combine_chunks() if table.num_rows else table.schema.empty_table()


def _row_numbers(table: pa.Table) -> pa.Array:
    return pa.array(np.arange(table.num_rows, dtype=np.int64))


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
        changes = _history_table(warehouse, name, pinned[history_name(name)], from_offset, to_offset)
        result[name] = _one_chunk(changes.cast(history_schema(name)))
    return result


def _current_table(warehouse: Warehouse, name: str, image: ImageRow | None) -> pa.Table:
    if image is None:
        return TABLES[name].schema.empty_table()
    return warehouse.table(name, image.table_versions[name]).to_pyarrow_table().cast(TABLES[name].schema)


def _history_table(warehouse: Warehouse, name: str, version: int, after: int, through: int) -> pa.Table:
    table = warehouse.table(history_name(name), version).to_pyarrow_table(
        filters=[("from_offset", ">", after), ("from_offset", "<=", through)]
    )
    return table.sort_by("from_offset")


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
