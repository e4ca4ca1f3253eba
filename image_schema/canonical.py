"""The canonical JSON document of an image (`kraftlake.replay.canonical`'s form), written from Arrow tables.

`kraftlake image --json` reads the image as Arrow and `kraftlake replay --json` builds it in memory; both
print this document, byte for byte the same. Every section but `topics` is `kraftlake.replay.canonical`'s plain data,
encoded by `json`. `topics` holds one object per partition (a million of them in a big cluster), so it is
written here, once, as text straight from the `topics` and `partitions` tables (`kraftlake.image_schema.json_text`):
an in-memory image goes through its rows first. Building a million Python dicts and indenting them with
`json`'s pure-Python encoder took ~50 s; this takes about a second.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kraftlake.image_schema.json_text import (
    SLICE_ROWS,
    TEXT,
    Layout,
    buffer_of,
    canonical_layout,
    concat,
    in_order,
    object_parts,
    value_parts,
    values_text,
)
from kraftlake.image_schema.rebuild import image_from_rows
from kraftlake.image_schema.tables import TABLES
from kraftlake.replay.canonical import TOPICS_SECTION, canonical_sections
from kraftlake.replay.fields import camel_case
from kraftlake.replay.image import MetadataImage, Provenance
from kraftlake.replay.topics import PartitionRegistration

TOPIC_TABLES = ("topics", "partitions")
_DEPTH = 1  # a section's value sits one level into the document
_ID_TEXT = "__id_text"
_NAME_ORDER = ("topic_name", "topic_id", _ID_TEXT)  # `sort_keys`' order of the topics section's partitions
Chunks = Iterable[bytes | memoryview]


def canonical_json(image: MetadataImage, *, provenance: bool = True, indent: int | None = None) -> str:
    """The canonical text; without `provenance` two images of the same state at different offsets match."""
    return b"".join(image_chunks(image, provenance=provenance, indent=indent)).decode()


def image_chunks(image: MetadataImage, *, provenance: bool = True, indent: int | None = None) -> Chunks:
    """The canonical text of an in-memory image, in pieces to write one after the other."""
    return _document(canonical_sections(image), _tables(image), provenance, canonical_layout(indent))


def _tables(image: MetadataImage) -> dict[str, pa.Table]:
    """The image's topics tables, as a warehouse holds them."""
    return {name: TABLES[name].arrow([values for _, values in TABLES[name].image_rows(image)])
            for name in TOPIC_TABLES}


def tables_chunks(
    tables: Mapping[str, pa.Table], image_provenance: Provenance, *, provenance: bool = True, indent: int | None = None
) -> Chunks:
    """The canonical text of an image given as its tables' rows (a warehouse read), in pieces: the small
    sub-images go through `kraftlake.replay`'s image, the topics tables are written as they are."""
    small = {name: table.to_pylist() for name, table in tables.items() if name not in TOPIC_TABLES}
    sections = canonical_sections(image_from_rows(small, image_provenance))
    return _document(sections, tables, provenance, canonical_layout(indent))


def _document(
    sections: dict[str, Any], tables: Mapping[str, pa.Table], provenance: bool, layout: Layout
) -> Iterator[bytes | memoryview]:
    """`{`, each section under its key in sorted order, `}`: what `json.dumps(sort_keys=True)` writes."""
    if not provenance:
        sections = {key: value for key, value in sections.items() if key != "provenance"}
    yield b"{"
    for number, key in enumerate(sorted([*sections, TOPICS_SECTION])):
        separator = "" if number == 0 else layout.item_separator
        yield f"{separator}{layout.newline(_DEPTH)}{json.dumps(key)}{layout.key_separator}".encode()
        if key == TOPICS_SECTION:
            yield from _topics(tables["topics"], tables["partitions"], layout)
        else:
            yield layout.dumps(sections[key], _DEPTH).encode()
    yield (layout.newline(0) + "}").encode()


def _topics(topics: pa.Table, partitions: pa.Table, layout: Layout) -> Iterator[bytes | memoryview]:
    """`{name: {"partitions": {id: partition}, "topicId": id}}`, topics by name and partitions by their
    id's text (as `sort_keys` orders them). Each partition's text carries what comes before it (a separator,
    its topic's opening when it is the first) and after it (its topic's closing when it is the last), so the
    section is a few runs of text, written by slices of whole topics on `WRITERS` threads (Arrow's kernels
    release the GIL). Topics without partitions (only ever inside a batch creating them) are merged in by
    name, in one slice."""
    if topics.num_rows == 0:
        yield b"{}"
        return
    ordered = _by_name(partitions)
    present = ordered["topic_id"].take(pa.array(_run_starts(ordered["topic_id"].combine_chunks())))
    if not pc.all(pc.is_in(present, topics["topic_id"])).as_py():  # partitions of no topic are not shown
        ordered = ordered.filter(pc.is_in(ordered["topic_id"], topics["topic_id"]))
    empty = topics.filter(pc.invert(pc.is_in(topics["topic_id"], present)))
    yield b"{"
    if empty.num_rows:
        texts = _merge(_partition_texts(ordered, layout), ordered["topic_name"], _empty_topic_texts(empty, layout),
                       empty["name"])
        yield buffer_of(texts)[len(layout.item_separator):]  # every text starts with a separator
    else:
        runs = in_order(lambda rows: _partition_texts(rows, layout), _slices(ordered))
        for number, run in enumerate(runs):
            yield run[len(layout.item_separator):] if number == 0 else run
    yield (layout.newline(_DEPTH) + "}").encode()


