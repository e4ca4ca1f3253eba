"""Maintenance of a warehouse: compaction, Delta log checkpoints, metadata cleanup and safe vacuum.

Every table is appended to (or merged into) once per image, so without compaction its file count, and with
it the cost of every write and read, would grow with the warehouse's age. The sink compacts a table as soon
as it holds `compact_above_files` small files beyond one per bucket (one commit, atomic: readers see the
files before or after it, both the same rows; an append-only table stays in offset order, `kraftlake.lake.compaction`).
`kraftlake maintain` does the rest for operators: compaction of whatever is small, a Delta checkpoint,
removal of expired log files, and VACUUM.
Time travel reads only the latest version of each table, so none of it takes an offset away. A full VACUUM
deletes a removed file once its tombstone (kept 5 minutes) expired and the file is older than the retention,
so a read running longer than 5 minutes across it may fail (never a later one); a file no commit names is
kept at least an hour (a write in flight). It may run while the sink writes: a compaction that loses a race
with the other writer is left to the next run. Each step is idempotent: a crash anywhere is finished by
running maintenance again.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from deltalake import DeltaTable

from kraftlake.failpoints import failpoint
from kraftlake.lake.compaction import compact_in_order
from kraftlake.lake.errors import lost_race
from kraftlake.lake.warehouse import (
    ROWS_PER_BUCKET,
    Warehouse,
    all_tables,
    buckets_for,
    offset_column,
    writer_properties,
)

MIB = 1024 * 1024
# A Delta log entry of a version: its commit, its checksum or a (possibly multi-part) checkpoint.
KEEP_LOG_VERSIONS = 100
UNTRACKED_MIN_HOURS = 1  # VACUUM never deletes a file no commit names before it is this old (a write in flight)
_LOG_ENTRY = re.compile(r"^(\d{20})\.(json|crc|checkpoint(\.\d+\.\d+)?\.parquet)$")


@dataclass(frozen=True)
class MaintenancePolicy:
    """Every number of the write path's upkeep: when the maintainer (`kraftlake.lake.maintainer`) checkpoints images,
    compacts, re-buckets, sweeps, prunes and reopens, and the bucket sizes the writer merges by (all of it
    configurable, none of it blocking for long: a compaction rewrites at most `compact_above_files` small
    files of one table)."""

    checkpoint_min_rows: int = 10_000  # image checkpoint once the history since holds this many rows (or more)
    compact_above_files: int = 16  # compact a table holding more small files than this (beyond one a bucket)
    target_file_bytes: int = 8 * MIB  # compaction writes files up to this size; larger files are left alone
    vacuum_retention_hours: int = 1  # `kraftlake maintain` deletes removed files this old (the longest read)
    sweep_every_images: int = 100  # then every table no image wrote since the last sweep gets its small files merged
    prune_every_commits: int = 10  # a table's log is pruned every this many commits (one listing, ~120 entries)
    keep_log_versions: int = KEEP_LOG_VERSIONS  # a pruned log keeps a checkpoint at least this many versions back
    reopen_every_commits: int = 100  # a long-open delta-rs handle gets slower with every commit
    rows_per_bucket: int = ROWS_PER_BUCKET  # a current table's bucket count: about this many rows a bucket
    # a current table is re-bucketed when its rows per bucket leave [rows_per_bucket / shrink_below,
    # rows_per_bucket * grow_above]: a table hovering at a size never flips between two counts
    grow_above: int = 2
    shrink_below: int = 8

    def buckets_for(self, rows: int) -> int:
        return buckets_for(rows, self.rows_per_bucket)

    def bucket_range(self, buckets: int) -> tuple[int, int]:
        """The row counts a current table of `buckets` buckets keeps its count for."""
        return self.rows_per_bucket * buckets // self.shrink_below, self.rows_per_bucket * buckets * self.grow_above


@dataclass(frozen=True)
class TableReport:
    table: str
    files_before: int
    files_after: int
    vacuumed: int


def small_files(table: DeltaTable, policy: MaintenancePolicy) -> pa.Table:
    """The add actions (flattened) of the table's files smaller than the compaction target."""
    actions = pa.table(table.get_add_actions(flatten=True))
    return actions.filter(pc.less(actions["size_bytes"], policy.target_file_bytes)) if actions.num_rows else actions


def mergeable(small: pa.Table) -> int:
    """How many of `small` files compaction could merge away: all less one per Delta partition holding any
    (the current tables are partitioned by bucket, and a compaction never merges files of two partitions;
    one small file per bucket is the layout)."""
    partitions = [name for name in small.column_names if name.startswith("partition.")]
    holding = len(small.group_by(partitions).aggregate([])) if partitions and small.num_rows else min(1, small.num_rows)
    return small.num_rows - holding


