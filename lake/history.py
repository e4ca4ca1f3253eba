"""Every version of one row, as users name it: `kraftlake history --table partitions --key orders-3`.

Pure delta-rs + Arrow: the key's versions are read from `<table>_history` with a filter pushed into the
scan, compared one to the next (only the changed columns are shown) and stamped with the append time of
the batch holding each offset. A version is valid from its `from_offset` until the key's next version.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from image_schema.json_text import JSON_LINES, TEXT, concat, objects_text, values_text
from image_schema.tables import TABLES
from lake.time_travel import TimeTravelError, last_published_offset
from lake.warehouse import BATCHES, Warehouse, history_name, history_schema

Filter = list[tuple[str, str, Any]]
_ROW = "__kraftlake_row"


class UnknownKeyError(ValueError):
    """A key text that does not name a row of the table (wrong shape, unknown topic)."""


@dataclass(frozen=True)
class Version:
    """One version of a row: what changed at `offset`, with the batch's append time (ms, -1 if unknown)."""

    offset: int
    time_ms: int
    change: str  # insert / update / delete
    key: Mapping[str, Any]
    before: Mapping[str, Any]
    after: Mapping[str, Any]


def key_history(
    warehouse: Warehouse, table: str, key_text: str, from_offset: int | None = None, to_offset: int | None = None
) -> list[Version]:
    """The versions of the row(s) `key_text` names in (from_offset, to_offset], in offset order.

    The version before the window is read too, so the first change in it shows its true `before`."""
    if table not in TABLES:
        raise UnknownKeyError(f"no table {table!r}; tables: {', '.join(TABLES)}")
    rows = key_rows(warehouse, table, key_filters(warehouse, table, key_text))
    versions = _versions(rows, TABLES[table].key)
    versions = [v for v in versions if (from_offset is None or v[0] > from_offset)
                and (to_offset is None or v[0] <= to_offset)]
    times = offset_times(warehouse, [v[0] for v in versions])
    return [Version(offset, times[offset], change, key, before, after)
            for offset, change, key, before, after in versions]


def key_filters(warehouse: Warehouse, table: str, key_text: str) -> list[Filter]:
    """The scan filters (a disjunction of conjunctions) for a key as users write it."""
    text = key_text.strip()
    match table:
        case "brokers":
            return [[("broker_id", "=", _int(text, "a broker id"))]]
        case "controllers":
            return [[("controller_id", "=", _int(text, "a controller id"))]]
        case "topics":
            return [[("topic_id", "=", topic_id)] for topic_id in topic_ids(warehouse, text)]
        case "partitions":
            topic, _, partition = text.rpartition("-")
            if not topic:
                raise UnknownKeyError(f"{text!r}: a partition is written topic-partition, e.g. orders-3")
            number = _int(partition, "a partition number")
            return [[("topic_id", "=", t), ("partition_id", "=", number)] for t in topic_ids(warehouse, topic)]
        case "configs":
            kind, separator, rest = text.partition(":")
            name, _, config = rest.partition(":")
            if not separator:
                raise UnknownKeyError(f"{text!r}: a config key is type:name[:config], e.g. topic:orders or broker:1")
            found: Filter = [("resource_type", "=", kind), ("resource_name", "=", name)]
            return [[*found, ("name", "=", config)] if config else found]
        case "client_quotas":
            return [[("entity", "=", text)]]
        case "scram_credentials":
            user, _, mechanism = text.partition(":")
            return [[("user", "=", user), *([("mechanism", "=", mechanism)] if mechanism else [])]]
        case _:
            return [[(TABLES[table].key[0], "=", text)]]


def topic_ids(warehouse: Warehouse, name_or_id: str) -> list[str]:
    """Every topic id that ever had this name (a topic deleted and recreated has several), else the id itself."""
    rows = history_rows(warehouse, "topics", [[("name", "=", name_or_id)]])
    found = sorted(set(rows.column("topic_id").to_pylist()))
    if found:
        return found
    by_id = history_rows(warehouse, "topics", [[("topic_id", "=", name_or_id)]])
    if by_id.num_rows:
        return [name_or_id]
    raise UnknownKeyError(f"no topic named {name_or_id!r} (nor with that id) in the warehouse's history")


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UnknownKeyError(f"{text!r}: expected {what}") from None


def published_offset(warehouse: Warehouse) -> int:
    """The offset of the last published image: history past it may belong to an image being written."""
    offset = last_published_offset(warehouse)
    if offset < 0:
        raise TimeTravelError("the warehouse has no published image yet")
    return offset


