"""The warehouse layout: where each Delta table lives, its schema and its Delta properties.

    <uri>/<table>               current rows of a sub-image table (the latest image, for plain Delta readers),
                                partitioned by `bucket`, a hash of the row's key (see below)
    <uri>/<table>_history       every row version: key, values, `from_offset`, `deleted` (append-only)
    <uri>/<table>_checkpoints   the table's full rows at each image checkpoint, tagged `checkpoint_offset`
    <uri>/checkpoints           one row per complete image checkpoint (written after its tables' rows)
    <uri>/images                one row per published image, naming the Delta version of every table
    <uri>/batches               one row per Raft batch: offsets, epoch, append time, the images published in
                                it and the one in force before it (which image answers any offset)
    <uri>/gaps                  one row per gap: offsets Kafka deleted before the source read them
    <uri>/source                the one source the warehouse holds (`kraftlake.lake.source`), written at its first write

(Image checkpoints are kraftlake's own, `IMAGE_CHECKPOINTS` and `image_checkpoint_table()` here; not Delta's
`_delta_log` checkpoints nor Spark's checkpoint location.)

A warehouse is a URI: a local path or anything delta-rs opens (`s3://bucket/prefix`, …) with its storage
options. Time travel reads only the latest version of each table (checkpoint + history since), so Delta's
log retention and VACUUM never take an offset away; the properties below say how much old state Delta keeps.

Each image merges its changed rows into the current tables. Delta rewrites every file a merge touches, so a
current table is a Delta partition per hash bucket of the key and the merge names the touched buckets: it
rewrites about one small file per changed row, not the table (a 1M-partition table: 0.2-0.3 s instead of 0.9-4 s
for 100 changed partitions). The bucket count follows the table's size, about `ROWS_PER_BUCKET` rows a
bucket (a 10-partition cluster has one bucket, so one file), and is written into the value itself: bucket
numbers of a table with B buckets (a power of two) are B + hash % B, in [B, 2B), so any one file names B and
a change of B (the sink re-buckets a table that grew or shrank) is one atomic overwrite.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import DeltaTable, WriterProperties
from deltalake.exceptions import DeltaError
from deltalake.fs import DeltaStorageHandler

from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.errors import WarehouseLayoutError
from kraftlake.lake.source import SOURCE, SOURCE_SCHEMA

IMAGES = "images"
BATCHES = "batches"
GAPS = "gaps"
IMAGE_CHECKPOINTS = "checkpoints"

IMAGES_SCHEMA = pa.schema([
    ("offset", pa.int64()),
    ("epoch", pa.int32()),
    ("log_time_ms", pa.int64()),
    ("batch_aligned", pa.bool_()),
    ("snapshot", pa.bool_()),
    ("published_at_ms", pa.int64()),
    ("table_versions", pa.map_(pa.string(), pa.int64())),
    ("history_rows", pa.int64()),  # history rows written through this image, all tables: checkpoint pacing
])

BATCHES_SCHEMA = pa.schema([
    ("base_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("epoch", pa.int32()),
    ("append_time_ms", pa.int64()),
    ("record_count", pa.int32()),
    ("control", pa.bool_()),
    ("size_bytes", pa.int32()),
    # visibility (`replay.visibility`): the images published inside the batch, and the one in force at its
    # start (null: none yet), so this one row answers any offset in the batch
    ("published_offsets", pa.list_(pa.int64())),
    ("image_before", pa.int64()),
])

# offsets a source never read (Kafka deleted them first), bridged by a snapshot (`replay.visibility.Gap`)
GAPS_SCHEMA = pa.schema([
    ("first_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("snapshot_end_offset", pa.int64()),
    ("snapshot_epoch", pa.int32()),
    ("noticed_at_ms", pa.int64()),
])

IMAGE_CHECKPOINTS_SCHEMA = pa.schema([
    ("offset", pa.int64()),
    ("history_rows", pa.int64()),  # the images row's count at this offset
    ("rows", pa.int64()),  # rows in the checkpoint, all tables
])

BUCKET = pa.field("bucket", pa.int32())  # the current tables' Delta partition column: not a sub-image field
ROWS_PER_BUCKET = 500  # 1M rows, 100 merged: 0.26 s in 1,024 buckets, 0.6 s in 256, 0.9 s in one file
MAX_BUCKETS = 4096

HISTORY_COLUMNS = [pa.field("from_offset", pa.int64()), pa.field("deleted", pa.bool_())]
IMAGE_CHECKPOINT_COLUMN = pa.field("checkpoint_offset", pa.int64())

# Delta properties of every table. Time travel never reads an old Delta version, so old versions are kept
# only as long as a reader in flight may still use one. `images` and `batches` commit once per image, so
# opening them (every time-travel query does) costs the commits since their last Delta checkpoint: a
# checkpoint every 10 commits keeps that at most 9 (with 100, opening `images` took 20 ms instead of 5).
# Each checkpoint also carries a tombstone for every file removed (by compaction, by a merge) while the
# removal is retained, and opening the table reads them all: `images` and `batches` lose about one file an
# image, a bucketed merge at 1M partitions about 100 (35,000 tombstones made a checkpoint 3.9 MB and its read
# 0.15 s). Tombstones are therefore kept 5 minutes, so what a table's open costs is bounded by 5 minutes of
# commits, not by the hour or day a longer retention would pile up. Removed files stay on disk until a VACUUM
# (`kraftlake maintain`: at least 5 minutes after their removal and an hour after their writing, by default).
# The log itself is pruned by the sink (`kraftlake.lake.maintenance.prune_log`) besides delta-rs's cleanup by age.
TABLE_PROPERTIES = {
    "delta.checkpointInterval": "10",
    "delta.logRetentionDuration": "interval 5 minutes",
    "delta.enableExpiredLogCleanup": "true",
    "delta.deletedFileRetentionDuration": "interval 5 minutes",
}


# The protocol kraftlake creates its tables with (delta-rs's default for these properties) and the only one it
# writes: another writer may upgrade a table (delta-spark's `delta.enableDeletionVectors`, column mapping, ...)
# to features delta-rs 1.6.6 cannot read or write (deletion vectors; `checkpointProtection`, which dropping a
# feature leaves behind). OPTIMIZE and VACUUM by delta-spark keep it (tests/lake/test_delta_spark.py).
PROTOCOL = (1, 2)  # (min reader version, min writer version), no table features


def buckets_for(rows: int, rows_per_bucket: int = ROWS_PER_BUCKET) -> int:
    """The bucket count for a current table of `rows` rows: a power of two, about `rows_per_bucket` rows each."""
    wanted = min(MAX_BUCKETS, max(1, -(-rows // rows_per_bucket)))
    return 1 << (wanted - 1).bit_length()


def buckets_of(bucket: int) -> int:
    """The bucket count of the table a bucket number belongs to (numbers of B buckets are in [B, 2B))."""
    return 1 << (bucket.bit_length() - 1)


def bucket_column(rows: pa.Table, key: tuple[str, ...], buckets: int) -> pa.Array:
    """Each row's bucket among `buckets`: B + crc32 of its key's text % B (stable across processes)."""
    keys = zip(*(rows.column(name).to_pylist() for name in key), strict=True)
    numbers = [buckets + zlib.crc32("\x1f".join(map(str, parts)).encode()) % buckets for parts in keys]
    return pa.array(numbers, pa.int32())


def with_buckets(rows: pa.Table, table: str, buckets: int) -> pa.Table:
    """`rows` of a current table with their `bucket` column (replaced if there)."""
    if BUCKET.name in rows.column_names:
        rows = rows.drop_columns(BUCKET.name)
    return rows.append_column(BUCKET, bucket_column(rows, TABLES[table].key, buckets))


def current_schema(table: str) -> pa.Schema:
    """A current table: the sub-image table's columns and its bucket."""
    return TABLES[table].schema.append(BUCKET)


