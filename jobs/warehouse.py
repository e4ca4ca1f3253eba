"""The warehouse layout: where each Delta table lives and the schemas of the bookkeeping tables.

    <root>/<table>            current rows of a sub-image table, one Delta version per published image
    <root>/<table>_history    every row version: key, values, `from_offset`, `deleted` (append-only)
    <root>/images             one row per published image, naming the Delta version of every table
    <root>/batches            one row per Raft batch: offsets, epoch, append time (provenance at any offset)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from image_schema.tables import TABLES

IMAGES = "images"
BATCHES = "batches"

IMAGES_SCHEMA = pa.schema([
    ("offset", pa.int64()),
    ("epoch", pa.int32()),
    ("log_time_ms", pa.int64()),
    ("batch_aligned", pa.bool_()),
    ("snapshot", pa.bool_()),
    ("published_at_ms", pa.int64()),
    ("table_versions", pa.map_(pa.string(), pa.int64())),
])

BATCHES_SCHEMA = pa.schema([
    ("base_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("epoch", pa.int32()),
    ("append_time_ms", pa.int64()),
    ("record_count", pa.int32()),
    ("control", pa.bool_()),
    ("size_bytes", pa.int32()),
])

HISTORY_COLUMNS = [pa.field("from_offset", pa.int64()), pa.field("deleted", pa.bool_())]


def history_name(table: str) -> str:
    return f"{table}_history"


def history_schema(table: str) -> pa.Schema:
    """The table's columns (values null on a deletion) followed by the version's start and kind."""
    schema = TABLES[table].schema
    for column in HISTORY_COLUMNS:
        schema = schema.append(column)
    return schema


def all_tables() -> dict[str, pa.Schema]:
    """Every Delta table of a warehouse, by name, with its schema."""
    tables: dict[str, pa.Schema] = {}
    for name, spec in TABLES.items():
        tables[name] = spec.schema
        tables[history_name(name)] = history_schema(name)
    tables[BATCHES] = BATCHES_SCHEMA
    tables[IMAGES] = IMAGES_SCHEMA
    return tables


@dataclass(frozen=True)
class Warehouse:
    root: Path

    def path(self, table: str) -> Path:
        return self.root / table

    def exists(self) -> bool:
        return DeltaTable.is_deltatable(str(self.path(IMAGES)))

    def create(self) -> None:
        """Create every missing table, empty (idempotent: a crash half-way is finished by the next call)."""
        self.root.mkdir(parents=True, exist_ok=True)
        for name, schema in all_tables().items():
            if not DeltaTable.is_deltatable(str(self.path(name))):
                DeltaTable.create(str(self.path(name)), schema=schema, name=name)

    def table(self, name: str, version: int | None = None) -> DeltaTable:
        return DeltaTable(str(self.path(name)), version=version)
