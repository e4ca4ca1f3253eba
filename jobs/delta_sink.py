"""Writes published images to the warehouse with delta-rs, exactly once across crashes.

For one published image at offset P: each table that changed gets its history rows appended and its
current rows merged (two commits, each carrying P in its commit metadata and as its app transaction
version); the Raft batches go to `batches`; the `images` row naming every table's version comes last.
Every commit is idempotent: a table whose app transaction version already covers a row version skips it,
so a crash anywhere is repaired by replaying the same log and writing again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from image_schema.changes import RowVersion
from image_schema.tables import TABLES, Row
from jobs.warehouse import BATCHES, BATCHES_SCHEMA, IMAGES, IMAGES_SCHEMA, Warehouse, history_name, history_schema
from kraftlake.failpoints import failpoint
from records import RecordBatch
from replay.image import Provenance

DELETED = "_deleted"


@dataclass(frozen=True)
class PublishedImage:
    provenance: Provenance
    snapshot: bool = False


def batch_row(batch: RecordBatch) -> Row:
    return {
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
        "epoch": batch.partition_leader_epoch,
        "append_time_ms": batch.append_time_ms,
        "record_count": len(batch.records),
        "control": batch.is_control,
        "size_bytes": batch.size_in_bytes,
    }


class DeltaSink:
    """The only writer of one warehouse. `app_id` names the writer in the tables' app transactions."""

    def __init__(self, warehouse: Warehouse, app_id: str = "kraftlake") -> None:
        warehouse.create()
        self.warehouse = warehouse
        self.app_id = app_id
        self._tables: dict[str, DeltaTable] = {}

    def _table(self, name: str) -> DeltaTable:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = self.warehouse.table(name)
        return table

    def written_through(self, name: str) -> int:
        """The highest offset whose rows `name` already holds (-1: none)."""
        version = self._table(name).transaction_version(self._txn_id(name))
        return -1 if version is None else version

    def _txn_id(self, name: str) -> str:
        return f"{self.app_id}:{name}"

    def _commit(self, name: str, offset: int, provenance: Provenance) -> CommitProperties:
        return CommitProperties(
            custom_metadata={
                "kraftlake.offset": str(provenance.offset),
                "kraftlake.epoch": str(provenance.epoch),
                "kraftlake.logTimeMs": str(provenance.log_time_ms),
            },
            app_transactions=[Transaction(self._txn_id(name), offset)],
        )

    def last_published(self) -> int:
        return self.written_through(IMAGES)

    def write(
        self, image: PublishedImage | None, versions: Sequence[RowVersion], batches: Sequence[RecordBatch]
    ) -> bool:
        """Make `image` (None: nothing published, e.g. a transaction still open) and its rows durable.
        True when this call added the image's `images` row (False: nothing new to publish)."""
        if batches:
            self._append_batches(batches)
            failpoint("sink.after_batches")
        if image is None:
            return False
        provenance = image.provenance
        by_table: dict[str, list[RowVersion]] = {}
        for version in versions:
            by_table.setdefault(version.table, []).append(version)
        for table, table_versions in by_table.items():
            self._write_history(table, table_versions, provenance)
            failpoint("sink.between_history_and_current")
            self._merge_current(table, table_versions, provenance)
            failpoint("sink.after_table")
        if provenance.offset <= self.last_published():
            return False
        self._append_image(image)
        failpoint("sink.after_image")
        return True

    def _append_batches(self, batches: Sequence[RecordBatch]) -> None:
        through = self.written_through(BATCHES)
        rows = [batch_row(b) for b in batches if b.last_offset > through]
        if rows:
            last = batches[-1]
            provenance = Provenance(last.last_offset, last.partition_leader_epoch, last.append_time_ms, True)
            self._append(BATCHES, pa.Table.from_pylist(rows, schema=BATCHES_SCHEMA), last.last_offset, provenance)

    def _write_history(self, table: str, versions: Iterable[RowVersion], provenance: Provenance) -> None:
        name = history_name(table)
        through = self.written_through(name)
        fresh = [v for v in versions if v.offset > through]
        if not fresh:
            return
        key_columns = TABLES[table].key
        rows = []
        for version in fresh:
            row = dict(zip(key_columns, version.key, strict=True)) if version.row is None else dict(version.row)
            row["from_offset"] = version.offset
            row["deleted"] = version.row is None
            rows.append(row)
        self._append(name, pa.Table.from_pylist(rows, schema=history_schema(table)), provenance.offset, provenance)

    def _merge_current(self, table: str, versions: Iterable[RowVersion], provenance: Provenance) -> None:
        through = self.written_through(table)
        latest: dict[tuple, Row | None] = {}
        for version in versions:
            if version.offset > through:
                latest[version.key] = version.row
        if not latest:
            return
        spec = TABLES[table]
        delta_table = self._table(table)
        if not delta_table.file_uris():
            rows = [row for row in latest.values() if row is not None]
            self._append(table, pa.Table.from_pylist(rows, schema=spec.schema), provenance.offset, provenance)
            return
        source_schema = spec.schema.append(pa.field(DELETED, pa.bool_()))
        rows = [
            {**dict(zip(spec.key, key, strict=True)), DELETED: True} if row is None else {**row, DELETED: False}
            for key, row in latest.items()
        ]
        predicate = " AND ".join(f"t.{column} = s.{column}" for column in spec.key)
        (
            delta_table.merge(
                pa.Table.from_pylist(rows, schema=source_schema),
                predicate,
                source_alias="s",
                target_alias="t",
                commit_properties=self._commit(table, provenance.offset, provenance),
            )
            .when_matched_delete(predicate=f"s.{DELETED}")
            .when_matched_update_all(predicate=f"NOT s.{DELETED}", except_cols=[DELETED])
            .when_not_matched_insert_all(predicate=f"NOT s.{DELETED}", except_cols=[DELETED])
            .execute()
        )
        delta_table.update_incremental()

    def _append_image(self, image: PublishedImage) -> None:
        provenance = image.provenance
        versions = {name: self._table(name).version() for name in self.warehouse_tables()}
        row = {
            "offset": provenance.offset,
            "epoch": provenance.epoch,
            "log_time_ms": provenance.log_time_ms,
            "batch_aligned": provenance.batch_aligned,
            "snapshot": image.snapshot,
            "published_at_ms": int(time.time() * 1000),
            "table_versions": list(versions.items()),
        }
        self._append(IMAGES, pa.Table.from_pylist([row], schema=IMAGES_SCHEMA), provenance.offset, provenance)

    @staticmethod
    def warehouse_tables() -> list[str]:
        """The tables an images row pins: every sub-image table, its history, and the batches."""
        return [*TABLES, *(history_name(t) for t in TABLES), BATCHES]

    def _append(self, name: str, data: pa.Table, offset: int, provenance: Provenance) -> None:
        table = self._table(name)
        write_deltalake(table, data, mode="append", commit_properties=self._commit(name, offset, provenance))
        table.update_incremental()