def partition_columns(name: str) -> list[str] | None:
    return [BUCKET.name] if name in TABLES else None


# Parquet row groups of at most this many rows, for every file the sink appends or compaction writes. Rows
# are appended in offset order, so each row group's `from_offset` statistics stay narrow: a read of a few
# offsets (one key's versions, `WarehouseReader.history`) decodes a row group or two instead of a whole file
# (the history of one partition among 1M: a 400k-row file, 190 ms -> 13 ms).
ROW_GROUP_ROWS = 16_384


def writer_properties() -> WriterProperties:
    return WriterProperties(max_row_group_size=ROW_GROUP_ROWS)


def history_name(table: str) -> str:
    return f"{table}_history"


def image_checkpoint_table(table: str) -> str:
    return f"{table}_checkpoints"


def history_schema(table: str) -> pa.Schema:
    """The table's columns (values null on a deletion) followed by the version's start and kind."""
    schema = TABLES[table].schema
    for column in HISTORY_COLUMNS:
        schema = schema.append(column)
    return schema


def image_checkpoint_schema(table: str) -> pa.Schema:
    return TABLES[table].schema.append(IMAGE_CHECKPOINT_COLUMN)


def offset_column(name: str) -> str | None:
    """The column an append-only table is written in the order of, which its reads filter on (None: a
    current table, whose rows are merged, not appended)."""
    if name in TABLES:
        return None
    if any(name == history_name(table) for table in TABLES):
        return HISTORY_COLUMNS[0].name
    if any(name == image_checkpoint_table(table) for table in TABLES):
        return IMAGE_CHECKPOINT_COLUMN.name
    return {BATCHES: "base_offset", SOURCE: "first_offset", GAPS: "last_offset"}.get(name, "offset")


def all_tables() -> dict[str, pa.Schema]:
    """Every Delta table of a warehouse, by name, with its schema."""
    tables: dict[str, pa.Schema] = {}
    for name in TABLES:
        tables[name] = current_schema(name)
        tables[history_name(name)] = history_schema(name)
        tables[image_checkpoint_table(name)] = image_checkpoint_schema(name)
    tables[BATCHES] = BATCHES_SCHEMA
    tables[GAPS] = GAPS_SCHEMA
    tables[IMAGE_CHECKPOINTS] = IMAGE_CHECKPOINTS_SCHEMA
    tables[SOURCE] = SOURCE_SCHEMA
    tables[IMAGES] = IMAGES_SCHEMA
    return tables