def compact_if_due(
    warehouse: Warehouse, name: str, table: DeltaTable, policy: MaintenancePolicy, above: int | None = None
) -> bool:
    """Compact table `name` (opened as `table`) when compaction would merge away more than `above` files
    (default: the policy's `compact_above_files`, less one); True if it did. An append-only table keeps its
    offset order (`kraftlake.lake.compaction`); a current table is compacted per bucket by delta-rs."""
    limit = policy.compact_above_files - 1 if above is None else above
    small = small_files(table, policy)
    if mergeable(small) <= limit:
        return False
    column = offset_column(name)
    if column is not None:
        return compact_in_order(warehouse, name, table, column, small)
    table.optimize.compact(target_size=policy.target_file_bytes, writer_properties=writer_properties())
    return True


def prune_log(warehouse: Warehouse, name: str, keep_versions: int = KEEP_LOG_VERSIONS) -> int:
    """Delete the `_delta_log` entries of table `name` older than its newest Delta checkpoint that is at
    least `keep_versions` behind its last version; the number deleted.

    delta-rs lists a local `_delta_log` whole on every commit and open, and on every store its expired-log
    cleanup lists it whole at each Delta checkpoint, so a log kept by age costs more the faster commits come:
    5 minutes of log is 300 commits at an image a second, thousands while a backlog is caught up. Counting
    versions keeps it bounded at any rate, on a disk or an object store alike. Opening the latest version
    needs only the newest checkpoint and the commits after it; the margin lets a handle up to
    `keep_versions` behind still catch up incrementally. Time travel never reads an old Delta version, so
    no offset goes away with these files."""
    filesystem = warehouse.filesystem(name)
    listing = filesystem.get_file_info(pafs.FileSelector("_delta_log"))
    names = [info.base_name for info in listing]
    entries = [(int(match[1]), entry) for entry in names if (match := _LOG_ENTRY.match(entry))]
    if not entries:
        return 0
    newest = max(version for version, _ in entries)
    checkpoints = [version for version, entry in entries if "checkpoint" in entry and version <= newest - keep_versions]
    if not checkpoints:
        return 0
    keep_from = max(checkpoints)
    stale = [entry for version, entry in entries if version < keep_from]
    for entry in stale:
        with contextlib.suppress(FileNotFoundError):  # another pruner (sink, `kraftlake maintain`) was first
            filesystem.delete_file(f"_delta_log/{entry}")
    return len(stale)


def vacuum(table: DeltaTable, retention_hours: int) -> list[str]:
    """Delete the files the table removed more than `retention_hours` ago, then every file no commit names
    (a crashed write's, or one whose tombstone left the Delta checkpoints) that is older than that and at
    least UNTRACKED_MIN_HOURS old: a file no commit names yet may be a write in flight, and deleting it
    before its commit left the table naming a missing file (seen with zero retention under a running sink)."""
    removed = table.vacuum(retention_hours=retention_hours, dry_run=False, enforce_retention_duration=False)
    untracked = table.vacuum(
        retention_hours=max(retention_hours, UNTRACKED_MIN_HOURS), dry_run=False, enforce_retention_duration=False,
        full=True,
    )
    return [*removed, *untracked]


def maintain_table(
    warehouse: Warehouse, name: str, policy: MaintenancePolicy, retention_hours: int | None
) -> TableReport:
    """Compact every small file, checkpoint the Delta log, drop expired log files, vacuum."""
    table = warehouse.table(name)
    before = len(table.file_uris())
    try:
        compact_if_due(warehouse, name, table, policy, above=0)
    except Exception as error:  # the sink compacted or merged first: its files are what the next run compacts
        if not lost_race(error):
            raise
    failpoint("maintain.after_compact")
    table = warehouse.table(name)
    table.create_checkpoint()
    failpoint("maintain.after_checkpoint")
    table.cleanup_metadata()
    prune_log(warehouse, name, policy.keep_log_versions)
    try:
        vacuumed = vacuum(table, policy.vacuum_retention_hours if retention_hours is None else retention_hours)
    except Exception as error:  # delta-rs commits a VACUUM too: a sink's commit in between leaves it to the next run
        if not lost_race(error):
            raise
        vacuumed = []
    failpoint("maintain.after_vacuum")
    return TableReport(name, before, len(warehouse.table(name).file_uris()), len(vacuumed))


def maintain(
    warehouse: Warehouse,
    policy: MaintenancePolicy | None = None,
    retention_hours: int | None = None,
    progress: Callable[[TableReport], None] | None = None,
) -> list[TableReport]:
    """Maintain every table of the warehouse. `retention_hours` None: the policy's `vacuum_retention_hours`
    (1 hour); lower values are allowed, for an operator who knows no read runs that long."""
    reports = []
    for name in all_tables():
        report = maintain_table(warehouse, name, policy or MaintenancePolicy(), retention_hours)
        reports.append(report)
        if progress is not None:
            progress(report)
    return reports
