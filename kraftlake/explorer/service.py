"""What every page and API route reads: the warehouse through its `WarehouseReader`, paged on the server and
cached, so a 1M-partition image is read once and never sent whole.

- Images are cached per offset in a least-recently-used cache bounded in bytes (`cache_bytes`); one image is
  built at a time (`_BUILD`), so a few users paging through different moments hold at most the cache and one
  image in construction, whatever the server's thread count. A moment not cached is moved from the cached
  image nearest to it when only partitions changed between them (`moved_view`: the history between the two
  read, the changed rows replaced in place), so moving the cursor costs what changed, not the image; else
  (the first moment, topics created or deleted) the image is read whole (`WarehouseReader.image_at`).
- The timeline is rebuilt when a newer image is published, at most every `timeline_max_age_s` (a live writer
  publishes every second: each answer stays a whole history up to its own last image).
- Rows go out as the CLI prints them (`image --table`, `changes`, `history --json`): the same functions write
  them, so the API's shapes and the CLI's are one definition.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kraftlake.analytics.health import MIN_ISR, partition_flags
from kraftlake.explorer.errors import BadRequest, NotFound
from kraftlake.explorer.moments import offset_of
from kraftlake.explorer.timeline import Timeline, build_timeline
from kraftlake.explorer.words import api_fields, natural_key
from kraftlake.image_schema.json_text import row_lines
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.history import Version
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.scan import Where
from kraftlake.lake.time_travel import WarehouseImage, apply_changes
from kraftlake.records.config_defaults import topic_fallbacks
from kraftlake.replay.gc_pause import paused_collector
from kraftlake.replay.image import Provenance

V = TypeVar("V")
DEFAULT_CACHE_BYTES = 512 << 20  # three quarters for images, an eighth each for diffs and their lines
MOVED_SHARE = 10  # an image is moved from a cached one while under a tenth of its partitions change
ANSWERS_KEPT = 100_000  # offsets asked whose answering image is known (a few MB at most)
MAX_PAGE_SIZE = 500
# One big read at a time in the process, without Python's cyclic collector: a build makes millions of short-lived
# acyclic objects (row values, names' sort keys), and its collections were a fifth of a cold moment and of the
# cold timeline (py-spy, 1M partitions; `replay.gc_pause` says why pausing loses nothing).
_BUILD = threading.Lock()


class Cache(Generic[V]):
    """A least-recently-used cache bounded by the bytes its values hold. Before a value is built, room is made
    for one as big as the last one built, so the cache and the value under construction together stay within
    the budget (the newest value always stays, whatever its size)."""

    def __init__(self, budget_bytes: int, size_of: Callable[[V], int]) -> None:
        self.budget = budget_bytes
        self.size_of = size_of
        self._values: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._last_size = 0

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key][0]
        with _BUILD:
            with self._lock:
                if key in self._values:
                    return self._values[key][0]
                self._evict(self._last_size)
            with paused_collector():
                value = build()
            size = self.size_of(value)
            with self._lock:
                self._values[key] = (value, size)
                self._last_size = size
                self._evict(0)
        return value

    def cached(self) -> list[tuple[Hashable, V]]:
        """What the cache holds now, by key."""
        with self._lock:
            return [(key, value) for key, (value, _) in self._values.items()]

    def _evict(self, room: int) -> None:
        """Drop the least recently used values until they and `room` more bytes fit the budget."""
        while self._values and sum(size for _, size in self._values.values()) + room > self.budget:
            if room == 0 and len(self._values) == 1:
                return
            self._values.popitem(last=False)


class Tables(Mapping[str, pa.Table]):
    """An image's tables by name, one of which may be given as how to build it (with its row count and an
    estimate of its bytes): a moved image's partitions, put together when a page first needs their rows (its
    first screen needs their counts only; a million rows taken in place cost more than the rest of a move)."""

    def __init__(self, ready: Mapping[str, pa.Table], later: tuple[str, int, int, Callable[[], pa.Table]] | None = None,
                 names: Sequence[str] | None = None) -> None:
        self._ready = dict(ready)
        self._later = later
        self._names = list(names) if names is not None else [*self._ready, *([later[0]] if later else [])]
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> pa.Table:
        with self._lock:
            if self._later is not None and name == self._later[0]:
                self._ready[name] = self._later[3]()
                self._later = None
            return self._ready[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def num_rows(self, name: str) -> int:
        """A table's row count, without building it."""
        later = self._later
        return later[1] if later is not None and later[0] == name else self[name].num_rows

    def nbytes(self) -> int:
        later = self._later
        return sum(t.nbytes for t in self._ready.values()) + (later[2] if later is not None else 0)