def _by_name(partitions: pa.Table) -> pa.Table:
    """Partitions by topic name, topic id and the text of their id, with that text as `__id_text` (not
    sorted when they already are in that order, as a warehouse's checkpoint usually is: checking takes a
    fifth of the time of sorting 1M rows)."""
    keyed = partitions.append_column(_ID_TEXT, pc.cast(partitions["partition_id"], pa.string()))
    if _in_order(keyed, _NAME_ORDER):
        return keyed
    return keyed.take(pc.sort_indices(keyed, [(column, "ascending") for column in _NAME_ORDER]))


def _in_order(table: pa.Table, columns: tuple[str, ...]) -> bool:
    """Whether each row is at or after the one before it, by `columns` (a null anywhere: not known to be)."""
    count = table.num_rows
    if count < 2:
        return True
    in_order: pa.ChunkedArray | None = None
    for column in reversed(columns):  # by the last column, then each earlier one decides where it differs
        before, after = table[column].slice(0, count - 1), table[column].slice(1)
        in_order = (pc.less_equal(before, after) if in_order is None
                    else pc.or_(pc.less(before, after), pc.and_(pc.equal(before, after), in_order)))
    return in_order is None or bool(pc.all(pc.fill_null(in_order, False)).as_py())


def _slices(ordered: pa.Table) -> list[pa.Table]:
    """About `SLICE_ROWS` rows each, cut where a topic starts."""
    starts = _run_starts(ordered["topic_id"].combine_chunks())
    first_at_or_after = np.searchsorted(starts, np.arange(0, ordered.num_rows, SLICE_ROWS))
    cuts = np.unique(starts[first_at_or_after[first_at_or_after < len(starts)]])
    bounds = [*cuts.tolist(), ordered.num_rows]
    return [ordered.slice(start, end - start) for start, end in itertools.pairwise(bounds)]


def _partition_texts(ordered: pa.Table, layout: Layout) -> pa.Array:
    """Each partition under its id (depth 4) after a separator, opened and closed with its topic where it is
    its topic's first or last: one pass over the rows (each pass copies every byte written so far)."""
    if ordered.num_rows == 0:
        return pa.array([], TEXT)
    depth = _DEPTH + 3  # topics > name > partitions > id
    fields = {camel_case(name): ordered[name] for name in PartitionRegistration._fields}
    starts = _run_starts(ordered["topic_id"].combine_chunks())
    ends = np.append(starts[1:], ordered.num_rows) - 1
    names, ids = ordered["topic_name"].take(pa.array(starts)), ordered["topic_id"].take(pa.array(ends))
    opening = concat(_topic_opening(values_text(names, layout, _DEPTH + 1), layout), "{")
    closing = concat(layout.newline(depth - 1), "}", _topic_closing(values_text(ids, layout, _DEPTH + 2), layout))
    return concat(layout.item_separator, _spread(opening, starts, ordered.num_rows), layout.newline(depth),
                  *value_parts(ordered[_ID_TEXT], layout, depth), layout.key_separator,
                  *object_parts(fields, layout, depth), _spread(closing, ends, ordered.num_rows))


def _spread(texts: pa.Array, rows: np.ndarray, count: int) -> pa.Array:
    """`count` texts: `texts` at `rows`, empty elsewhere."""
    index = np.zeros(count, dtype=np.int64)
    index[rows] = np.arange(1, len(rows) + 1)
    return pa.concat_arrays([pa.array([""], TEXT), texts]).take(pa.array(index))


def _empty_topic_texts(empty: pa.Table, layout: Layout) -> pa.Array:
    name = values_text(empty["name"], layout, _DEPTH + 1)
    return concat(layout.item_separator, _topic_opening(name, layout), "{}",
                   _topic_closing(values_text(empty["topic_id"], layout, _DEPTH + 2), layout))


def _topic_opening(name: pa.Array, layout: Layout) -> pa.Array:
    """`"name": {"partitions": ` at their depths."""
    return concat(layout.newline(_DEPTH + 1), name, layout.key_separator, "{", layout.newline(_DEPTH + 2),
                   '"partitions"', layout.key_separator)


def _topic_closing(topic_id: pa.Array, layout: Layout) -> pa.Array:
    """`, "topicId": id}` after the partitions."""
    return concat(layout.item_separator, layout.newline(_DEPTH + 2), '"topicId"', layout.key_separator, topic_id,
                   layout.newline(_DEPTH + 1), "}")


def _run_starts(values: pa.Array) -> np.ndarray:
    """The index of each run of equal values' first element."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    changes = pc.not_equal(values.slice(1), values.slice(0, len(values) - 1)).to_numpy(zero_copy_only=False)
    return np.concatenate([[0], np.flatnonzero(changes) + 1])


def _merge(texts: pa.Array, names: pa.ChunkedArray, more: pa.Array, more_names: pa.ChunkedArray) -> pa.Array:
    """Partition texts and texts of topics without partitions, merged by topic name (a stable sort: each
    topic's partitions stay together and in order)."""
    both = pa.table({"name": pa.chunked_array([*names.chunks, *more_names.chunks], names.type),
                     "text": pa.chunked_array([texts, more], TEXT)})
    return both["text"].take(pc.sort_indices(both["name"])).combine_chunks()


def write_chunks(chunks: Iterable[bytes | memoryview], stream: TextIO, end: bytes = b"\n") -> None:
    """Write the pieces to a text stream's bytes (after what was printed to it), then `end` (a newline, as
    `print` ends a text)."""
    stream.flush()
    for chunk in chunks:
        stream.buffer.write(chunk)
    stream.buffer.write(end)
    stream.buffer.flush()
