"""`WarehouseReader`: everything that reads a warehouse, the way delta-rs's `DeltaTable` owns reading a table.

    reader = WarehouseReader(Warehouse("warehouse"))
    image = reader.image_at(reader.offset_at(time_ms))      # each sub-image table as Arrow
    reader.changes(1000, 2000); reader.history("partitions", "orders-3")

Its rules hold for every command (`image`, `changes`, `history`, `sql`, `report`) and for the sink:

- **Published range**: only what a published image covers is readable, up to the last `images` row, read
  from the `images` files' statistics (no scan), so a reader never sees half of an image being written.
  What is known (`known`: the first published image, which the first `images` row may follow, to the last
  offset read, with their times and the gaps) is defined here once; every place that states it asks.
- **Time → offset** (`offset_at`): the last offset appended at or before the time, capped at the last
  published image; the snapshot a history starts from counts from its own time. A time before all of it is
  refused (TimeTravelError): no metadata was committed by then.
- **Which image answers an offset** (`answer`): Kafka's rule, written once in `replay.visibility`: the last
  image published at or before it, from the `batches` row holding it (the images published inside the batch
  and the one in force before it). Before the first image, past the end and inside a gap (`gaps`) are
  refused (TimeTravelError naming what is known). A warehouse an older kraftlake wrote (no publish points)
  is refused with how to rebuild it, never read with the old meaning.
- **Image at offset** (`image_at`): the answering image's newest image checkpoint at or before it plus the
  history rows since, read from the tables' latest versions with filters that prune by file statistics, so
  neither Delta's log retention nor VACUUM takes an offset away and the cost follows the image, not the
  history. Its provenance is the answering image's; `asked` is the offset asked.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake.exceptions import TableNotFoundError

from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.errors import TimeTravelError, UnknownKeyError, WarehouseLayoutError, not_a_warehouse
from kraftlake.lake.handles import OPEN_TABLES
from kraftlake.lake.history import KeyParser, Version, change_lines, versions
from kraftlake.lake.scan import AnyOf, Selection, Where, scan
from kraftlake.lake.time_travel import (
    ImageRow,
    WarehouseImage,
    apply_changes,
    image_row,
    last_version_rows,
    one_chunk,
    some_chunk,
)
from kraftlake.lake.warehouse import (
    BATCHES,
    GAPS,
    IMAGE_CHECKPOINTS,
    IMAGES,
    Warehouse,
    check_current,
    history_name,
    history_schema,
    image_checkpoint_table,
)
from kraftlake.replay.image import Provenance
from kraftlake.replay.visibility import (
    BatchPublishes,
    Gap,
    Known,
    OffsetNotKnown,
    gap_holding,
    image_offset,
)

READERS = 4  # tables read at once by `image_at`


@dataclass(frozen=True)
class TableRead:
    """One Delta read the reader chose: table `name` at `version`, the rows `where` selects (for Spark)."""

    name: str
    version: int
    where: Selection


@dataclass(frozen=True)
class ImageReads:
    """The reads that make the image at `offset`: per sub-image table, its image checkpoint's rows (None:
    start from the empty table) and its history versions since, of which each key's last one wins and is
    dropped if it is a deletion; and every other table up to the last published image."""

    offset: int
    image: Mapping[str, tuple[TableRead | None, TableRead]]
    others: Mapping[str, TableRead]


class WarehouseReader:
    """Reads of one warehouse; table handles are shared by every reader of the process (`kraftlake.lake.handles`)."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse = warehouse
        self.uri = warehouse.uri
        self._checked = False
        self._first_image: int | None = None  # the first published image, once found (history never loses it)

    # -- the published range ---------------------------------------------------------------------------

    def last_published(self) -> int:
        """The offset of the last published image (-1: none), from the `images` files' statistics."""
        files = self._images_files()
        return pc.max(files["max.offset"]).as_py() if files.num_rows else -1

    def published_range(self) -> tuple[int, int]:
        """The first and the last `images` row's offsets (TimeTravelError: none yet). The first row is not
        always the first published image (`known` says what is answered)."""
        files = self._images_files()
        if files.num_rows == 0:
            raise TimeTravelError(self.uri, "the warehouse has no published image yet")
        return pc.min(files["min.offset"]).as_py(), pc.max(files["max.offset"]).as_py()

    def images(self) -> list[ImageRow]:
        """Every published image, oldest first. Reads the whole `images` table: for tests and listings, never
        on a path that runs per image or per query."""
        self._images_files()
        return [image_row(r) for r in self.scan(IMAGES).sort_by("offset").to_pylist()]

    def known(self) -> Known:
        """What the warehouse answers, the one definition every place that states it uses (the explorer's
        header and timeline, `/api/v1/clusters/{c}`, the refusals of `image` and the rest): from its first
        published image to the last offset read, the append time of each, the last published image and the
        gaps (TimeTravelError: no image yet). Its times are `time_at`'s (a snapshot's: its last log time)."""
        first_row, last_row = self.published_range()
        first = self._first_publish(first_row)
        last = max(last_row, self._answered_after(last_row))
        return Known(first, last, last_row, self.gaps(), self.time_at(first), self.time_at(last))

    def first_image(self) -> ImageRow:
        """The first `images` row: a snapshot, or where the log's images start being written."""
        return self._image(self.published_range()[0])

    def latest_image(self) -> ImageRow:
        return self._image(self.published_range()[1])

    def answer(self, offset: int) -> int:
        """The offset of the published image that answers `offset` (`replay.visibility`); TimeTravelError
        naming what is known when none does."""
        answered = self.answers(offset, offset)[0]
        if isinstance(answered, TimeTravelError):
            raise answered
        return answered

    def answers(self, first: int, last: int) -> list[int | TimeTravelError]:
        """`answer` for every offset from `first` to `last`, from one read of the `batches` rows holding them
        (what a check at every offset needs: one read, not one per offset)."""
        first_row, last_row = self.published_range()
        holding = [Where("base_offset", "<=", last), Where("last_offset", ">=", first)]
        rows = self.scan(BATCHES, holding, ["base_offset", "last_offset", "published_offsets", "image_before"])
        batches = sorted((BatchPublishes(r["base_offset"], r["last_offset"], tuple(r["published_offsets"] or ()),
                                         r["image_before"]) for r in rows.to_pylist()), key=lambda b: b.base_offset)
        images = self.scan(IMAGES, [Where("offset", ">=", first), Where("offset", "<=", last)], ["offset"])
        snapshots = {offset: BatchPublishes(offset, offset, (offset,), None) for offset in images["offset"].to_pylist()}
        bounds = Known(first_row, max(last_row, self._last_batch_offset()), last_row, self.gaps())
        known: Known | None = None  # `known()`, read only to word a refusal
        found: list[int | TimeTravelError] = []
        at = 0
        for offset in range(first, last + 1):
            while at < len(batches) and batches[at].last_offset < offset:
                at += 1
            batch = batches[at] if at < len(batches) and batches[at].base_offset <= offset else snapshots.get(offset)
            try:
                found.append(image_offset(offset, batch, bounds))
            except OffsetNotKnown:
                known = known or self.known()
                try:
                    found.append(image_offset(offset, batch, known))
                except OffsetNotKnown as error:
                    found.append(TimeTravelError(self.uri, str(error)))
        return found

    def _first_publish(self, first_row: int) -> int:
        """The first image published (the first `images` row may come later: images held while catching up
        are published through their history, not an `images` row each), read once per reader."""
        if self._first_image is None:
            rows = self.scan(BATCHES, [Where("base_offset", "<=", first_row)], ["published_offsets"])
            offsets = [offset for published in rows["published_offsets"].to_pylist() for offset in published or ()]
            self._first_image = min([first_row, *offsets])
        return self._first_image

    def gaps(self) -> list[Gap]:
        """Every gap the warehouse recorded, oldest first (a small table: one row per gap)."""
        rows = self.scan(GAPS).sort_by("first_offset").to_pylist()
        return [Gap(r["first_offset"], r["last_offset"], r["snapshot_end_offset"], r["snapshot_epoch"],
                    r["noticed_at_ms"]) for r in rows]

    def _answered_after(self, last_image: int) -> int:
        """The last offset read that the image `last_image` (or an earlier one) answers (-1: none after it). The
        sink commits a micro-batch's `batches` rows before its `images` rows, so for a moment the batches hold
        one whose image is not published yet: the range stops before that image's offset (asked then, it was
        refused as past the last published image)."""
        if self._last_batch_offset() <= last_image:  # the files' statistics: the usual case, no rows read
            return -1
        rows = self.scan(BATCHES, [Where("last_offset", ">", last_image)],
                         ["base_offset", "last_offset", "published_offsets"]).sort_by("base_offset").to_pylist()
        last = -1
        for row in rows:
            later = [offset for offset in row["published_offsets"] or () if offset > last_image]
            if later:
                return max(last, min(later) - 1)
            last = row["last_offset"]
        return last

    def _last_batch_offset(self) -> int:
        with OPEN_TABLES.latest(self.warehouse, BATCHES) as table:
            actions = pa.table(table.get_add_actions(flatten=True))
        return pc.max(actions["max.last_offset"]).as_py() if actions.num_rows else -1

    # -- time -> offset -------------------------------------------------------------------------------

    def offset_at(self, time_ms: int) -> int:
        """The offset the warehouse shows at `time_ms`: the last one appended at or before it, capped at the
        last published image (TimeTravelError: nothing was committed by then)."""
        last = self.published_range()[1]
        offset = self._last_offset_at(time_ms)
        if offset is None:
            first = self.first_image()
            if not (first.snapshot and first.log_time_ms <= time_ms):
                raise TimeTravelError(self.uri, f"no metadata was committed at or before {time_ms} ms")
            offset = first.offset
        return min(offset, last)

    def time_at(self, offset: int) -> int:
        """`offset_times` of one offset (one read of the few `batches` rows near it)."""
        return self.offset_times([offset])[offset]

    def offset_times(self, offsets: Sequence[int]) -> dict[int, int]:
        """The time (ms) known at each offset, the one rule every place that shows one follows: the append time
        of the batch holding it, else, at a snapshot's offset (a history that starts at one, a gap's bridge:
        no batch read holds it), the snapshot's last contained log time; -1 where neither is known."""
        if not offsets:
            return {}
        where = [Where("last_offset", ">=", min(offsets)), Where("base_offset", "<=", max(offsets))]
        batches = self.scan(BATCHES, where, ["base_offset", "last_offset", "append_time_ms"]).sort_by("base_offset")
        bases, lasts = batches["base_offset"].to_numpy(), batches["last_offset"].to_numpy()
        times = batches["append_time_ms"].to_numpy()
        result = {}
        for offset in offsets:
            at = int(np.searchsorted(bases, offset, side="right")) - 1
            result[offset] = int(times[at]) if at >= 0 and lasts[at] >= offset else -1
        if unheld := sorted({offset for offset, time_ms in result.items() if time_ms < 0}):
            snapshots = self.scan(IMAGES, [Where("offset", "in", unheld)], ["offset", "log_time_ms"]).to_pylist()
            result.update({row["offset"]: row["log_time_ms"] for row in snapshots})
        return result

    # -- images ---------------------------------------------------------------------------------------

    def image_at(self, offset: int) -> WarehouseImage:
        """Each sub-image table at `offset`. The bookkeeping tables are read side by side (`images` and
        `batches` commit with every image, so opening them costs the most), then the sub-image tables."""
        asked, offset = offset, self.answer(offset)
        with ThreadPoolExecutor(max_workers=READERS) as readers:  # delta-rs and Arrow release the GIL
            base = readers.submit(self._image_checkpoint_at, offset)
            provenance = readers.submit(self._provenance, offset)
            since = base.result()
            tables = readers.map(lambda name: self._table_at(name, since, offset), TABLES)
            return WarehouseImage(provenance.result(), dict(zip(TABLES, tables, strict=True)), asked)

    def image_reads(self, offset: int | None = None, views: Collection[str] | None = None) -> ImageReads:
        """The Delta reads (each table's version chosen now) that make the image at `offset` (None: the last
        published one) and every other table up to the last published image: what `kraftlake.analytics.views` reads.
        `views` (None: all) names the ones wanted (`partitions`, `partitions_history`, `batches`, …): each read
        opens its table's Delta log, so a query naming two tables opens two."""
        last, offset, since = self._image_bounds(offset)

        def wanted(name: str) -> bool:
            return views is None or name in views

        image = {}
        for name in filter(wanted, TABLES):
            at_checkpoint = [Where("checkpoint_offset", "=", since)]
            base = self._read(image_checkpoint_table(name), at_checkpoint) if since >= 0 else None
            image[name] = (base, self._read(history_name(name), self._history_since(since, offset)))
        others = {name: self._read(name, where) for name, where in self._published(last).items() if wanted(name)}
        return ImageReads(offset, image, others)

    def view_rows(self, views: Collection[str], offset: int | None = None) -> dict[str, pa.Table]:
        """The rows of the views `image_reads` would read for `views`, read here as Arrow (latest versions:
        rows up to a published image never change): each sub-image table at `offset` (None: the last published
        image), every other table up to the last published image."""
        last, offset, since = self._image_bounds(offset)
        published = self._published(last)
        with ThreadPoolExecutor(max_workers=READERS) as readers:  # delta-rs and Arrow release the GIL
            rows = {name: readers.submit(self._table_at, name, since, offset) if name in TABLES
                    else readers.submit(self.scan, name, published[name]) for name in views}
            return {name: future.result() for name, future in rows.items()}

    def view_parts(self, views: Collection[str], offset: int | None = None,
                   ) -> tuple[dict[str, pa.Table], dict[str, Selection]]:
        """`view_rows` for an engine that scans Delta tables itself: the image tables of `views` read as Arrow,
        and for every other view only the rows to take from its table's latest version (up to the last published
        image, the same bound), so the engine reads just the columns and files a question needs. Without an image
        table wanted nor an offset asked, only the last image's offset is looked up (no image checkpoint)."""
        images = [name for name in views if name in TABLES]
        rows: dict[str, pa.Table] = {}
        if images or offset is not None:  # an offset asked is refused as `view_rows` refuses it
            last, offset, since = self._image_bounds(offset)
            with ThreadPoolExecutor(max_workers=READERS) as readers:  # delta-rs and Arrow release the GIL
                rows = dict(zip(images, readers.map(lambda name: self._table_at(name, since, offset), images),
                                strict=True))
        else:
            last = self.published_range()[1]
        published = self._published(last)
        return rows, {name: published[name] for name in views if name not in TABLES}

    def _image_bounds(self, offset: int | None) -> tuple[int, int, int]:
        """The last published image's offset, the offset of the image answering `offset` (None: the last one),
        and that image's checkpoint offset (-1: none)."""
        last = self.published_range()[1]
        offset = last if offset is None else self.answer(offset)
        return last, offset, self._image_checkpoint_at(offset)

    @staticmethod
    def _published(last: int) -> dict[str, Selection]:
        """Each table outside the image, up to the last published image (`last`)."""
        published: dict[str, Selection] = {history_name(name): [Where("from_offset", "<=", last)] for name in TABLES}
        published.update({BATCHES: [Where("base_offset", "<=", last)], IMAGES: [Where("offset", "<=", last)],
                          GAPS: [Where("last_offset", "<=", last)]})
        return published

    # -- history and changes --------------------------------------------------------------------------

    def changes(self, from_offset: int, to_offset: int) -> dict[str, pa.Table]:
        """Per table, the row versions that start in (from_offset, to_offset], in offset order (a version at a
        gap's snapshot is that snapshot's difference: `gaps_between` says which)."""
        self.answer(to_offset)
        if (gap := gap_holding(from_offset, self.gaps())) is not None:
            raise TimeTravelError(self.uri, f"offset {from_offset} is unknown: {gap.describe()}")
        return {
            name: one_chunk(self.scan(history_name(name), self._history_since(from_offset, to_offset))
                            .sort_by("from_offset").cast(history_schema(name)))
            for name in TABLES
        }

    def moves(self, from_image: int, to_image: int) -> dict[str, pa.Table]:
        """Per sub-image table, the history rows that turn it at published image `from_image` into the one at
        `to_image`: one per key whose version differs, that key's version at `to_image` (a key absent there:
        a row with only its key, `deleted` true). Read: the history between the two and, going back, the
        changed keys' earlier versions; so moving between two moments costs what changed between them, not
        the image (what the explorer does with an image it already holds)."""
        with ThreadPoolExecutor(max_workers=READERS) as readers:  # delta-rs and Arrow release the GIL
            moved = readers.map(lambda name: self._table_moves(name, from_image, to_image), TABLES)
            return dict(zip(TABLES, moved, strict=True))

    def _table_moves(self, table: str, from_image: int, to_image: int) -> pa.Table:
        low, high = sorted((from_image, to_image))
        between = self.scan(history_name(table), self._history_since(low, high))
        key = list(TABLES[table].key)
        if to_image >= from_image or between.num_rows == 0:
            return one_chunk(between.take(pa.array(last_version_rows(between, key))).cast(history_schema(table)))
        changed = between.select(key).group_by(key, use_threads=False).aggregate([])
        wanted = [Where(key[0], "in", pc.unique(changed[key[0]]).to_pylist()), Where("from_offset", "<=", to_image)]
        earlier = self.scan(history_name(table), wanted)
        numbered = earlier.select(key).append_column("row", pa.array(np.arange(earlier.num_rows)))
        earlier = earlier.take(numbered.join(changed, key, join_type="left semi")["row"])  # lists do not join
        found = earlier.take(pa.array(last_version_rows(earlier, key))) if earlier.num_rows else earlier
        absent = changed.join(found.select(key), key, join_type="left anti")
        gone = pa.table({name: absent[name] if name in key else pa.nulls(absent.num_rows, field.type)
                         for name, field in zip(history_schema(table).names, history_schema(table), strict=True)})
        for name, value in (("from_offset", to_image), ("deleted", True)):
            gone = gone.set_column(gone.schema.get_field_index(name), name, pa.array([value] * absent.num_rows))
        return one_chunk(pa.concat_tables([found.cast(history_schema(table)), gone.cast(history_schema(table))]))

    def change_lines(self, table: str, changes: pa.Table) -> pa.Array:
        """`changes` (as `changes` returns them) as JSON lines, each compared with its key's version before."""
        key = TABLES[table].key
        wanted = [Where(key[0], "in", pc.unique(changes[key[0]]).to_pylist()),
                  Where("from_offset", "<=", pc.max(changes["from_offset"]).as_py())]
        return change_lines(table, self.history_rows(table, wanted), changes, self.gaps())

    def history(self, table: str, key_text: str, from_offset: int | None = None,
                to_offset: int | None = None) -> list[Version]:
        """The versions of the row(s) `key_text` names in (from_offset, to_offset], in offset order. The
        version before the window is read too, so the first change in it shows its true `before`."""
        last = self.published_range()[1]  # read once: each read of it refreshes `images`' Delta log
        parser = KeyParser(self.uri, lambda name: self.topic_ids(name, last))
        key = parser.table(table)
        found = [v for v in versions(self._key_rows(table, parser.filters(table, key_text), last), key)
                 if (from_offset is None or v[0] > from_offset) and (to_offset is None or v[0] <= to_offset)]
        times = self.offset_times([v[0] for v in found])
        crossing = {gap.snapshot_end_offset - 1: gap for gap in self.gaps()}
        return [Version(offset, times[offset], change, k, before, after, crossing.get(offset))
                for offset, change, k, before, after in found]

    def topic_ids(self, name_or_id: str, through: int | None = None) -> list[str]:
        """Every topic id that ever had this name (a topic deleted and recreated has several), else the id
        (`through`: as `history_rows`)."""
        named = self.history_rows("topics", [Where("name", "=", name_or_id)], ["topic_id"], through)
        found = sorted(set(named["topic_id"].to_pylist()))
        if found:
            return found
        if self.history_rows("topics", [Where("topic_id", "=", name_or_id)], ["topic_id"], through).num_rows:
            return [name_or_id]
        raise UnknownKeyError(self.uri, f"no topic named {name_or_id!r} (nor with that id) in the warehouse's history")

    def history_rows(self, table: str, where: Selection = (), columns: Sequence[str] | None = None,
                     through: int | None = None) -> pa.Table:
        """`<table>_history` rows up to the last published image that `where` selects, unordered (`through`:
        that image's offset, when the caller has read it already)."""
        last = Where("from_offset", "<=", self.published_range()[1] if through is None else through)
        narrowed = where.narrowed(last) if isinstance(where, AnyOf) else [*where, last]
        return self.scan(history_name(table), narrowed, columns)

    def _key_rows(self, table: str, where: AnyOf, through: int | None = None) -> pa.Table:
        """The rows `where` selects, in two reads: the filtered columns and `from_offset` first (no list or
        value column decoded), then whole rows at just the offsets found, which the `from_offset` statistics
        of files and row groups narrow to the few that hold them."""
        columns = sorted(where.columns() | {"from_offset"})
        offsets = sorted(set(self.history_rows(table, where, columns, through)["from_offset"].to_pylist()))
        return self.history_rows(table, where.narrowed(Where("from_offset", "in", offsets)), None, through)

    # -- tables ---------------------------------------------------------------------------------------

    def scan(self, name: str, where: Selection = (), columns: Sequence[str] | None = None) -> pa.Table:
        """Table `name`'s rows (latest version) that `where` selects (all: `()`), as Arrow (`kraftlake.lake.scan`)."""
        return scan(self.warehouse, name, where, columns)

    # -- the rules' pieces ----------------------------------------------------------------------------

    def _images_files(self) -> pa.Table:
        """The add actions (flattened) of `images`' files: their offset statistics bound what the warehouse
        can answer for without a scan. The first call also refuses a warehouse of an older layout."""
        try:
            with OPEN_TABLES.latest(self.warehouse, IMAGES) as images:
                files = pa.table(images.get_add_actions(flatten=True))
            if not self._checked:
                self._check_current()
            return files
        except TableNotFoundError as error:
            raise not_a_warehouse(self.uri) from error

    def _check_current(self) -> None:
        try:
            check_current(self.warehouse)
            with OPEN_TABLES.latest(self.warehouse, GAPS):
                pass
        except TableNotFoundError:
            raise WarehouseLayoutError(self.uri, "written by an older kraftlake (no gaps table): rebuild it "
                                                 "(ingest or publish the log again into a new warehouse)") from None
        self._checked = True

    def _image(self, offset: int) -> ImageRow:
        return image_row(self.scan(IMAGES, [Where("offset", "=", offset)]).to_pylist()[0])

    def _starts_at_snapshot(self, first: int) -> bool:
        """Whether the first image is a snapshot, without its `table_versions` map (a compacted `images` file
        holds thousands of them: reading that column cost 15 ms a query)."""
        return bool(self.scan(IMAGES, [Where("offset", "=", first)], ["snapshot"])["snapshot"][0].as_py())

    def _image_checkpoint_at(self, offset: int) -> int:
        """The newest complete image checkpoint at or before `offset` (-1: none, start from the empty image)."""
        found = self.scan(IMAGE_CHECKPOINTS, [Where("offset", "<=", offset)], ["offset"])
        return pc.max(found["offset"]).as_py() if found.num_rows else -1

    def _last_offset_at(self, time_ms: int) -> int | None:
        """The last offset of the last batch appended at or before `time_ms`. Append times grow with offsets,
        so the file statistics say which file holds it; only that file (and any it overlaps) is read."""
        with OPEN_TABLES.latest(self.warehouse, BATCHES) as table:
            actions = pa.table(table.get_add_actions(flatten=True))
        early = actions.filter(pc.less_equal(actions["min.append_time_ms"], time_ms)) if actions.num_rows else actions
        if early.num_rows == 0:
            return None
        newest = pc.max(early["min.last_offset"]).as_py()
        where = [Where("append_time_ms", "<=", time_ms), Where("last_offset", ">=", newest)]
        found = self.scan(BATCHES, where, ["last_offset"])
        return pc.max(found["last_offset"]).as_py() if found.num_rows else None

    def _table_at(self, name: str, since: int, offset: int) -> pa.Table:
        schema = TABLES[name].schema
        base = (self.scan(image_checkpoint_table(name), [Where("checkpoint_offset", "=", since)], schema.names)
                if since >= 0 else schema.empty_table())
        changes = self.scan(history_name(name), self._history_since(since, offset))
        return some_chunk(apply_changes(base, changes, TABLES[name].key) if changes.num_rows else base)

    @staticmethod
    def _history_since(after: int, through: int) -> list[Where]:
        return [Where("from_offset", ">", after), Where("from_offset", "<=", through)]

    def provenance(self, offset: int) -> Provenance:
        """The provenance `image_at` gives the image published at `offset` (for an image built another way)."""
        return self._provenance(offset)

    def _provenance(self, offset: int) -> Provenance:
        """The provenance of the image published at `offset`: the epoch and append time of the batch holding
        it, aligned if it ends the batch (or the snapshot image's own)."""
        holding = [Where("base_offset", "<=", offset), Where("last_offset", ">=", offset)]
        found = self.scan(BATCHES, holding, ["last_offset", "epoch", "append_time_ms"]).to_pylist()
        if found:
            batch = found[0]
            return Provenance(offset, batch["epoch"], batch["append_time_ms"], batch["last_offset"] == offset)
        image = self.scan(IMAGES, [Where("offset", "=", offset)], ["epoch", "log_time_ms"]).to_pylist()
        if image:
            return Provenance(offset, image[0]["epoch"], image[0]["log_time_ms"], True)
        return Provenance(offset, -1, -1, False)

    def _read(self, name: str, where: Selection) -> TableRead:
        with OPEN_TABLES.latest(self.warehouse, name) as table:
            return TableRead(name, table.version(), where)
