"""The warehouse's tables as their one writer knows them: open handles, the offset each holds, bucket counts.

Shared by the commit protocol (`sink`) and the maintenance scheduler (`maintainer`), so that both
see one handle per table and one record of what it holds. What the writer learnt is kept instead of read
again (it is each table's only writer); a handle opened again is checked against it: a newer claim on the
warehouse fences this writer, and a data table another writer committed to makes it forget everything.
"""

from __future__ import annotations

import os
import socket
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.errors import StaleTableError, WriterFencedError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import BUCKET, IMAGES, Warehouse, buckets_of
from kraftlake.replay.image import MetadataImage

WRITER_KEY = "kraftlake.writer"  # the commit metadata naming the writer that claimed the warehouse
CLAIMS_LOOKED_AT = 20  # the claim is among the latest commits of `images` (a claim, then its images)


def writer_description(source: str) -> str:
    """The claiming writer as an operator finds it: its source, host and process id."""
    return f"{source}, on {socket.gethostname()} as pid {os.getpid()}"


def claimant(images: DeltaTable) -> str:
    """Who made the latest claim on the warehouse, from the `images` table's commit metadata."""
    claims = (commit[WRITER_KEY] for commit in images.history(CLAIMS_LOOKED_AT) if WRITER_KEY in commit)
    return next(claims, "its commit is not among the latest")


class SinkTables:
    """Handles and knowledge of one writer (`app_id` names it in the tables' app transactions)."""

    def __init__(self, warehouse: Warehouse, app_id: str) -> None:
        self.warehouse = warehouse
        self.app_id = app_id
        self.epoch: int | None = None  # this writer's claim on the warehouse, made at its first commit
        self.commits: Counter[str] = Counter()  # commits made per table, for the maintainer's pacing
        self.generation = 0  # how often everything was read again (state derived from the tables goes stale)
        self._handles: dict[str, DeltaTable] = {}
        self._through: dict[str, int] = {}
        self._buckets: dict[str, int] = {}  # bucket count of each current table that holds files
        self._image_tables: tuple[int, dict[str, pa.Table]] = (-1, {})  # see image_table

    def table(self, name: str) -> DeltaTable:
        table = self._handles.get(name)
        if table is None:
            table = self._handles[name] = self.warehouse.table(name)
            self._check_reopened(name, table)
        return table

    def reopen(self, name: str) -> None:
        """Drop the handle of `name`: the next use opens it afresh (a rewritten or long-open table)."""
        self._handles.pop(name, None)

    def forget(self) -> None:
        """Forget every handle and what it told; a newer claim on the warehouse fences this writer here."""
        self._handles.clear()
        self._through.clear()
        self._buckets.clear()
        self._image_tables = (-1, {})
        self.generation += 1
        self.table(IMAGES)

    def _check_reopened(self, name: str, table: DeltaTable) -> None:
        """A table opened again may show another writer's commits: a newer claim fences this writer; a data
        table written past what this writer knows makes it read everything again."""
        if name == IMAGES and self.epoch is not None:
            holder = table.transaction_version(self.writer_txn())
            if holder != self.epoch:
                raise WriterFencedError(self.warehouse.uri, self._fenced(table, holder))
        known, found = self._through.get(name), table.transaction_version(self.txn_id(name))
        if known is not None and found is not None and found > known:
            raise StaleTableError(name)

    def _fenced(self, images: DeltaTable, holder: int | None) -> str:
        """Why this writer stopped, what the warehouse holds, who holds it and what to do: not a rerun (the
        newest writer wins, so a rerun would fence the other)."""
        through = images.transaction_version(self.txn_id(IMAGES))
        published = "no image is published yet" if through is None else \
            f"it holds images through offset {through}"
        return (f"another writer (writer epoch {holder}: {claimant(images)}) took it over; this one (epoch "
                f"{self.epoch}) stopped, and {published} (nothing published is lost). One writer per warehouse: "
                "rerunning this one would stop that one; stop one of the two (the claim is the `images` table's "
                f"latest commit with `{WRITER_KEY}`)")

    def txn_id(self, name: str) -> str:
        return f"{self.app_id}:{name}"

    def writer_txn(self) -> str:
        return self.txn_id("writer")

    def written_through(self, name: str) -> int:
        """The highest offset whose rows `name` already holds (-1: none): read from the table once, then
        kept as this writer commits."""
        through = self._through.get(name)
        if through is None:
            version = self.table(name).transaction_version(self.txn_id(name))
            through = self._through[name] = -1 if version is None else version
        return through

    def last_published(self) -> int:
        """The last published image's offset, by the readers' rule (`WarehouseReader.last_published`): read
        once, then kept as this writer publishes."""
        if IMAGES not in self._through:
            self._through[IMAGES] = WarehouseReader(self.warehouse).last_published()
        return self._through[IMAGES]

    def committed(self, name: str, offset: int) -> None:
        """Note a commit to `name` holding rows through `offset` (delta-rs already moved the handle to it)."""
        self._through[name] = offset
        self.commits[name] += 1

    def rows(self, name: str) -> int | None:
        """The table's row count, from its files' statistics (None: it holds no file)."""
        actions = pa.table(self.table(name).get_add_actions(flatten=True))
        return int(pc.sum(actions["num_records"]).as_py() or 0) if actions.num_rows else None

    def bucket_count(self, table: str) -> int | None:
        """The bucket count of a current table, read from any of its files' bucket (None: it holds none)."""
        if table not in self._buckets:
            actions = pa.table(self.table(table).get_add_actions(flatten=True))
            if actions.num_rows == 0:
                return None
            self._buckets[table] = buckets_of(actions[f"partition.{BUCKET.name}"][0].as_py())
        return self._buckets[table]

    def set_buckets(self, table: str, buckets: int) -> int:
        """Note the bucket count a write of the whole table gives it."""
        self._buckets[table] = buckets
        return buckets

    def image_table(self, offset: int, image: MetadataImage, table: str) -> pa.Table:
        """Every row of `table` in the image at `offset`, as Arrow: built once per image (a rewrite and an
        image checkpoint of the same image share it)."""
        built, tables = self._image_tables
        if built != offset:
            self._image_tables = (built, tables) = (offset, {})
        if table not in tables:
            spec = TABLES[table]
            tables[table] = spec.arrow([row for _, row in spec.image_rows(image)])
        return tables[table]