@dataclass(frozen=True)
class ImageView:
    """One image's tables and what its screens need (per-topic counts), built once per cached image."""

    provenance: Provenance
    tables: Tables
    topics: pa.Table  # topic_id, name, partitions, under_replicated, under_min_isr, offline
    flags: pa.Table  # per partition row: under_replicated, under_min_isr, offline
    topic_ids: pa.Array  # the distinct topic ids of `partitions`
    by_topic: np.ndarray  # partition rows ordered by their topic id's position in `topic_ids`
    topic_starts: np.ndarray  # where each topic id's rows start in `by_topic` (and the end, last)
    partition_ids: np.ndarray  # per partition row (what a move finds rows by, without the rows)

    def nbytes(self) -> int:
        arrays = self.topic_ids.nbytes + self.by_topic.nbytes + self.topic_starts.nbytes + self.partition_ids.nbytes
        return self.tables.nbytes() + self.topics.nbytes + self.flags.nbytes + arrays

    def row_counts(self) -> dict[str, int]:
        """Each table's row count (a moved image's partitions are not built for it)."""
        return {name: self.tables.num_rows(name) for name in self.tables}

    def flagged(self) -> dict[str, int]:
        """How many partitions have each flag (under_replicated, under_min_isr, offline) in this image."""
        return {name: int(pc.sum(self.flags[name].cast(pa.int64())).as_py() or 0) for name in self.flags.column_names}

    def rows_of(self, keys: pa.Table) -> np.ndarray | None:
        """The row in `partitions` of each (topic_id, partition_id) of `keys` (None: one is not there)."""
        codes = pc.fill_null(pc.index_in(keys["topic_id"], self.topic_ids), -1).to_numpy(zero_copy_only=False)
        ids = self.partition_ids
        found = []
        for code, wanted in zip(codes.tolist(), keys["partition_id"].to_pylist(), strict=True):
            rows = self.by_topic[self.topic_starts[code]:self.topic_starts[code + 1]] if code >= 0 else ()
            hit = [row for row in rows if ids[row] == wanted]
            if len(hit) != 1:
                return None
            found.append(hit[0])
        return np.array(found, dtype=np.int64)

    def partition_rows(self, topic_id: str) -> np.ndarray:
        """The rows of `partitions` holding one topic's partitions (an index, not a scan of 1M rows)."""
        found = pc.index(self.topic_ids, topic_id).as_py()
        return self.by_topic[self.topic_starts[found]:self.topic_starts[found + 1]] if found >= 0 else \
            np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Page:
    """One page of rows of a longer list."""

    total: int
    page: int
    size: int
    rows: list[dict[str, Any]]


def row_objects(table: pa.Table) -> list[dict[str, Any]]:
    """Rows as `kraftlake image --table` prints them (the same writer, on the columns decoded), as JSON."""
    if table.num_rows == 0:
        return []
    return [json.loads(line) for line in row_lines(decoded(table)).to_pylist()]


def named_rows(table: str, rows: pa.Table) -> list[dict[str, Any]]:
    """Rows as the CLI prints them, plus Kafka's names and units beside the raw values (`words.api_fields`)."""
    return [{**row, **api_fields(table, row)} for row in row_objects(rows)]


