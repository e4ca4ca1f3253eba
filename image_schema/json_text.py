"""JSON text written column by column from Arrow, the bytes `json.dumps` writes for the same values.

A million-partition image is a million JSON objects: built as Python dicts and encoded by `json`'s
pure-Python indenting encoder it took ~50 s, as Arrow string kernels over whole columns it takes about a
second. `Layout` holds `json.dumps`' indent and separators; every value is written as `json.dumps(value,
sort_keys=True, …)` would write it at its depth: integers, booleans, strings (quoted as they are when every
one is printable ASCII without a quote or backslash, else by `json.dumps` one by one), lists and structs
(objects with sorted keys) recursively; any other type is encoded by `json.dumps` value by value.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

TEXT = pa.large_string()  # texts of a million rows pass 2 GiB of 32-bit offsets well before a join does
SLICE_ROWS = 32_768  # rows written at once by one thread
WRITERS = 2  # threads writing slices (Arrow's kernels release the GIL)


@dataclass(frozen=True)
class Layout:
    """`json.dumps`' `indent`, `separators` (item, key) for a value nested `depth` levels deep."""

    indent: int | None
    item_separator: str
    key_separator: str

    def newline(self, depth: int) -> str:
        """What comes before an item at `depth` (nothing on one line)."""
        return "" if self.indent is None else "\n" + " " * (self.indent * depth)

    def dumps(self, value: Any, depth: int) -> str:
        text = json.dumps(value, sort_keys=True, indent=self.indent,
                          separators=(self.item_separator, self.key_separator))
        return text.replace("\n", self.newline(depth)) if self.indent is not None else text


def canonical_layout(indent: int | None) -> Layout:
    """The canonical image form's layout (`kraftlake.replay.canonical`'s separators)."""
    return Layout(indent, ",", ": " if indent else ":")


JSON_LINES = Layout(None, ", ", ": ")  # json.dumps' defaults: one row a line


@dataclass(frozen=True)
class Choice:
    """A text per row out of a few (`options[index]`), kept apart until the pass that joins the row's parts:
    texts beside it fold into its options, two choices side by side into one, so the pass has fewer parts
    (each costs a little on every row)."""

    index: np.ndarray
    options: tuple[str, ...]

    @staticmethod
    def constant(text: str, count: int) -> Choice:
        """`text` on each of `count` rows."""
        return Choice(np.zeros(count, dtype=np.int64), (text,))

    def then(self, other: Choice | str) -> Choice:
        if isinstance(other, str):
            return Choice(self.index, tuple(option + other for option in self.options))
        index = self.index * len(other.options) + other.index
        return Choice(index, tuple(first + second for first in self.options for second in other.options))

    def after(self, text: str) -> Choice:
        return Choice(self.index, tuple(text + option for option in self.options))

    def texts(self) -> pa.Array:
        return pa.array(self.options, TEXT).take(pa.array(self.index))

    def shared(self) -> str | None:
        """The text every row chose when they all chose the same (a column of one value, of empty lists):
        the joining pass takes it as a constant, which costs nothing per row. None: rows differ."""
        if len(self.index) == 0:
            return ""
        first = int(self.index[0])
        return self.options[first] if len(self.options) == 1 or np.all(self.index == first) else None


Part: TypeAlias = str | pa.Array | Choice
Parts: TypeAlias = list[Part]  # texts, choices and text columns that make a column of texts when joined row by row


def values_text(values: pa.Array | pa.ChunkedArray, layout: Layout, depth: int) -> pa.Array:
    """The JSON text of each value, as it stands at `depth`."""
    return concat(*value_parts(values, layout, depth))