def history_rows(
    warehouse: Warehouse, table: str, filters: list[Filter] | None = None, columns: list[str] | None = None
) -> pa.Table:
    """`<table>_history` rows up to the last published image (any of `filters`' conjunctions), unordered;
    all columns, or `columns`."""
    return _HistoryReader(warehouse, table).read(filters, columns)


def key_rows(warehouse: Warehouse, table: str, filters: list[Filter]) -> pa.Table:
    """The history rows `filters` select, in two reads: the filtered columns and `from_offset` of every row
    first (cheap: no list or value column is decoded), then whole rows at just the offsets found, which the
    `from_offset` statistics of files and row groups narrow to the few that hold them."""
    history = _HistoryReader(warehouse, table)
    columns = sorted({column for conjunction in filters for column, _, _ in conjunction} | {"from_offset"})
    offsets = sorted(set(history.read(filters, columns).column("from_offset").to_pylist()))
    if not offsets:
        return history.read([])
    return history.read([[*conjunction, ("from_offset", "in", offsets)] for conjunction in filters])


class _HistoryReader:
    """Reads of one `<table>_history` up to the last published image, from one open table."""

    def __init__(self, warehouse: Warehouse, table: str) -> None:
        self.schema = history_schema(table)
        self.through = ("from_offset", "<=", published_offset(warehouse))
        self.history = warehouse.table(history_name(table))

    def read(self, filters: list[Filter] | None = None, columns: list[str] | None = None) -> pa.Table:
        """Rows matching any of `filters`' conjunctions (None: all rows; []: none)."""
        if filters == []:
            return self.schema.empty_table().select(columns or self.schema.names)
        pushed = [[*conjunction, self.through] for conjunction in filters] if filters else [[self.through]]
        return self.history.to_pyarrow_table(columns=columns, filters=pushed)


CHANGES = ("insert", "update", "delete")


@dataclass(frozen=True)
class _Diff:
    """History rows in offset order, each compared with its key's previous version: a row is a change
    (`kept`: not the deletion of a key that had no row), `change` indexes CHANGES, and `listed` says per
    value column whether the change shows it: every column of an insert, the non-null ones of a delete,
    those whose value differs of an update. Computed over whole columns (100k changed rows: a Python loop
    over dicts took ~1.5 s of the 3.8 s of `kraftlake changes`)."""

    rows: pa.Table
    previous: np.ndarray  # the row of the key's previous version, -1: none
    kept: np.ndarray
    change: np.ndarray
    listed: dict[str, np.ndarray]
    texts: dict[str, pa.Array]  # each value column's JSON text, as `json.dumps` writes it


def _diff(rows: pa.Table, key: Sequence[str]) -> _Diff:
    ordered = rows.sort_by("from_offset")  # stable: the order of the versions at one offset is kept
    count = ordered.num_rows
    previous = _previous_versions(ordered, key)
    deleted = ordered["deleted"].to_numpy(zero_copy_only=False).astype(bool)
    had = np.zeros(count, dtype=bool)
    had[previous >= 0] = ~deleted[previous[previous >= 0]]
    change = np.where(~had, 0, np.where(deleted, 2, 1))
    at_previous = pa.array(np.maximum(previous, 0))
    values = [c for c in ordered.column_names if c not in key and c not in ("from_offset", "deleted")]
    texts = {column: values_text(ordered[column], JSON_LINES, 0) for column in values}
    listed = {}
    for column in values:
        differs = pc.not_equal(texts[column], texts[column].take(at_previous)).to_numpy(zero_copy_only=False)
        was_set = pc.is_valid(ordered[column]).to_numpy(zero_copy_only=False)[np.maximum(previous, 0)]
        listed[column] = np.where(change == 0, True, np.where(change == 2, was_set, differs))
    return _Diff(ordered, previous, had | ~deleted, change, listed, texts)


def _previous_versions(ordered: pa.Table, key: Sequence[str]) -> np.ndarray:
    """For each row, the row of the same key's version just before it (-1: the key's first)."""
    count = ordered.num_rows
    previous = np.full(count, -1, dtype=np.int64)
    if count < 2:
        return previous
    numbered = ordered.select(list(key)).append_column(_ROW, pa.array(np.arange(count)))
    by_key = pc.sort_indices(numbered, [(column, "ascending") for column in (*key, _ROW)]).to_numpy()
    same = np.ones(count - 1, dtype=bool)
    for column in key:
        values = ordered[column].take(pa.array(by_key))
        later, earlier = values.slice(1), values.slice(0, count - 1)
        equal = pc.fill_null(pc.equal(later, earlier), False)
        both_null = pc.and_(pc.is_null(later), pc.is_null(earlier))
        same &= pc.or_(equal, both_null).to_numpy(zero_copy_only=False)
    previous[by_key[1:][same]] = by_key[:-1][same]
    return previous