def _plain_type(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(kind):
        return kind.value_type
    if pa.types.is_list(kind) and pa.types.is_dictionary(kind.value_type):
        return pa.list_(kind.value_type.value_type)
    return kind


def decoded(table: pa.Table) -> pa.Table:
    """`table` with dictionary-encoded columns (`compact`) back to their plain types."""
    schema = pa.schema([field.with_type(_plain_type(field.type)) for field in table.schema])
    return table if schema.equals(table.schema) else table.cast(schema)


def compact(partitions: pa.Table) -> pa.Table:
    """The partitions table in one chunk (a few rows are then taken without touching the rest), its topic ids,
    topic names and directories dictionary-encoded: at 1M partitions the directories' text alone was 40% of
    the table, and a few distinct values repeat on every row."""
    table = partitions.combine_chunks()
    columns = []
    for field in table.schema:
        column = table[field.name].combine_chunks() if table.num_rows else table[field.name]
        if table.num_rows and field.name in ("topic_id", "topic_name"):
            column = pc.dictionary_encode(column)
        elif table.num_rows and field.name == "directories":
            column = pa.ListArray.from_arrays(column.offsets, pc.dictionary_encode(column.values),
                                              mask=column.is_null())
        columns.append(column)
    return pa.table(columns, names=table.column_names)


def image_view(image: WarehouseImage) -> ImageView:
    """Per-partition flags and per-topic counts at this image."""
    partitions = image.tables["partitions"]
    flags = partition_flags(partitions, image.tables["configs"])
    counted = pa.table({"topic_id": partitions["topic_id"],
                        **{n: pc.cast(flags[n], pa.int64()) for n in flags.column_names}})
    per_topic = counted.group_by("topic_id").aggregate(
        [("topic_id", "count"), *((n, "sum") for n in flags.column_names)])
    topics = image.tables["topics"].join(per_topic, "topic_id", join_type="left outer")
    topics = pa.table({
        "topic_id": topics["topic_id"], "name": topics["name"],
        "partitions": pc.fill_null(topics["topic_id_count"], 0),
        **{n: pc.fill_null(topics[f"{n}_sum"], 0) for n in flags.column_names},
    })
    names = topics["name"].to_pylist()
    order = sorted(range(len(names)), key=lambda i: (natural_key(names[i] or ""), names[i] or ""))
    topics = topics.take(pa.array(order, pa.int64()))
    tables = {**image.tables, "partitions": compact(partitions)}
    encoded = tables["partitions"]["topic_id"].combine_chunks()
    if not pa.types.is_dictionary(encoded.type):  # no partitions
        encoded = pc.dictionary_encode(encoded)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    by_topic = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[by_topic], np.arange(len(encoded.dictionary) + 1))
    ids = tables["partitions"]["partition_id"].to_numpy()
    return ImageView(image.provenance, Tables(tables), topics, flags, encoded.dictionary, by_topic, starts, ids)


def moved_view(view: ImageView, moves: Mapping[str, pa.Table], provenance: Provenance) -> ImageView | None:
    """`view` at another image, from `moves` (per table, the rows whose version differs there:
    `WarehouseReader.moves`): the changed partitions' rows replaced in place, their flags and their topics'
    counts updated, every other index kept; so it costs what changed, not the image. None when the moves
    reach further than that (a topic or a partition created or deleted, a min.insync.replicas config, more
    than a `MOVED_SHARE`th of the partitions): the image is then built afresh."""
    changed, count = moves["partitions"], view.tables.num_rows("partitions")
    if moves["topics"].num_rows or changed.num_rows * MOVED_SHARE > count:
        return None
    if pc.any(pc.equal(moves["configs"]["name"], MIN_ISR)).as_py() or pc.any(changed["deleted"]).as_py():
        return None
    at = view.rows_of(changed)
    if at is None:
        return None
    others = [name for name in view.tables if name != "partitions"]
    tables = {name: apply_changes(view.tables[name], moves[name], TABLES[name].key) if moves[name].num_rows
              else view.tables[name] for name in others}
    rows = changed.select(TABLES["partitions"].schema.names)
    now = partition_flags(rows, tables["configs"])
    where = pc.index_in(rows["topic_id"], view.topics["topic_id"]).to_numpy(zero_copy_only=False)
    topics, flags = view.topics, {}
    for name in view.flags.column_names:
        before = view.flags[name].to_numpy(zero_copy_only=False)
        flags[name] = before.copy()
        flags[name][at] = now[name].to_numpy(zero_copy_only=False)
        counts = topics[name].to_numpy().copy()
        np.add.at(counts, where, flags[name][at].astype(np.int64) - before[at].astype(np.int64))
        topics = topics.set_column(topics.schema.get_field_index(name), name, pa.array(counts))

    def replaced() -> pa.Table:
        """The partitions with the changed rows replaced in place: every index into them stays."""
        before = view.tables["partitions"]
        order = np.arange(before.num_rows)
        order[at] = before.num_rows + np.arange(len(at))
        return pa.concat_tables([before, compact(rows).cast(before.schema)]).take(pa.array(order)).combine_chunks()

    later = ("partitions", count, view.tables.nbytes() - sum(view.tables[name].nbytes for name in others), replaced)
    return ImageView(provenance, Tables(tables, later, list(view.tables)), topics, pa.table(flags), view.topic_ids,
                     view.by_topic, view.topic_starts, view.partition_ids)


