"""Writes published images to the warehouse with delta-rs, exactly once across crashes.

For one published image at offset P: each table that changed gets its history rows appended and its
current rows merged (two commits, each carrying P in its commit metadata and as its app transaction
version); the Raft batches go to `batches`; the `images` row naming every table's version comes last.
Every commit is idempotent: a table whose app transaction version already covers a row version skips it,
so a crash anywhere is repaired by replaying the same log and writing again.

Costs follow the change, not the warehouse's age: an image checkpoint (every table's full rows) is written
once the history since the last one holds as many rows as that checkpoint did (at least
`checkpoint_min_rows`), so time travel reads one checkpoint plus a bounded stretch of history; a table is
compacted once it holds `compact_above_files` files too many (per bucket, for the current tables); a current
table's merge names the buckets it touches, so Delta rewrites only their files, and a current table whose
size left its bucket count's range is re-bucketed in one overwrite; a table handle is reopened every
`REOPEN_EVERY_COMMITS` commits (delta-rs's in-memory state of a long-open handle grows with every commit).

One writer at a time: before its first commit a sink checks its source against the warehouse's (`lake.source`)
and claims the warehouse with the next writer epoch, an app transaction `<app_id>:writer` committed to
`images`. Every `images` commit carries that transaction too, so it fails (delta-rs: a concurrent
transaction) when another writer claimed the warehouse since this one last read `images`: the older writer
is fenced at its next publish, and the newer one takes over where the warehouse is, at once, whether the
older one died or still runs (as Kafka fences a producer by its epoch). A data table another writer committed
to since this sink read it (a commit that conflicted, a handle reopened on a newer version) is read again
and the image's writes prepared afresh, leaving out what the tables already hold.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import CommitFailedError

from failpoints import failpoint
from image_schema.changes import RowVersion
from image_schema.tables import TABLES, Row
from lake.handles import OPEN_TABLES
from lake.maintenance import MaintenancePolicy, compact_if_due, lost_race, prune_log
from lake.reader import WarehouseReader
from lake.source import SOURCE, SourceIdentity, SourceMismatchError, check_batch, check_cluster, mismatch, table_data
from lake.warehouse import (
    BATCHES,
    BATCHES_SCHEMA,
    BUCKET,
    HISTORY_COLUMNS,
    IMAGE_CHECKPOINT_COLUMN,
    IMAGE_CHECKPOINTS,
    IMAGE_CHECKPOINTS_SCHEMA,
    IMAGES,
    IMAGES_SCHEMA,
    ROWS_PER_BUCKET,
    Warehouse,
    all_tables,
    buckets_for,
    buckets_of,
    history_name,
    image_checkpoint_table,
    partition_columns,
    with_buckets,
    writer_properties,
)
from records import RecordBatch
from replay.image import MetadataImage, Provenance

DELETED = "_deleted"
WriteMode = Literal["append", "overwrite"]
REOPEN_EVERY_COMMITS = 100
SWEEP_EVERY_IMAGES = 100  # then every table no image wrote since the last sweep gets its small files merged
PRUNE_EVERY_COMMITS = 10  # one listing of the `_delta_log` (about 120 entries)
# a current table is re-bucketed when its rows per bucket leave [ROWS_PER_BUCKET / SHRINK_BELOW,
# ROWS_PER_BUCKET * GROW_ABOVE]: a table hovering at a size never flips between two counts
GROW_ABOVE = 2
SHRINK_BELOW = 8
CONFLICT_RETRIES = 3  # a conflict is another writer's commit: reread and retry this often, then stop


class WriterFencedError(Exception):
    """Another writer claimed the warehouse: this one stops before publishing anything more."""


class _StaleTable(Exception):
    """A table another writer committed to since this sink read it: read the tables again, then retry."""


@dataclass(frozen=True)
class PublishedImage:
    provenance: Provenance
    snapshot: bool = False
    image: MetadataImage | None = None  # the image itself, for a checkpoint when one is due


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


@dataclass(frozen=True)
class ImageCheckpointState:
    """The last complete image checkpoint: where it is and how big, to pace the next one."""

    offset: int = -1
    history_rows: int = 0
    rows: int = 0


class DeltaSink:
    """The only writer of one warehouse (see the module's docstring). `app_id` names the writer in the
    tables' app transactions; `source` says where its batches come from (refused if not the warehouse's)."""

    def __init__(
        self,
        warehouse: Warehouse,
        app_id: str = "kraftlake",
        policy: MaintenancePolicy | None = None,
        source: SourceIdentity | None = None,
    ) -> None:
        warehouse.create()
        OPEN_TABLES.forget(warehouse)  # readers of this process may hold handles of a warehouse rebuilt here
        self.warehouse = warehouse
        self.app_id = app_id
        self.policy = policy or MaintenancePolicy()
        self.source = source or SourceIdentity()
        self._tables: dict[str, DeltaTable] = {}
        self._commits: dict[str, int] = {}
        self._through: dict[str, int] = {}
        self._buckets: dict[str, int] = {}  # bucket count of each current table that holds files
        self._written_since_sweep: set[str] = set()
        self._image_tables: tuple[int, dict[str, pa.Table]] = (-1, {})  # see _image_table
        self._images_since_sweep = 0
        self._epoch: int | None = None  # this writer's claim on the warehouse, made at its first commit
        self._held, first_offset = self._held_source()
        self._anchors = self._anchor_batches(first_offset)  # the warehouse's batches a writer's log must match
        self._history_rows = self._last_image_history_rows()
        self._image_checkpoint = self._last_image_checkpoint()

    def _table(self, name: str) -> DeltaTable:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = self.warehouse.table(name)
            self._check_reopened(name, table)
        return table

    def _check_reopened(self, name: str, table: DeltaTable) -> None:
        """A table opened again may show another writer's commits: a newer claim fences this writer; a data
        table written past what this sink knows makes it read everything again."""
        if name == IMAGES and self._epoch is not None:
            holder = table.transaction_version(self._writer_txn())
            if holder != self._epoch:
                raise WriterFencedError(
                    f"warehouse {self.warehouse.uri}: another writer (writer epoch {holder}) took it over; this "
                    f"one (epoch {self._epoch}) stopped; the warehouse holds images through offset "
                    f"{table.transaction_version(self._txn_id(IMAGES))} (nothing published is lost; one writer "
                    "per warehouse at a time)"
                )
        known, found = self._through.get(name), table.transaction_version(self._txn_id(name))
        if known is not None and found is not None and found > known:
            raise _StaleTable(name)

    def _writer_txn(self) -> str:
        return self._txn_id("writer")

    def _held_source(self) -> tuple[SourceIdentity | None, int]:
        """The source the warehouse holds and where its history starts; another cluster is refused here."""
        rows = self._table(SOURCE).to_pyarrow_table().to_pylist()
        if not rows:
            return None, -1
        held = SourceIdentity.from_row(rows[0])
        check_cluster(self.warehouse.uri, held, self.source)
        return held, rows[0]["first_offset"]

    def _anchor_batches(self, first_offset: int) -> list[Row]:
        """The warehouse's first and last batch (`batches` rows): a writer whose log covers their offsets
        must hold the same batches there."""
        through = self.written_through(BATCHES)
        if through < 0:
            return []
        table = self._table(BATCHES)
        found = table.to_pyarrow_table(filters=[("last_offset", "=", through)]).to_pylist()
        if first_offset >= 0:
            found += table.to_pyarrow_table(filters=[("base_offset", "=", first_offset)]).to_pylist()
        return list({row["base_offset"]: row for row in found}.values())

    def _check_anchors(self, batches: Sequence[RecordBatch]) -> None:
        """Refuse a log that differs from the warehouse's at an offset both hold (before anything is written)."""
        for batch in batches if self._anchors else ():
            for row in [row for row in self._anchors if batch.base_offset <= row["base_offset"] <= batch.last_offset]:
                check_batch(self.warehouse.uri, self._held or SourceIdentity(), self.source, row, batch_row(batch))
                self._anchors.remove(row)

    def written_through(self, name: str) -> int:
        """The highest offset whose rows `name` already holds (-1: none): read from the table once, then
        kept as this sink commits (it is the table's only writer)."""
        through = self._through.get(name)
        if through is None:
            version = self._table(name).transaction_version(self._txn_id(name))
            through = self._through[name] = -1 if version is None else version
        return through

    def _txn_id(self, name: str) -> str:
        return f"{self.app_id}:{name}"

    def _commit(self, name: str, offset: int, provenance: Provenance) -> CommitProperties:
        """An `images` commit also names this writer's epoch: it conflicts with any claim made since."""
        transactions = [Transaction(self._txn_id(name), offset)]
        if name == IMAGES and self._epoch is not None:
            transactions.append(Transaction(self._writer_txn(), self._epoch))
        return CommitProperties(
            custom_metadata={
                "kraftlake.offset": str(provenance.offset),
                "kraftlake.epoch": str(provenance.epoch),
                "kraftlake.logTimeMs": str(provenance.log_time_ms),
            },
            app_transactions=transactions,
        )

    @property
    def history_rows(self) -> int:
        """History rows written through the last image, all tables."""
        return self._history_rows

    def last_published(self) -> int:
        """The last published image's offset, by the readers' rule (`WarehouseReader.last_published`): read
        once, then kept as this sink publishes."""
        if IMAGES not in self._through:
            self._through[IMAGES] = WarehouseReader(self.warehouse).last_published()
        return self._through[IMAGES]

    def _last_image_history_rows(self) -> int:
        last = self.last_published()
        if last < 0:
            return 0
        found = self._table(IMAGES).to_pyarrow_table(columns=["history_rows"], filters=[("offset", "=", last)])
        return int(found["history_rows"][0].as_py()) if found.num_rows else 0

    def _last_image_checkpoint(self) -> ImageCheckpointState:
        last = self.written_through(IMAGE_CHECKPOINTS)
        if last < 0:
            return ImageCheckpointState()
        row = self._table(IMAGE_CHECKPOINTS).to_pyarrow_table(filters=[("offset", "=", last)]).to_pylist()[0]
        return ImageCheckpointState(row["offset"], row["history_rows"], row["rows"])

    def write(
        self, image: PublishedImage | None, versions: Sequence[RowVersion], batches: Sequence[RecordBatch]
    ) -> bool:
        """Make `image` (None: nothing published, e.g. a transaction still open) and its rows durable.
        True when this call added the image's `images` row (False: nothing new to publish). A commit that
        conflicts with another writer's is retried after reading the tables again, unless that writer
        claimed the warehouse since (WriterFencedError)."""
        conflicts = 0
        while True:
            try:
                return self.commit(image, self.prepare(image, versions, batches), len(versions))
            except (CommitFailedError, _StaleTable) as error:
                conflicts += 1
                if conflicts > CONFLICT_RETRIES:
                    raise WriterFencedError(
                        f"warehouse {self.warehouse.uri}: another writer keeps committing ({error}); stopped "
                        f"after offset {self.written_through(IMAGES)} (one writer per warehouse at a time)"
                    ) from None
                self._read_again()

    def _read_again(self) -> None:
        """Forget every handle and what it told; a newer claim on the warehouse fences this writer here."""
        self._tables.clear()
        self._through.clear()
        self._buckets.clear()
        self._image_tables = (-1, {})
        self._table(IMAGES)
        self._history_rows = self._last_image_history_rows()
        self._image_checkpoint = self._last_image_checkpoint()

    def prepare(
        self, image: PublishedImage | None, versions: Sequence[RowVersion], batches: Sequence[RecordBatch]
    ) -> list[TableWrite]:
        """The Arrow data of every commit `write` makes, in order, leaving out what the tables already hold."""
        self._check_anchors(batches)
        writes: list[TableWrite] = []
        batch_write = self._batches_write(batches)
        if batch_write is not None:
            writes.append(batch_write)
        if image is None:
            return writes
        by_table: dict[str, list[RowVersion]] = {}
        for version in versions:
            by_table.setdefault(version.table, []).append(version)
        for table, table_versions in by_table.items():
            writes.extend(self._table_writes(table, table_versions, image))
        return writes

    def commit(self, image: PublishedImage | None, writes: Sequence[TableWrite], row_versions: int = 0) -> bool:
        """Make the prepared commits, then the `images` row; True when that row is new.
        `row_versions` counts the image's history rows (also those a crashed attempt already wrote)."""
        if self._epoch is None:
            if not writes and (image is None or image.provenance.offset < self.last_published()):
                return False  # nothing of this writer's to write yet: it claims nothing
            self._own(self._first_offset(image, writes))
        for write in writes:
            try:
                self._make(write)
            except Exception as error:
                if not lost_race(error):
                    raise
                self._tables.pop(write.table, None)  # `kraftlake maintain` compacted under the handle
                self._make(write)
            failpoint(write.failpoint)
        published = False
        if image is not None and image.provenance.offset > self.last_published():
            published = True
            self._history_rows += row_versions
            self._append_image(image)
            failpoint("sink.after_image")
        if image is not None and image.provenance.offset == self.last_published():
            self._image_checkpoint_if_due(image)  # also on a rerun: a crash may have cut it short
        self._maintain([*(write.table for write in writes), IMAGES])
        self._sweep_if_due([write.table for write in writes], published)
        return published

    def _make(self, write: TableWrite) -> None:
        if write.merge:
            self._merge(write)
        else:
            mode: WriteMode = "overwrite" if write.overwrite else "append"
            self._append(write.table, write.data, write.offset, write.provenance, mode)

    def _own(self, first_offset: int) -> None:
        """Record this writer's source if the warehouse holds none yet, then claim the warehouse."""
        if self._held is None:
            self._record_source(first_offset)
        for _ in range(CONFLICT_RETRIES + 1):
            images = self._table(IMAGES)
            epoch = (images.transaction_version(self._writer_txn()) or 0) + 1
            claim = CommitProperties(
                custom_metadata={"kraftlake.writer": self.source.describe()},
                app_transactions=[Transaction(self._writer_txn(), epoch)],
            )
            try:
                write_deltalake(images, IMAGES_SCHEMA.empty_table(), mode="append", commit_properties=claim)
            except CommitFailedError:  # the writer in place published (or another claimed) since: read again
                self._tables.pop(IMAGES, None)
                continue
            self._epoch = epoch
            return
        raise WriterFencedError(
            f"warehouse {self.warehouse.uri}: other writers keep claiming it; this one published nothing "
            "(one writer per warehouse at a time)"
        )

    def _record_source(self, first_offset: int) -> None:
        """Write the `source` row; a writer that lost the race to another first writer must be that one."""
        table = self._table(SOURCE)
        txn = CommitProperties(app_transactions=[Transaction(self._txn_id(SOURCE), 0)])
        try:
            write_deltalake(table, table_data(self.source, first_offset), mode="append", commit_properties=txn)
            self._held = self.source
            return
        except CommitFailedError:
            self._tables.pop(SOURCE, None)
        self._held, _ = self._held_source()
        if self._held != self.source:
            raise SourceMismatchError(mismatch(self.warehouse.uri, self._held or SourceIdentity(), self.source,
                                               "another writer started the warehouse from there at the same moment"))

    def _first_offset(self, image: PublishedImage | None, writes: Sequence[TableWrite]) -> int:
        """Where the warehouse's history starts: this first write's first batch, or its snapshot image
        (-1: a warehouse an older kraftlake filled without recording its source)."""
        if self.last_published() >= 0 or self.written_through(BATCHES) >= 0:
            return -1
        for write in writes:
            if write.table == BATCHES:
                return int(write.data["base_offset"][0].as_py())
        return -1 if image is None else image.provenance.offset

    def _batches_write(self, batches: Sequence[RecordBatch]) -> TableWrite | None:
        through = self.written_through(BATCHES)
        rows = [batch_row(b) for b in batches if b.last_offset > through]
        if not rows:
            return None
        last = batches[-1]
        provenance = Provenance(last.last_offset, last.partition_leader_epoch, last.append_time_ms, True)
        data = pa.Table.from_pylist(rows, schema=BATCHES_SCHEMA)
        return TableWrite(BATCHES, data, last.last_offset, provenance, "sink.after_batches")

    def _table_writes(
        self, table: str, versions: Sequence[RowVersion], image: PublishedImage
    ) -> Iterator[TableWrite]:
        """The history append and the current-rows merge of one table, from one Arrow table of its versions.

        Each commit leaves out the versions its table already holds (a rerun after a crash between them).
        A change of at least half the table's rows (a backlog caught up in one image) rewrites it from the
        image instead: a merge would read and rewrite nearly every bucket anyway, and new keys spread over
        buckets that hold only old ones left a second file in each, so a compaction of the whole table
        followed (1M-partition bootstrap: merges 60 s and compactions 97 s over 13 images, profiled)."""
        provenance = image.provenance
        name = history_name(table)
        history_through, current_through = self.written_through(name), self.written_through(table)
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
        buckets = self._bucket_count(table)
        if buckets is not None and image.image is not None and self._mostly_changed(table, len(latest), buckets):
            rows = self._image_table(image, table)
            buckets = self._buckets[table] = buckets_for(rows.num_rows)
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
            buckets = self._buckets[table] = buckets_for(rows.num_rows)
            yield TableWrite(table, with_buckets(rows, table, buckets), provenance.offset, provenance,
                             "sink.after_table")

    def _mostly_changed(self, table: str, changed: int, buckets: int) -> bool:
        """Whether `changed` keys are at least half the current table's rows (read from its files' statistics
        only when the bucket count allows it: a table of B buckets holds at least B * ROWS_PER_BUCKET /
        SHRINK_BELOW rows)."""
        if changed * 2 < buckets * ROWS_PER_BUCKET // SHRINK_BELOW:
            return False
        actions = pa.table(self._table(table).get_add_actions(flatten=True))
        return changed * 2 >= int(pc.sum(actions["num_records"]).as_py() or 0)

    def _image_table(self, image: PublishedImage, table: str) -> pa.Table:
        """Every row of `table` in the image, as Arrow: built once per image (a rewrite and a checkpoint of
        the same image share it)."""
        offset, tables = self._image_tables
        if offset != image.provenance.offset:
            self._image_tables = (offset, tables) = (image.provenance.offset, {})
        if table not in tables and image.image is not None:
            spec = TABLES[table]
            tables[table] = spec.arrow([row for _, row in spec.image_rows(image.image)])
        return tables[table]

    def _bucket_count(self, table: str) -> int | None:
        """The bucket count of a current table, read from any of its files' bucket (None: it holds none)."""
        if table not in self._buckets:
            actions = pa.table(self._table(table).get_add_actions(flatten=True))
            if actions.num_rows == 0:
                return None
            self._buckets[table] = buckets_of(actions[f"partition.{BUCKET.name}"][0].as_py())
        return self._buckets[table]

    def _merge(self, write: TableWrite) -> None:
        spec = TABLES[write.table]
        delta_table = self._table(write.table)
        touched = ", ".join(str(bucket) for bucket in pc.unique(write.data[BUCKET.name]).to_pylist())
        keys = " AND ".join(f"t.{column} = s.{column}" for column in spec.key)
        predicate = f"t.{BUCKET.name} IN ({touched}) AND {keys}"  # delta-rs reads and rewrites those buckets only
        (
            delta_table.merge(
                write.data,
                predicate,
                source_alias="s",
                target_alias="t",
                commit_properties=self._commit(write.table, write.offset, write.provenance),
            )
            .when_matched_delete(predicate=f"s.{DELETED}")
            .when_matched_update_all(predicate=f"NOT s.{DELETED}", except_cols=[DELETED])
            .when_not_matched_insert_all(predicate=f"NOT s.{DELETED}", except_cols=[DELETED])
            .execute()
        )
        self._committed(write.table, write.offset)

    def _append_image(self, image: PublishedImage) -> None:
        write = self.image_write(image)
        self._append(write.table, write.data, write.offset, write.provenance)

    def image_write(self, image: PublishedImage) -> TableWrite:
        """The `images` row of `image`, naming the tables' versions now: the commit that publishes it."""
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
            "history_rows": self._history_rows,
        }
        data = pa.Table.from_pylist([row], schema=IMAGES_SCHEMA)
        return TableWrite(IMAGES, data, provenance.offset, provenance, "sink.after_image")

    def _image_checkpoint_if_due(self, image: PublishedImage) -> None:
        """Write every table's full rows at this image, then its `checkpoints` row, when the history since
        the last checkpoint is as big as that checkpoint (Kafka's snapshot-after-N-bytes, in rows)."""
        since = self._history_rows - self._image_checkpoint.history_rows
        if image.image is None or since < max(self.policy.checkpoint_min_rows, self._image_checkpoint.rows):
            return
        provenance, rows = image.provenance, 0
        for table in TABLES:
            data = self._image_table(image, table)
            rows += data.num_rows
            name = image_checkpoint_table(table)
            if data.num_rows and self.written_through(name) < provenance.offset:
                offsets = pa.array([provenance.offset] * data.num_rows, pa.int64())
                self._append(name, data.append_column(IMAGE_CHECKPOINT_COLUMN, offsets), provenance.offset, provenance)
        failpoint("sink.before_checkpoint_row")
        state = ImageCheckpointState(provenance.offset, self._history_rows, rows)
        data = pa.Table.from_pylist([state.__dict__], schema=IMAGE_CHECKPOINTS_SCHEMA)
        self._append(IMAGE_CHECKPOINTS, data, provenance.offset, provenance)
        self._image_checkpoint = state

    def _maintain(self, tables: Iterator[str] | Sequence[str], above: int | None = None) -> None:
        """Re-bucket or compact each of `tables` that is due (`above`: as `compact_if_due`'s)."""
        for name in dict.fromkeys(tables):
            try:
                if (name in TABLES and self._rebucket_if_due(name)) or compact_if_due(
                    self.warehouse, name, self._table(name), self.policy, above
                ):
                    self._tables.pop(name, None)  # a rewritten table is reopened: its state starts small again
            except Exception as error:
                if not lost_race(error):
                    raise
                self._tables.pop(name, None)  # `kraftlake maintain` got there first: the next image retries

    def _sweep_if_due(self, written: Sequence[str], published: bool) -> None:
        """Every SWEEP_EVERY_IMAGES images, merge the small files of each table no image wrote since the
        last sweep. A table that went quiet (the ISR churn is over) would otherwise keep up to
        `compact_above_files` small files for good, and every read of its latest offsets open them all."""
        self._written_since_sweep.update([*written, IMAGES] if published else written)
        self._images_since_sweep += published
        if self._images_since_sweep < SWEEP_EVERY_IMAGES:
            return
        self._maintain([name for name in all_tables() if name not in self._written_since_sweep], above=0)
        self._written_since_sweep, self._images_since_sweep = set(), 0

    def _rebucket_if_due(self, name: str) -> bool:
        """Rewrite a current table with the bucket count its size calls for, once its rows per bucket left
        the range that count is for; one overwrite commit, so readers see the old files or the new."""
        table = self._table(name)
        actions = pa.table(table.get_add_actions(flatten=True))
        buckets = self._bucket_count(name)
        if buckets is None or actions.num_rows == 0:
            return False
        rows = int(pc.sum(actions["num_records"]).as_py() or 0)
        if ROWS_PER_BUCKET * buckets // SHRINK_BELOW <= rows <= ROWS_PER_BUCKET * buckets * GROW_ABOVE:
            return False
        wanted = self._buckets[name] = buckets_for(rows)
        if wanted == buckets:
            return False
        data = with_buckets(table.to_pyarrow_table(), name, wanted)
        write_deltalake(table, data, mode="overwrite", partition_by=partition_columns(name))  # keeps app txns
        return True

    @staticmethod
    def warehouse_tables() -> list[str]:
        """The tables an images row pins: every sub-image table, its history, and the batches."""
        return [*TABLES, *(history_name(t) for t in TABLES), BATCHES]

    def _append(
        self, name: str, data: pa.Table, offset: int, provenance: Provenance, mode: WriteMode = "append"
    ) -> None:
        table = self._table(name)
        write_deltalake(
            table, data, mode=mode, partition_by=partition_columns(name),
            commit_properties=self._commit(name, offset, provenance), writer_properties=writer_properties(),
        )
        self._committed(name, offset)

    def _committed(self, name: str, offset: int) -> None:
        """Note the commit (delta-rs already moved the handle to it); reopen the handle every
        REOPEN_EVERY_COMMITS commits, as a long-open one gets slower with every commit, and prune the
        table's log every PRUNE_EVERY_COMMITS, as delta-rs lists a local one whole on every commit (and any
        one at every Delta checkpoint)."""
        self._through[name] = offset
        count = self._commits[name] = self._commits.get(name, 0) + 1
        if count % REOPEN_EVERY_COMMITS == 0:
            self._tables.pop(name, None)
        if count % PRUNE_EVERY_COMMITS == 0:
            prune_log(self.warehouse, name)