def value_parts(values: pa.Array | pa.ChunkedArray, layout: Layout, depth: int) -> Parts:
    """The JSON text of each value as parts, left apart so that a caller joins them with its own parts in one
    pass (each pass over a million rows copies every byte written so far)."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    kind = array.type
    parts: Parts
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        parts = [_scalars_text(array)]
    elif (pa.types.is_string(kind) or pa.types.is_large_string(kind)) and _plain(array):
        parts = ['"', array.cast(TEXT), '"']
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        parts = _list_parts(array, layout, depth)
    elif pa.types.is_struct(kind):
        parts = object_parts({kind.field(i).name: array.field(i) for i in range(kind.num_fields)}, layout, depth)
    else:  # strings that need escapes, maps, floats...: json itself, one value at a time
        return [pa.array([layout.dumps(value, depth) for value in array.to_pylist()], TEXT)]
    if array.null_count:
        return [pc.if_else(pc.is_null(array), pa.scalar("null", TEXT), concat(*parts))]
    return parts


def _scalars_text(array: pa.Array) -> pa.Array | Choice:
    """Integers or booleans as text; a column of one value as a `Choice` of its one text."""
    if array.null_count == 0 and len(array):
        least, most = pc.min_max(array).values()
        if least == most:
            return Choice.constant(json.dumps(least.as_py()), len(array))
    if pa.types.is_boolean(array.type):
        return pc.if_else(array, pa.scalar("true", TEXT), pa.scalar("false", TEXT))
    return pc.cast(array, TEXT)


def _plain(strings: pa.Array) -> bool:
    """Whether every string is printable ASCII without a quote or backslash (json writes it unchanged),
    checked on the bytes of all of them at once."""
    _, offset_buffer, data = strings.buffers()
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    offsets = np.frombuffer(offset_buffer, dtype=width)[strings.offset:strings.offset + len(strings) + 1]
    if data is None or len(strings) == 0 or offsets[-1] == offsets[0]:
        return True
    text = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]]
    outside = text - np.uint8(0x20) > 0x7E - 0x20  # below 0x20 wraps around: one comparison for both ends
    return not np.any(outside | (text == 0x22) | (text == 0x5C))


def _list_parts(array: pa.Array, layout: Layout, depth: int) -> Parts:
    """`[]` when empty, else the elements one per line a level deeper (on one line without indent). Plain
    strings and integers are joined as they are, their quotes in the separator."""
    values, inner = array.values, layout.newline(depth + 1)
    empty = pc.fill_null(pc.equal(pc.list_value_length(array), 0), False).to_numpy(zero_copy_only=False)
    if empty.all():  # no element to write: no pass over the elements
        return [Choice.constant("[]", len(array))]
    quote = ""
    if pa.types.is_integer(values.type):
        elements = pc.cast(values, TEXT)
    elif (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)) and _plain(values):
        elements, quote = values.cast(TEXT), '"'
    else:
        elements = values_text(values, layout, depth + 1)
    lists = pa.LargeListArray.from_arrays(pc.cast(array.offsets, pa.int64()), elements)
    joined = pc.binary_join(lists, pa.scalar(f"{quote}{layout.item_separator}{inner}{quote}", TEXT))
    whether = empty.astype(np.int64)  # 0: has elements, 1: empty
    closing = f"{quote}{layout.newline(depth)}]"
    return [Choice(whether, (f"[{inner}{quote}", "[")), joined, Choice(whether, (closing, "]"))]


def objects_text(fields: Mapping[str, pa.Array | pa.ChunkedArray], layout: Layout, depth: int) -> pa.Array:
    """One JSON object per row from named columns (a key per column, sorted, as `sort_keys` does)."""
    return concat(*object_parts(fields, layout, depth))


def object_parts(fields: Mapping[str, pa.Array | pa.ChunkedArray], layout: Layout, depth: int) -> Parts:
    inner = layout.newline(depth + 1)
    parts: Parts = ["{"]
    for number, name in enumerate(sorted(fields)):
        separator = "" if number == 0 else layout.item_separator
        parts += [f"{separator}{inner}{json.dumps(name)}{layout.key_separator}",
                  *value_parts(fields[name], layout, depth + 1)]
    parts.append(layout.newline(depth) + "}")
    return parts


def concat(*parts: Part | pa.ChunkedArray) -> pa.Array:
    """Texts, choices and text columns joined row by row (a row with a null part is null); neighbouring
    texts and choices are merged first (each part costs a little on every row)."""
    merged: Parts = []
    for given in parts:
        part = given.combine_chunks() if isinstance(given, pa.ChunkedArray) else given
        last = merged[-1] if merged else None
        if isinstance(part, pa.Array) or last is None or isinstance(last, pa.Array):
            merged.append(part)
        elif isinstance(last, Choice):
            merged[-1] = last.then(part)
        elif isinstance(part, Choice):
            merged[-1] = part.after(last)
        else:
            merged[-1] = last + part
    constants = [_constant(part) for part in merged]
    if all(text is not None for text in constants):  # no column to give the row count: the choices keep it
        constants = [part if isinstance(part, str) else None for part in merged]
    columns = [pa.scalar(text, TEXT) if text is not None else part.texts() if isinstance(part, Choice) else part
               for part, text in zip(merged, constants, strict=True)]
    return pc.binary_join_element_wise(*columns, pa.scalar("", TEXT))


def _constant(part: Part) -> str | None:
    """The part's text when it is the same on every row (None: a column)."""
    return part if isinstance(part, str) else part.shared() if isinstance(part, Choice) else None


def row_lines(table: pa.Table) -> pa.Array:
    """Each row as `json.dumps(row, sort_keys=True)` writes it, newline included (`image --table`)."""
    text = objects_text({name: table.column(name) for name in table.column_names}, JSON_LINES, 0)
    return concat(text, "\n")


def row_line_chunks(table: pa.Table) -> Iterator[memoryview]:
    """`row_lines` of `table`, written by slices of `SLICE_ROWS` rows (`in_order`)."""
    return in_order(row_lines, [table.slice(start, SLICE_ROWS) for start in range(0, table.num_rows, SLICE_ROWS)])


def in_order(texts: Callable[[pa.Table], pa.Array], slices: Iterable[pa.Table]) -> Iterator[memoryview]:
    """The bytes of `texts` of each slice, in order, built on `WRITERS` threads while the caller writes the
    ones before: at most `WRITERS` slices ahead of it, so a slow reader of the output holds a few slices in
    memory, not the whole text (and the pool reuses their memory instead of faulting in new pages)."""
    def build(rows: pa.Table) -> memoryview:
        return buffer_of(texts(rows))

    with ThreadPoolExecutor(max_workers=WRITERS) as writers:
        pending: deque[Future[memoryview]] = deque()
        for rows in slices:
            pending.append(writers.submit(build, rows))
            if len(pending) > WRITERS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def buffer_of(texts: pa.Array) -> memoryview:
    """The bytes of all `texts` back to back, without a copy: their values buffer between the first and the
    last offset (texts built to be written in a row, each carrying its own separator)."""
    texts = texts.cast(TEXT)
    if len(texts) == 0:
        return memoryview(b"")
    offsets = pa.Array.from_buffers(pa.int64(), len(texts) + 1, [None, texts.buffers()[1]], offset=texts.offset)
    data = texts.buffers()[2]
    return memoryview(data)[offsets[0].as_py():offsets[-1].as_py()] if data is not None else memoryview(b"")
