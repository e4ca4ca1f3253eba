"""Every version of one row, as users name it (`kraftlake history --table partitions --key orders-3`), and
what changed between two offsets (`kraftlake changes`): pure Arrow over `<table>_history` rows, which
`kraftlake.lake.reader.WarehouseReader` reads.

Each version is compared with its key's previous one (only the changed columns are shown). A version is
valid from its `from_offset` until the key's next version.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kraftlake import inputs
from kraftlake.image_schema.json_text import JSON_LINES, TEXT, concat, objects_text, values_text
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.errors import UnknownKeyError
from kraftlake.lake.scan import AnyOf, Where
from kraftlake.replay.visibility import Gap

_ROW = "__kraftlake_row"


@dataclass(frozen=True)
class Version:
    """One version of a row: what changed at `offset`, with the batch's append time (ms, -1 if unknown)."""

    offset: int
    time_ms: int
    change: str  # insert / update / delete
    key: Mapping[str, Any]
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    gap: Gap | None = None  # the version crosses this gap: a snapshot's difference, not a record's change


    def as_json(self) -> dict[str, Any]:
        """The one JSON shape of a version: `kraftlake history --json` prints it, the explorer's API returns it."""
        line = {"offset": self.offset, "time": iso_time(self.time_ms), "change": self.change,
                "key": dict(self.key), "before": dict(self.before), "after": dict(self.after)}
        if self.gap is not None:
            line["across_gap"] = gap_note(self.gap)
        return line


def gap_note(gap: Gap) -> str:
    """What a change across `gap` is, in one phrase (history and changes say the same)."""
    return (f"offsets {gap.first}..{gap.last} were deleted by Kafka before they were read: this is the snapshot's "
            f"difference, not a sequence of records")


def iso_time(time_ms: int) -> str:
    """An append time as ISO-8601 UTC with milliseconds ("" when unknown, -1)."""
    return "" if time_ms < 0 else datetime.fromtimestamp(time_ms / 1000, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class KeyParser:
    """Turns a key as users write it into the filters of its history rows. `topic_ids` finds every topic
    id that ever had a name (or the id itself); errors name the warehouse `uri`."""

    uri: str
    topic_ids: Callable[[str], list[str]]

    def table(self, table: str) -> Sequence[str]:
        """The table's key columns (UnknownKeyError: no such table)."""
        if table not in TABLES:
            raise UnknownKeyError(self.uri, f"no table {table!r}; tables: {', '.join(TABLES)}")
        return TABLES[table].key

    def filters(self, table: str, key_text: str) -> AnyOf:
        """The rows of the key(s) `key_text` names (a topic deleted and recreated has several ids)."""
        text = key_text.strip()
        match table:
            case "brokers":
                return AnyOf.of([[Where("broker_id", "=", self._int(text, table, "broker_id", "a broker id"))]])
            case "controllers":
                return AnyOf.of([[Where("controller_id", "=", self._int(text, table, "controller_id",
                                                                       "a controller id"))]])
            case "topics":
                return AnyOf.of([[Where("topic_id", "=", topic_id)] for topic_id in self.topic_ids(text)])
            case "partitions":
                topic, _, partition = text.rpartition("-")
                if not topic:
                    raise UnknownKeyError(self.uri, f"{text!r}: a partition is written topic-partition, e.g. orders-3")
                number = self._int(partition, table, "partition_id", "a partition number")
                return AnyOf.of([[Where("topic_id", "=", t), Where("partition_id", "=", number)]
                                 for t in self.topic_ids(topic)])
            case "configs":
                kind, separator, rest = text.partition(":")
                name, _, config = rest.partition(":")
                if not separator:
                    raise UnknownKeyError(
                        self.uri, f"{text!r}: a config key is type:name[:config], e.g. topic:orders or broker:1")
                found = [Where("resource_type", "=", kind), Where("resource_name", "=", name)]
                return AnyOf.of([[*found, Where("name", "=", config)] if config else found])
            case "client_quotas":
                return AnyOf.of([[Where("entity", "=", text)]])
            case "scram_credentials":
                user, _, mechanism = text.partition(":")
                mechanisms = [Where("mechanism", "=", mechanism)] if mechanism else []
                return AnyOf.of([[Where("user", "=", user), *mechanisms]])
            case _:
                column = TABLES[table].schema.field(TABLES[table].key[0])
                value: str | int = self._int(text, table, column.name, f"a {column.name}") \
                    if pa.types.is_integer(column.type) else text
                return AnyOf.of([[Where(column.name, "=", value)]])

    def _int(self, text: str, table: str, column: str, what: str) -> int:
        """An integer key within its column's type (a broker id is an int32): `kraftlake.inputs`' rule."""
        kind = TABLES[table].schema.field(column).type
        bound = 2 ** (kind.bit_width - 1)
        try:
            return inputs.integer("key", text, -bound, bound - 1, what)
        except inputs.InputError as error:
            raise UnknownKeyError(self.uri, str(error)) from None


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
    previous = previous_versions(ordered, key)
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


def previous_versions(ordered: pa.Table, key: Sequence[str]) -> np.ndarray:
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


def versions(rows: pa.Table, key: Sequence[str]) -> list[tuple[int, str, dict, dict, dict]]:
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


def change_lines(table: str, history: pa.Table, changes: pa.Table, gaps: Sequence[Gap] = ()) -> pa.Array:
    """`changes` (history rows of `table`) as JSON lines of table / offset / change / key / before / after,
    each compared with the same key's version before it (`history`: every version of the changed keys up to
    the last change), written from the columns (`kraftlake changes`). A change at the snapshot that bridged
    one of `gaps` is that snapshot's difference, not a record's: its line says so (`across_gap`)."""
    key = TABLES[table].key
    diff = _diff(history, key)
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
    offsets = diff.rows["from_offset"].take(rows)
    across = pa.array([""] * len(offsets), TEXT)
    for gap in gaps:
        note = f'"across_gap": {json.dumps(gap_note(gap))}, '
        across = pc.if_else(pc.equal(offsets, gap.snapshot_end_offset - 1), pa.scalar(note, TEXT), across)
    return concat('{', across, '"after": ', after, ', "before": ', before, ', "change": "', kind, '", "key": ', keys,
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
