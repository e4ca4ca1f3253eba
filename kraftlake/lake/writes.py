"""The commits one published image makes, as Arrow data, leaving out what the tables already hold.

For an image at offset P: each table that changed gets its history rows appended and its current rows
merged (two commits, each carrying P as its app transaction version); the Raft batches go to `batches`.
A current table's merge names the buckets it touches, so Delta rewrites only their files.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from kraftlake.image_schema.changes import RowVersion
from kraftlake.image_schema.tables import TABLES, Row
from kraftlake.lake.maintenance import MaintenancePolicy
from kraftlake.lake.sink_tables import SinkTables
from kraftlake.lake.warehouse import (
    BATCHES,
    BATCHES_SCHEMA,
    GAPS,
    GAPS_SCHEMA,
    HISTORY_COLUMNS,
    history_name,
    with_buckets,
)
from kraftlake.records import RecordBatch
from kraftlake.replay.image import MetadataImage, Provenance
from kraftlake.replay.visibility import BatchPublishes, Gap

DELETED = "_deleted"


@dataclass(frozen=True)
class PublishedImage:
    provenance: Provenance
    snapshot: bool = False
    image: MetadataImage | None = None  # the image itself, for a checkpoint when one is due
    gap: Gap | None = None  # a snapshot image that bridges offsets never read: written with it


class LoadedBatch(NamedTuple):
    """A Raft batch as loaded: its publishes say which image answers each of its offsets."""

    batch: RecordBatch
    publishes: BatchPublishes


@dataclass(frozen=True)
class TableWrite:
    """One commit the sink is about to make: `data` appended to `table`, or merged into it by key."""

    table: str
    data: pa.Table
    offset: int  # the app transaction version: the highest offset whose rows this commit holds
    provenance: Provenance
    failpoint: str  # passed right after this commit
    merge: bool = False
    overwrite: bool = False  # `data` is the table's every row


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


def loaded_batch_row(loaded: LoadedBatch) -> Row:
    """A `batches` row: the batch and its publishes."""
    return {**batch_row(loaded.batch), "published_offsets": list(loaded.publishes.published),
            "image_before": loaded.publishes.in_force_before}


def prepare(
    tables: SinkTables,
    policy: MaintenancePolicy,
    image: PublishedImage | None,
    versions: Sequence[RowVersion],
    batches: Sequence[LoadedBatch],
) -> list[TableWrite]:
    """The Arrow data of every commit an image's write makes, in order, leaving out what the tables hold."""
    writes: list[TableWrite] = []
    batch_write = _batches_write(tables, batches)
    if batch_write is not None:
        writes.append(batch_write)
    if image is None:
        return writes
    if image.gap is not None and tables.written_through(GAPS) < image.gap.last:
        writes.append(_gap_write(image.gap, image.provenance))
    by_table: dict[str, list[RowVersion]] = {}
    for version in versions:
        by_table.setdefault(version.table, []).append(version)
    for table, table_versions in by_table.items():
        writes.extend(_table_writes(tables, policy, table, table_versions, image))
    return writes


def _gap_write(gap: Gap, provenance: Provenance) -> TableWrite:
    row = {"first_offset": gap.first, "last_offset": gap.last, "snapshot_end_offset": gap.snapshot_end_offset,
           "snapshot_epoch": gap.snapshot_epoch, "noticed_at_ms": gap.noticed_at_ms}
    return TableWrite(GAPS, pa.Table.from_pylist([row], schema=GAPS_SCHEMA), gap.last, provenance, "sink.after_gap")


def _batches_write(tables: SinkTables, batches: Sequence[LoadedBatch]) -> TableWrite | None:
    through = tables.written_through(BATCHES)
    rows = [loaded_batch_row(b) for b in batches if b.batch.last_offset > through]
    if not rows:
        return None
    last = batches[-1].batch
    provenance = Provenance(last.last_offset, last.partition_leader_epoch, last.append_time_ms, True)
    data = pa.Table.from_pylist(rows, schema=BATCHES_SCHEMA)
    return TableWrite(BATCHES, data, last.last_offset, provenance, "sink.after_batches")


def _table_writes(
    tables: SinkTables, policy: MaintenancePolicy, table: str, versions: Sequence[RowVersion], image: PublishedImage
) -> Iterator[TableWrite]:
    """The history append and the current-rows merge of one table, from one Arrow table of its versions.

    Each commit leaves out the versions its table already holds (a rerun after a crash between them).
    A change of at least half the table's rows (a backlog caught up in one image) rewrites it from the
    image instead: a merge would read and rewrite nearly every bucket anyway, and new keys spread over
    buckets that hold only old ones left a second file in each, so a compaction of the whole table
    followed (1M-partition bootstrap: merges 60 s and compactions 97 s over 13 images, profiled)."""
    provenance = image.provenance
    name = history_name(table)
    history_through, current_through = tables.written_through(name), tables.written_through(table)
    through = min(history_through, current_through)
    fresh = [v for v in versions if v.offset > through]
    if not fresh:
        return
    spec = TABLES[table]
    data = spec.arrow([spec.key_only(v.key) if v.row is None else v.row for v in fresh])
    data = data.append_column(HISTORY_COLUMNS[0], pa.array([v.offset for v in fresh], pa.int64()))
    data = data.append_column(HISTORY_COLUMNS[1], pa.array([v.row is None for v in fresh], pa.bool_()))
    history = data.filter(pc.field("from_offset") > history_through) if history_through > current_through else data
    if history.num_rows:
        yield TableWrite(name, history, provenance.offset, provenance, "sink.between_history_and_current")
    latest = list({v.key: i for i, v in enumerate(fresh) if v.offset > current_through}.values())
    if not latest:
        return
    current = data if len(latest) == data.num_rows else data.take(latest)  # else: a key changed twice
    buckets = tables.bucket_count(table)
    if buckets is not None and image.image is not None and _mostly_changed(tables, policy, table, len(latest), buckets):
        rows = tables.image_table(provenance.offset, image.image, table)
        buckets = tables.set_buckets(table, policy.buckets_for(rows.num_rows))
        yield TableWrite(table, with_buckets(rows, table, buckets), provenance.offset, provenance,
                         "sink.after_table", overwrite=True)
    elif buckets is not None:
        source = current.drop_columns("from_offset").rename_columns([*spec.schema.names, DELETED])
        source = with_buckets(source, table, buckets)
        yield TableWrite(table, source, provenance.offset, provenance, "sink.after_table", merge=True)
    else:  # nothing to merge with yet: append the rows that exist
        if pc.any(current["deleted"]).as_py():
            current = current.filter(pc.invert(current["deleted"]))
        rows = current.select(spec.schema.names)
        buckets = tables.set_buckets(table, policy.buckets_for(rows.num_rows))
        yield TableWrite(table, with_buckets(rows, table, buckets), provenance.offset, provenance,
                         "sink.after_table")


def _mostly_changed(tables: SinkTables, policy: MaintenancePolicy, table: str, changed: int, buckets: int) -> bool:
    """Whether `changed` keys are at least half the current table's rows (read from its files' statistics
    only when the bucket count allows it: a table of B buckets holds at least the low end of its range)."""
    if changed * 2 < policy.bucket_range(buckets)[0]:
        return False
    return changed * 2 >= (tables.rows(table) or 0)