def _versions(rows: pa.Table, key: Sequence[str]) -> list[tuple[int, str, dict, dict, dict]]:
    """(offset, change, key, before, after) per row version, compared with the same key's previous one."""
    diff = _diff(rows, key)
    values = diff.rows.drop_columns(["from_offset", "deleted"]).to_pylist()
    offsets = diff.rows["from_offset"].to_pylist()
    result = []
    for row in np.flatnonzero(diff.kept):
        change, previous = diff.change[row], diff.previous[row]
        shown = [column for column, listed in diff.listed.items() if listed[row]]
        before = {c: values[previous][c] for c in shown} if change != 0 else {}
        after = {c: values[row][c] for c in shown} if change != 2 else {}
        result.append((offsets[row], CHANGES[change], {c: values[row][c] for c in key}, before, after))
    return result


def offset_times(warehouse: Warehouse, offsets: Sequence[int]) -> dict[int, int]:
    """The append time (ms) of the batch holding each offset; -1 where no batch row covers it."""
    if not offsets:
        return {}
    batches = warehouse.table(BATCHES).to_pyarrow_table(
        columns=["base_offset", "last_offset", "append_time_ms"],
        filters=[("last_offset", ">=", min(offsets)), ("base_offset", "<=", max(offsets))],
    ).sort_by("base_offset")
    bases = batches.column("base_offset").to_numpy()
    lasts = batches.column("last_offset").to_numpy()
    times = batches.column("append_time_ms").to_numpy()
    result = {}
    for offset in offsets:
        at = int(np.searchsorted(bases, offset, side="right")) - 1
        result[offset] = int(times[at]) if at >= 0 and lasts[at] >= offset else -1
    return result


def offset_at_time(warehouse: Warehouse, time_ms: int) -> int:
    """The last offset appended at or before `time_ms` (-1 when nothing was)."""
    found = warehouse.table(BATCHES).to_pyarrow_table(
        columns=["last_offset"], filters=[("append_time_ms", "<=", time_ms)]
    )
    return int(pc.max(found.column("last_offset")).as_py()) if found.num_rows else -1


def change_lines(warehouse: Warehouse, table: str, changes: pa.Table) -> pa.Array:
    """`changes` (history rows of `table`, as `changes_between` returns them) as JSON lines of table /
    offset / change / key / before / after, each compared with the same key's version before it (read from
    the history too), written from the columns (`kraftlake changes`)."""
    key = TABLES[table].key
    wanted = pc.unique(changes[key[0]]).to_pylist()
    last = pc.max(changes["from_offset"]).as_py()
    diff = _diff(history_rows(warehouse, table, [[(key[0], "in", wanted), ("from_offset", "<=", last)]]), key)
    shown = diff.kept & pc.is_in(diff.rows["from_offset"], changes["from_offset"]).to_numpy(zero_copy_only=False)
    rows = pa.array(np.flatnonzero(shown))
    change = diff.change[shown]
    previous = pa.array(np.maximum(diff.previous[shown], 0))
    before = _members({c: diff.texts[c].take(previous) for c in diff.texts},
                      {c: listed[shown] & (change != 0) for c, listed in diff.listed.items()})
    after = _members({c: diff.texts[c].take(rows) for c in diff.texts},
                     {c: listed[shown] & (change != 2) for c, listed in diff.listed.items()})
    keys = objects_text({c: diff.rows[c].take(rows) for c in key}, JSON_LINES, 0)
    kind = pa.array(np.array(CHANGES, dtype=object)[change], TEXT)
    return concat('{"after": ', after, ', "before": ', before, ', "change": "', kind, '", "key": ', keys,
                  ', "offset": ', pc.cast(diff.rows["from_offset"].take(rows), TEXT), ", \"table\": ",
                  json.dumps(table), "}\n")


def _members(texts: dict[str, pa.Array], shown: dict[str, np.ndarray]) -> pa.Array:
    """A JSON object per row holding the columns `shown` for that row (keys sorted, json.dumps' spacing)."""
    parts: list[Any] = []
    for column in sorted(texts):
        member = concat(f", {json.dumps(column)}: ", texts[column])
        parts.append(pc.if_else(pa.array(shown[column]), member, pa.scalar("", TEXT)))
    body = concat(*parts) if parts else pa.array([""] * len(next(iter(shown.values()), [])), TEXT)
    return concat("{", pc.utf8_slice_codeunits(body, 2), "}")  # every member starts with ", "
