"""Compaction of the append-only tables that keeps their rows in offset order.

History, image checkpoints, `batches`, `images` and `checkpoints` are appended in offset order, and every
read of them names an offset range, so a file's row groups with narrow offset statistics are what lets a
read decode one row group instead of a file. delta-rs's `optimize.compact` interleaves the rows of the files
it merges (it reads them, and a file's row groups, in parallel): after a few rounds every row group of
`batches` spanned the whole history, and provenance at one offset decoded 46k rows (8 ms instead of 1.7).
So these tables are compacted here: the small files are read, their rows sorted by the table's offset
column (stably: two versions at one offset keep their order), written as one file and swapped in with one
commit whose actions change no data (`dataChange` false, as `optimize` writes them: a streaming reader of
the table skips it). The commit may not be retried over another writer's commit: a compaction racing
another (the sink's and `kraftlake maintain`'s) loses cleanly and is left to the next one, rather than
merging files the other already merged.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction

from kraftlake.failpoints import failpoint
from kraftlake.lake.warehouse import ROW_GROUP_ROWS, Warehouse, all_tables


def compact_in_order(warehouse: Warehouse, name: str, table: DeltaTable, column: str, files: pa.Table) -> bool:
    """Merge `files` (rows of `table`'s add actions, flattened) into one file sorted by `column`; False if
    another commit reached the table first (nothing changed then but an unreferenced file VACUUM removes)."""
    files = files.sort_by([(f"min.{column}", "ascending")])
    paths, sizes = files["path"].to_pylist(), files["size_bytes"].to_pylist()
    filesystem = warehouse.filesystem(name)
    schema = all_tables()[name]
    rows = pa.concat_tables([pq.read_table(path, filesystem=filesystem, schema=schema) for path in paths])
    rows = rows.take(pc.sort_indices(rows, [(column, "ascending")]))  # stable
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