def _normalized(location: str | os.PathLike[str]) -> str:
    """An object-store URI as given (no trailing slash); a local path made absolute."""
    text = os.fspath(location)
    if "://" in text and not text.startswith("file://"):
        return text.rstrip("/")
    if text.startswith("file://"):
        text = text.removeprefix("file://")
    return str(Path(text).absolute())


@dataclass(frozen=True)
class Warehouse:
    """A warehouse at `uri` (a local path or an object-store URI) opened with delta-rs `storage_options`."""

    uri: str
    storage_options: Mapping[str, str] = field(default_factory=dict)

    def __init__(self, uri: str | os.PathLike[str], storage_options: Mapping[str, str] | None = None) -> None:
        object.__setattr__(self, "uri", _normalized(uri))
        object.__setattr__(self, "storage_options", MappingProxyType(dict(storage_options or {})))

    @property
    def is_local(self) -> bool:
        return "://" not in self.uri

    def table_uri(self, table: str) -> str:
        return f"{self.uri}/{table}"

    def filesystem(self, table: str, known_sizes: dict[str, int] | None = None) -> pafs.FileSystem:
        """A table's directory as an Arrow filesystem (delta-rs's object store: local or remote alike), for
        files read or written outside delta-rs; `known_sizes` (path: bytes, from the add actions) spares
        an object store a request per file read."""
        return pafs.PyFileSystem(DeltaStorageHandler(self.table_uri(table), self._options(), known_sizes))

    def _options(self) -> dict[str, str] | None:
        return dict(self.storage_options) or None

    def exists(self) -> bool:
        return DeltaTable.is_deltatable(self.table_uri(IMAGES), storage_options=self._options())

    def create(self) -> None:
        """Create every missing table, empty (idempotent: a crash half-way is finished by the next call).
        `images` comes last, so a warehouse that `exists()` has all its tables. An existing table of an older
        layout, or one another writer upgraded past `PROTOCOL`, is refused (WarehouseLayoutError), before
        anything is written. Two writers creating one warehouse at once each finish it (a table the other
        created first is taken as it is)."""
        if self.is_local:
            Path(self.uri).mkdir(parents=True, exist_ok=True)
        if self.exists():
            check_current(self)
        for name, schema in all_tables().items():
            if not DeltaTable.is_deltatable(self.table_uri(name), storage_options=self._options()):
                self._create_table(name, schema)
                continue
            table = self.table(name)
            if name in TABLES and table.metadata().partition_columns != partition_columns(name):
                raise WarehouseLayoutError(
                    self.uri, f"table {name} has no `bucket` partition: the warehouse was written by an older "
                    "kraftlake; rebuild it (ingest the log again into a new warehouse)"
                )
            _check_protocol(self.table_uri(name), table)

    def _create_table(self, name: str, schema: pa.Schema) -> None:
        try:
            DeltaTable.create(
                self.table_uri(name),
                schema=schema,
                name=name,
                partition_by=partition_columns(name),
                configuration=dict(TABLE_PROPERTIES),
                storage_options=self._options(),
            )
        except DeltaError:  # another writer committed its version 0 first
            if not DeltaTable.is_deltatable(self.table_uri(name), storage_options=self._options()):
                raise

    def table(self, name: str, version: int | None = None) -> DeltaTable:
        return DeltaTable(self.table_uri(name), version=version, storage_options=self._options())


def check_current(warehouse: Warehouse) -> None:
    """Refuse a warehouse written before row versions were stamped with the offset of the image they became
    visible in (per record before): its history answers offsets inside batches with states no Kafka node
    held, and which records were batched or in a transaction is not stored, so it cannot be migrated."""
    names = {field.name for field in warehouse.table(BATCHES).schema().fields}
    if "published_offsets" not in names:
        raise WarehouseLayoutError(
            warehouse.uri, "written by an older kraftlake (history per record, no publish points): rebuild it "
            "(ingest or publish the log again into a new warehouse)"
        )


def _check_protocol(uri: str, table: DeltaTable) -> None:
    """Refuse a table another writer upgraded past `PROTOCOL`, naming what it enabled and the way back."""
    protocol = table.protocol()
    if (protocol.min_reader_version, protocol.min_writer_version) == PROTOCOL:
        return
    features = sorted({*(protocol.reader_features or []), *(protocol.writer_features or [])})
    raise WarehouseLayoutError(
        uri, f"another writer upgraded the table to Delta protocol reader {protocol.min_reader_version} / "
        f"writer {protocol.min_writer_version} (features: {', '.join(features) or 'none'}), which kraftlake's "
        f"writer (delta-rs) cannot keep; rebuild the warehouse (ingest or replay the log into a new one) and "
        "leave its table features alone (OPTIMIZE and VACUUM are fine)"
    )
