"""The commit protocol: published images written to the warehouse with delta-rs, exactly once across crashes.

For one published image at offset P the writer makes the commits `kraftlake.lake.writes` prepares (each carrying P in
its commit metadata and as its app transaction version), then the `images` row naming every table's version.
Every commit is idempotent: a table whose app transaction version already covers a row version skips it,
so a crash anywhere is repaired by replaying the same log and writing again. What keeps the costs bounded
as the warehouse ages (image checkpoints, compaction, re-bucketing, sweeps, log pruning, handle reopening)
is the maintainer's (`kraftlake.lake.maintainer`), run after each commit as one of the pipeline's publishers.

One writer at a time: before its first commit a sink checks its source against the warehouse's (`kraftlake.lake.source`)
and claims the warehouse with the next writer epoch, an app transaction `<app_id>:writer` committed to
`images`. Every `images` commit carries that transaction too, so it fails (delta-rs: a concurrent
transaction) when another writer claimed the warehouse since this one last read `images`: the older writer
is fenced at its next publish, and the newer one takes over where the warehouse is, at once, whether the
older one died or still runs (as Kafka fences a producer by its epoch). Every race lost to another writer
(`lake.errors.lost_race`: a commit that conflicted, a handle reopened on a newer version, a file `kraftlake
maintain` compacted away, a claim made at the same moment) is handled one way: the tables are read again and
the image's writes prepared afresh, leaving out what the tables already hold.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, Transaction, write_deltalake
from deltalake.exceptions import CommitFailedError

from kraftlake.failpoints import failpoint
from kraftlake.image_schema.changes import RowVersion
from kraftlake.image_schema.tables import TABLES, Row
from kraftlake.lake.errors import StaleTableError, WriterFencedError, lost_race
from kraftlake.lake.handles import OPEN_TABLES
from kraftlake.lake.maintenance import MaintenancePolicy
from kraftlake.lake.sink_tables import WRITER_KEY, SinkTables, writer_description
from kraftlake.lake.source import SOURCE, SourceIdentity, check_batch, check_cluster, mismatch, table_data
from kraftlake.lake.warehouse import (
    BATCHES,
    BUCKET,
    IMAGES,
    IMAGES_SCHEMA,
    Warehouse,
    history_name,
    partition_columns,
    writer_properties,
)
from kraftlake.lake.writes import DELETED, LoadedBatch, PublishedImage, TableWrite, batch_row, prepare
from kraftlake.replay.image import Provenance

WriteMode = Literal["append", "overwrite"]
CONFLICT_RETRIES = 3  # a conflict is another writer's commit: reread and retry this often, then stop
T = TypeVar("T")


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
        self.policy = policy or MaintenancePolicy()
        self.source = source or SourceIdentity()
        self.tables = SinkTables(warehouse, app_id)
        self._held, first_offset = self._held_source()
        self._anchors = self._anchor_batches(first_offset)  # the warehouse's batches a writer's log must match
        self._history_rows = self._last_image_history_rows()

    @property
    def claimed(self) -> bool:
        """Whether this writer claimed the warehouse (at its first commit)."""
        return self.tables.epoch is not None

    def _held_source(self) -> tuple[SourceIdentity | None, int]:
        """The source the warehouse holds and where its history starts; another cluster is refused here."""
        rows = self.tables.table(SOURCE).to_pyarrow_table().to_pylist()
        if not rows:
            return None, -1
        held = SourceIdentity.from_row(rows[0])
        check_cluster(self.warehouse.uri, held, self.source)
        return held, rows[0]["first_offset"]

    def _anchor_batches(self, first_offset: int) -> list[Row]:
        """The warehouse's first and last batch (`batches` rows): a writer whose log covers their offsets
        must hold the same batches there."""
        through = self.tables.written_through(BATCHES)
        if through < 0:
            return []
        table = self.tables.table(BATCHES)
        found = table.to_pyarrow_table(filters=[("last_offset", "=", through)]).to_pylist()
        if first_offset >= 0:
            found += table.to_pyarrow_table(filters=[("base_offset", "=", first_offset)]).to_pylist()
        return list({row["base_offset"]: row for row in found}.values())

    def _check_anchors(self, batches: Sequence[LoadedBatch]) -> None:
        """Refuse a log that differs from the warehouse's at an offset both hold (before anything is written)."""
        for batch, _ in batches if self._anchors else ():
            for row in [row for row in self._anchors if batch.base_offset <= row["base_offset"] <= batch.last_offset]:
                read = batch_row(batch)
                stored = {column: row[column] for column in read}
                check_batch(self.warehouse.uri, self._held or SourceIdentity(), self.source, stored, read)
                self._anchors.remove(row)

    def _commit(self, name: str, offset: int, provenance: Provenance) -> CommitProperties:
        """An `images` commit also names this writer's epoch: it conflicts with any claim made since."""
        transactions = [Transaction(self.tables.txn_id(name), offset)]
        if name == IMAGES and self.tables.epoch is not None:
            transactions.append(Transaction(self.tables.writer_txn(), self.tables.epoch))
        return CommitProperties(
            custom_metadata={
                "kraftlake.offset": str(provenance.offset),
                "kraftlake.epoch": str(provenance.epoch),
                "kraftlake.logTimeMs": str(provenance.log_time_ms),
            },
            app_transactions=transactions,
        )

    def history_through(self) -> int:
        """The last offset the warehouse's history covers (-1: none): its batches, or a snapshot image."""
        return max(self.tables.written_through(BATCHES), self.tables.last_published())

    @property
    def history_rows(self) -> int:
        """History rows written through the last image, all tables."""
        return self._history_rows

    def _last_image_history_rows(self) -> int:
        last = self.tables.last_published()
        if last < 0:
            return 0
        found = self.tables.table(IMAGES).to_pyarrow_table(columns=["history_rows"], filters=[("offset", "=", last)])
        return int(found["history_rows"][0].as_py()) if found.num_rows else 0

    def write(
        self, image: PublishedImage | None, versions: Sequence[RowVersion], batches: Sequence[LoadedBatch]
    ) -> bool:
        """Make `image` (None: nothing published, e.g. a transaction still open) and its rows durable.
        True when this call added the image's `images` row (False: nothing new to publish). A commit that
        conflicts with another writer's is retried after reading the tables again, unless that writer
        claimed the warehouse since (WriterFencedError)."""
        return self.retrying(lambda: self.commit(image, self.prepare(image, versions, batches), len(versions)))

    def retrying(self, step: Callable[[], T]) -> T:
        """Run `step` (commits of this writer), again after reading the tables anew when it lost a race to
        another writer (`lost_race`), at most CONFLICT_RETRIES times: then a conflict stops this writer, any
        other lost race is raised as it is (a file still missing is not another writer's doing)."""
        conflicts = 0
        while True:
            try:
                return step()
            except Exception as error:
                if not lost_race(error):
                    raise
                conflicts += 1
                if conflicts > CONFLICT_RETRIES:
                    if not isinstance(error, CommitFailedError | StaleTableError):
                        raise
                    raise WriterFencedError(
                        self.warehouse.uri,
                        f"another writer keeps committing ({error}); stopped after offset "
                        f"{self.tables.written_through(IMAGES)} (one writer per warehouse at a time)",
                    ) from None
                self.tables.forget()
                self._history_rows = self._last_image_history_rows()

    def prepare(
        self, image: PublishedImage | None, versions: Sequence[RowVersion], batches: Sequence[LoadedBatch]
    ) -> list[TableWrite]:
        """The Arrow data of every commit `write` makes, in order (`kraftlake.lake.writes`), after checking the batches
        against the warehouse's."""
        self._check_anchors(batches)
        return prepare(self.tables, self.policy, image, versions, batches)

    def commit(self, image: PublishedImage | None, writes: Sequence[TableWrite], row_versions: int = 0) -> bool:
        """Make the prepared commits, then the `images` row; True when that row is new.
        `row_versions` counts the image's history rows (also those a crashed attempt already wrote)."""
        if self.tables.epoch is None:
            if not writes and (image is None or image.provenance.offset < self.tables.last_published()):
                return False  # nothing of this writer's to write yet: it claims nothing
            self._own(self._first_offset(image, writes))
        for write in writes:
            self._make(write)
            failpoint(write.failpoint)
        if image is None or image.provenance.offset <= self.tables.last_published():
            return False
        self._history_rows += row_versions
        write = self.image_write(image)
        self.append(write.table, write.data, write.offset, write.provenance)
        failpoint("sink.after_image")
        return True

    def _make(self, write: TableWrite) -> None:
        if write.merge:
            self._merge(write)
        else:
            self.append(write.table, write.data, write.offset, write.provenance,
                        "overwrite" if write.overwrite else "append")

    def _own(self, first_offset: int) -> None:
        """Record this writer's source if the warehouse holds none yet, then claim the warehouse."""
        if self._held is None:
            self._record_source(first_offset)
        images = self.tables.table(IMAGES)
        epoch = (images.transaction_version(self.tables.writer_txn()) or 0) + 1
        claim = CommitProperties(
            custom_metadata={WRITER_KEY: writer_description(self.source.describe())},
            app_transactions=[Transaction(self.tables.writer_txn(), epoch)],
        )
        # the writer in place published (or another claimed) since `images` was read: a conflict, retried
        write_deltalake(images, IMAGES_SCHEMA.empty_table(), mode="append", commit_properties=claim)
        self.tables.epoch = epoch

    def _record_source(self, first_offset: int) -> None:
        """Write the `source` row; a writer that lost the race to another first writer must be that one."""
        table = self.tables.table(SOURCE)
        txn = CommitProperties(app_transactions=[Transaction(self.tables.txn_id(SOURCE), 0)])
        try:
            write_deltalake(table, table_data(self.source, first_offset), mode="append", commit_properties=txn)
            self._held = self.source
            return
        except CommitFailedError:
            self.tables.reopen(SOURCE)
        self._held, _ = self._held_source()
        if self._held != self.source:
            raise mismatch(self.warehouse.uri, self._held or SourceIdentity(), self.source,
                           "another writer started the warehouse from there at the same moment")

    def _first_offset(self, image: PublishedImage | None, writes: Sequence[TableWrite]) -> int:
        """Where the warehouse's history starts: this first write's first batch, or its snapshot image
        (-1: a warehouse an older kraftlake filled without recording its source)."""
        if self.tables.last_published() >= 0 or self.tables.written_through(BATCHES) >= 0:
            return -1
        for write in writes:
            if write.table == BATCHES:
                return int(write.data["base_offset"][0].as_py())
        return -1 if image is None else image.provenance.offset

    def _merge(self, write: TableWrite) -> None:
        spec = TABLES[write.table]
        delta_table = self.tables.table(write.table)
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
        self.tables.committed(write.table, write.offset)

    def image_write(self, image: PublishedImage) -> TableWrite:
        """The `images` row of `image`, naming the tables' versions now: the commit that publishes it."""
        provenance = image.provenance
        versions = {name: self.tables.table(name).version() for name in self.warehouse_tables()}
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

    @staticmethod
    def warehouse_tables() -> list[str]:
        """The tables an images row pins: every sub-image table, its history, and the batches."""
        return [*TABLES, *(history_name(t) for t in TABLES), BATCHES]

    def append(
        self, name: str, data: pa.Table, offset: int, provenance: Provenance, mode: WriteMode = "append"
    ) -> None:
        """One commit of `data` to table `name`, holding rows through `offset`."""
        table = self.tables.table(name)
        write_deltalake(
            table, data, mode=mode, partition_by=partition_columns(name),
            commit_properties=self._commit(name, offset, provenance), writer_properties=writer_properties(),
        )
        self.tables.committed(name, offset)
