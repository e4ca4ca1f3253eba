"""Compaction of the append-only tables that keeps their rows in offset order (a history table's: in key
order within the offset range of each compacted file).

History, image checkpoints, `batches`, `images` and `checkpoints` are appended in offset order, and most
reads of them name an offset range, so a file's row groups with narrow offset statistics are what lets a
read decode one row group instead of a file. A `_history` table is also read by key (a partition's versions,
the versions before a move back in time): in offset order every row group held every key, so those reads
decoded the whole history (1M partition versions: 0.26 s of a 0.29 s history request). So a compacted history
file holds its offset range sorted by key, then offset: a key's versions are in one row group of each such
file, whose key statistics prune the rest, while an offset range still prunes by file (a read of one decodes
at most its compacted files, bounded by the compaction's file size, not the history's length).
delta-rs's `optimize.compact` interleaves the rows of the files it merges (it reads them, and a file's row
groups, in parallel): after a few rounds every row group of `batches` spanned the whole history, and
provenance at one offset decoded 46k rows (8 ms instead of 1.7). So these tables are compacted here: the
small files are read, their rows sorted (`row_order`, stably: two versions at one offset keep their order),
written as one file and swapped in with one commit whose actions change no data (`dataChange` false, as
`optimize` writes them: a streaming reader of the table skips it). The commit may not be retried over
another writer's commit: a compaction racing another (the sink's and `kraftlake maintain`'s) loses cleanly
and is left to the next one, rather than merging files the other already merged.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction

from kraftlake.failpoints import failpoint
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.warehouse import ROW_GROUP_ROWS, Warehouse, all_tables, history_name

HISTORY_SEGMENT_ROWS = 8 * ROW_GROUP_ROWS
_SEGMENT = "__kraftlake_segment"


def compact_in_order(warehouse: Warehouse, name: str, table: DeltaTable, column: str, files: pa.Table) -> bool:
    """Merge `files` (rows of `table`'s add actions, flattened) into one file sorted by `column`; False if
    another commit reached the table first (nothing changed then but an unreferenced file VACUUM removes)."""
    files = files.sort_by([(f"min.{column}", "ascending")])
    paths, sizes = files["path"].to_pylist(), files["size_bytes"].to_pylist()
    filesystem = warehouse.filesystem(name)
    schema = all_tables()[name]
    rows = pa.concat_tables([pq.read_table(path, filesystem=filesystem, schema=schema) for path in paths])
    rows = rows.take(row_order(name, rows, column))
    path = f"part-00000-{uuid.uuid4()}-c000.zstd.parquet"
    pq.write_table(rows, path, filesystem=filesystem, row_group_size=ROW_GROUP_ROWS, compression="zstd")
    failpoint("compaction.after_write")
    now_ms = int(time.time() * 1000)
    added = AddAction(path, filesystem.get_file_info(path).size, {}, now_ms, False, json.dumps(file_stats(rows)))
    removed = [RemoveAction(old, False, now_ms, size) for old, size in zip(paths, sizes, strict=True)]
    try:
        table.create_write_transaction(
            [added, *removed], mode="append", schema=table.schema(),
            commit_properties=CommitProperties(max_commit_retries=0),
        )
    except CommitFailedError:
        filesystem.delete_file(path)
        return False
    return True


def row_order(name: str, rows: pa.Table, column: str) -> pa.Array:
    """The order a compacted file of table `name` holds `rows` in (stable: two versions at one offset keep
    theirs): by `column`, its offset; a `_history` table's cut into segments of `HISTORY_SEGMENT_ROWS` in that
    order, each sorted by key, then offset."""
    by_offset = pc.sort_indices(rows, [(column, "ascending")])
    keys = [TABLES[table].key for table in TABLES if history_name(table) == name]
    if not keys:
        return by_offset
    narrow = rows.select([*keys[0], column]).take(by_offset)
    narrow = narrow.append_column(_SEGMENT, pa.array(np.arange(rows.num_rows) // HISTORY_SEGMENT_ROWS))
    within = pc.sort_indices(narrow, [(c, "ascending") for c in (_SEGMENT, *keys[0], column)])
    return by_offset.take(within)


def file_stats(rows: pa.Table) -> dict[str, Any]:
    """Delta file statistics of `rows`, as delta-rs writes them: row count, and per top-level column that is
    not nested its nulls and its least and greatest value (what readers prune files by)."""
    minimum: dict[str, Any] = {}
    maximum: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for field in rows.schema:
        values = rows[field.name]
        if pa.types.is_nested(field.type):
            continue
        nulls[field.name] = values.null_count
        if values.null_count < len(values):
            least, greatest = pc.min_max(values).values()
            minimum[field.name], maximum[field.name] = least.as_py(), greatest.as_py()
    return {"numRecords": rows.num_rows, "minValues": minimum, "maxValues": maximum, "nullCount": nulls}