def _paged(table: pa.Table, page: int, size: int) -> pa.Table:
    return table.slice((page - 1) * size, size)


def check_page(page: int, size: int) -> None:
    if page < 1 or not 1 <= size <= MAX_PAGE_SIZE:
        raise BadRequest(f"page {page}, size {size}: pages count from 1, a page holds 1 to {MAX_PAGE_SIZE} rows")


def searched(table: pa.Table, columns: Iterable[str], text: str | None) -> pa.Table:
    """Rows where any of `columns` (as text) contains `text`, ignoring case."""
    if not text:
        return table
    mask = None
    for column in columns:
        found = pc.fill_null(pc.match_substring(pc.cast(table[column], pa.string()), text, ignore_case=True), False)
        mask = found if mask is None else pc.or_(mask, found)
    return table if mask is None else table.filter(mask)


def sorted_by(table: pa.Table, column: str | None, descending: bool, default: list[str]) -> pa.Table:
    """Rows in `column`'s order (then the default order); a list or struct column cannot order rows."""
    keys = [c for c in default if c != column]
    if column:
        if column not in table.column_names:
            raise BadRequest(f"sort {column!r}: columns are {', '.join(table.column_names)}")
        kind = table.schema.field(column).type
        if pa.types.is_nested(kind):
            raise BadRequest(f"sort {column!r}: a list column cannot order rows")
        keys.insert(0, column)
    if not keys:
        return table
    order = [(c, "descending" if descending and c == column else "ascending") for c in keys]
    plain = decoded(table.select(keys))  # Arrow does not sort dictionary-encoded columns
    return table.take(pc.sort_indices(plain, sort_keys=order))


class Explorer:
    """The explorer's reads of one warehouse, named `cluster` in URLs."""

    def __init__(self, reader: WarehouseReader, cluster: str, cache_bytes: int = DEFAULT_CACHE_BYTES,
                 timeline_max_age_s: float = 5.0) -> None:
        self.reader = reader
        self.cluster = cluster
        self.images: Cache[ImageView] = Cache(cache_bytes * 3 // 4, ImageView.nbytes)
        self.changes_cache: Cache[dict[str, pa.Table]] = Cache(
            cache_bytes // 8, lambda tables: sum(t.nbytes for t in tables.values()))
        self.change_lines: Cache[pa.Array] = Cache(cache_bytes // 8, lambda lines: lines.nbytes)
        self.timeline_max_age_s = timeline_max_age_s
        self._timeline: tuple[int, float, Timeline] | None = None
        self._answered: dict[int, int] = {}  # offset asked -> offset of the image answering it
        self._timeline_lock = threading.Lock()

    # -- moments ----------------------------------------------------------------------------------------

    def offset(self, text: str | None) -> int:
        """The offset a moment names; none: the last published image."""
        return self.reader.published_range()[1] if not text else offset_of(self.reader, text)

    def gaps(self) -> list[tuple[int, int]]:
        """The offsets the history lacks, (first, last) each, as the warehouse recorded them: drawn as gaps."""
        return [(gap.first, gap.last) for gap in self.reader.gaps()]

    def time_of(self, offset: int) -> int:
        """The time known at `offset` (ms; -1: unknown), the reader's rule (`WarehouseReader.time_at`)."""
        return self.reader.time_at(offset)

    # -- the image at a moment --------------------------------------------------------------------------

    def image(self, offset: int) -> ImageView:
        """The image in force at `offset`, cached under the offset of the image that answers it: every offset
        a batch or a transaction spans shares one cached image."""
        answered = self._answered.get(offset)
        if answered is None:
            answered = self.reader.answer(offset)
            if len(self._answered) >= ANSWERS_KEPT:  # history never changes an answer: forgetting costs a read
                self._answered.clear()
            self._answered[offset] = answered
        # the nearest cached image before it (a move forward reads only the history between), else after it;
        # taken before the cache makes room for the new one
        held = [(key > answered, abs(key - answered), key, view) for key, view in self.images.cached()
                if isinstance(key, int)]
        near = min(held, key=lambda found: found[:3])[2:] if held else None
        return self.images.get(answered, lambda: self._view_at(answered, near))

    def _view_at(self, offset: int, near: tuple[int, ImageView] | None) -> ImageView:
        """The image published at `offset`: moved from `near` (a cached image and its offset) when it can be
        (the history between them read, not the image), else read whole (`image_at`)."""
        if near is not None:
            moved = moved_view(near[1], self.reader.moves(near[0], offset), self.reader.provenance(offset))
            if moved is not None:
                return moved
        return image_view(self.reader.image_at(offset))

    def table_page(self, offset: int, table: str, query: str | None, sort: str | None, descending: bool,
                   page: int, size: int) -> Page:
        if table not in TABLES:
            raise NotFound(f"no table {table!r}; tables: {', '.join(TABLES)}")
        check_page(page, size)
        rows = self.image(offset).tables[table]
        rows = searched(rows, [c for c in rows.column_names if not pa.types.is_nested(rows.schema.field(c).type)],
                        query)
        rows = sorted_by(rows, sort, descending, list(TABLES[table].key))
        return Page(rows.num_rows, page, size, named_rows(table, _paged(rows, page, size)))

    def topics_page(self, offset: int, query: str | None, sort: str | None, descending: bool, page: int,
                    size: int) -> Page:
        check_page(page, size)
        topics = searched(self.image(offset).topics, ["name", "topic_id"], query)  # kept in natural name order
        if sort in (None, "", "name"):
            topics = topics.take(pa.array(np.arange(topics.num_rows - 1, -1, -1))) if descending else topics
        else:
            topics = sorted_by(topics, sort, descending, [])  # a stable sort: ties stay in name order
        return Page(topics.num_rows, page, size, _paged(topics, page, size).to_pylist())

    def topic_ids(self, offset: int, name: str) -> pa.Table:
        """The topic named `name` (or with that id) in the image (NotFound: none)."""
        topics = self.image(offset).topics
        found = topics.filter(pc.or_(pc.equal(topics["name"], name), pc.equal(topics["topic_id"], name)))
        if found.num_rows == 0:
            raise NotFound(f"no topic {name!r} at offset {offset}")
        return found

    def partitions_page(self, offset: int, topic: str, only: str | None, page: int, size: int) -> Page:
        """A topic's partitions in partition order; `only` keeps those with one flag (under_replicated, …)."""
        check_page(page, size)
        view = self.image(offset)
        topic_id = self.topic_ids(offset, topic)["topic_id"][0]
        at = pa.array(view.partition_rows(topic_id))
        rows = view.tables["partitions"].take(at)
        if only:
            if only not in view.flags.column_names:
                raise BadRequest(f"only {only!r}: one of {', '.join(view.flags.column_names)}")
            rows = rows.filter(view.flags[only].take(at))
        rows = rows.sort_by("partition_id")
        return Page(rows.num_rows, page, size, named_rows("partitions", _paged(rows, page, size)))

    def broker_partitions(self, offset: int, broker: int, role: str, page: int, size: int) -> tuple[int, int, Page]:
        """How many partitions `broker` hosts (is a replica of) and leads at `offset`, and a page of those it
        leads (`role` "leads") or hosts ("hosts"), in topic (natural name) and partition order."""
        check_page(page, size)
        partitions = self.image(offset).tables["partitions"]
        replicas = partitions["replicas"].combine_chunks()
        on = pc.equal(pc.list_flatten(replicas), broker)
        hosted = np.zeros(partitions.num_rows, dtype=bool)
        hosted[np.unique(pc.list_parent_indices(replicas).filter(on).to_numpy(zero_copy_only=False))] = True
        leads = pc.fill_null(pc.equal(partitions["leader"], broker), False).to_numpy(zero_copy_only=False)
        if role not in ("leads", "hosts"):
            raise BadRequest(f"role {role!r}: leads or hosts")
        chosen = decoded(partitions.filter(pa.array(leads if role == "leads" else hosted)))
        names = chosen["topic_name"].to_pylist()
        ids = chosen["partition_id"].to_pylist()
        order = sorted(range(chosen.num_rows), key=lambda i: (natural_key(names[i] or ""), ids[i]))
        rows = chosen.take(pa.array(order, pa.int64()))
        found = Page(rows.num_rows, page, size, named_rows("partitions", _paged(rows, page, size)))
        return int(hosted.sum()), int(leads.sum()), found

    def configs_of(self, offset: int, resource_type: str, resource_name: str) -> list[dict[str, Any]]:
        """The dynamic configs that apply to one resource at `offset` (a topic, a broker; `broker`, "": the
        cluster default), by name: those set on it, then the cluster defaults it falls back to where it sets
        none (a topic: through Kafka's synonyms, `log.retention.ms` for `retention.ms`); each row its `source`."""
        configs = self.image(offset).tables["configs"]

        def set_on(kind: str, name: str) -> pa.Table:
            return configs.filter(pc.and_(pc.equal(configs["resource_type"], kind),
                                          pc.equal(configs["resource_name"], name))).sort_by("name")

        mine = set_on(resource_type, resource_name)
        rows = named_rows("configs", mine)
        if resource_type == "topic" or (resource_type == "broker" and resource_name):
            own = set(mine["name"].to_pylist())
            fallbacks = topic_fallbacks() if resource_type == "topic" else None
            for row in named_rows("configs", set_on("broker", "")):
                overrides = row["name"] if fallbacks is None else fallbacks.get(row["name"])
                if overrides is not None and overrides not in own:
                    rows.append(row)
        return rows

    # -- changes and history ----------------------------------------------------------------------------

    def changes_page(self, start: int, end: int, table: str | None, query: str | None, page: int,
                     size: int) -> tuple[dict[str, int], Page]:
        """Per table how many rows changed in (start, end], and one page of one table's changes (the first
        table with any when none is named), each as `kraftlake changes` prints it (before → after)."""
        if end < start:
            raise BadRequest(f"the end (offset {end}) is before the start (offset {start})")
        if table is not None and table not in TABLES:
            raise NotFound(f"no table {table!r}; tables: {', '.join(TABLES)}")
        check_page(page, size)
        changed = self.changes_cache.get((start, end), lambda: self.reader.changes(start, end))
        filtered = {name: searched(rows, _key_columns(name), query) for name, rows in changed.items()}
        counts = {name: rows.num_rows for name, rows in filtered.items()}
        shown = table or next((name for name, count in counts.items() if count), None)
        if shown is None or counts[shown] == 0:
            return counts, Page(0, page, size, [])
        # each key's version before the window is found by one read of the table's history for all the
        # changed keys (the reader's `change_lines`): done once per diff and filter, then paged
        lines = self.change_lines.get((start, end, shown, query),
                                      lambda: self.reader.change_lines(shown, filtered[shown]))
        chosen = lines.slice((page - 1) * size, size).to_pylist()
        return counts, Page(counts[shown], page, size, [json.loads(line) for line in chosen])

    def history_page(self, table: str, key: str, start: int | None, end: int | None, page: int,
                     size: int) -> Page:
        """Every version of the row(s) `key` names, the `history` rule, as `kraftlake history --json` prints."""
        check_page(page, size)
        versions: list[Version] = self.reader.history(table, key, start, end)
        chosen = versions[(page - 1) * size: page * size]
        return Page(len(versions), page, size, [v.as_json() for v in chosen])

    def principal_history(self, principal: str) -> dict[str, list[dict[str, Any]]]:
        """Every version of what names a principal (`User:alice`, or `alice`): its ACLs, its SCRAM credentials
        and its user quotas, per table, each version as `kraftlake history --json` prints it."""
        kind, _, name = principal.rpartition(":")
        full = principal if kind else f"User:{principal}"
        acl_ids = sorted(set(self.reader.history_rows("acls", [Where("principal", "=", full)], ["acl_id"])
                             ["acl_id"].to_pylist()))
        found = {"acls": sorted((v.as_json() for acl in acl_ids for v in self.reader.history("acls", acl)),
                                key=lambda version: version["offset"])}
        if kind in ("", "User"):
            found["scram_credentials"] = [v.as_json() for v in self.reader.history("scram_credentials", name)]
            found["client_quotas"] = [v.as_json() for v in self.reader.history("client_quotas", f"user={name}")]
        return found

    # -- the timeline -----------------------------------------------------------------------------------

    def timeline(self) -> Timeline:
        last = self.reader.published_range()[1]
        with self._timeline_lock:
            kept = self._timeline
            fresh = kept is not None and (kept[0] == last or time.monotonic() - kept[1] < self.timeline_max_age_s)
            if kept is not None and fresh:
                return kept[2]
            with _BUILD, paused_collector():
                built = build_timeline(self.reader)
            self._timeline = (last, time.monotonic(), built)
            return built


def _key_columns(table: str) -> list[str]:
    """What a changes filter searches: the key columns (and a partition's topic name)."""
    return [*TABLES[table].key, *(["topic_name"] if table == "partitions" else [])]
