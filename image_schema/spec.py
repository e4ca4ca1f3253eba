"""What every sub-image's table code provides (`SubImageTables`), and the table description (`TableSpec`).

Each sub-image has one module here (features, cluster, topics, configs, client_quotas, producer_ids, acls,
scram, delegation_tokens, voters) holding all of its table code: Arrow schemas, rows from an image, one row from a
delta, the rows each record type touches, and the rebuild of the sub-image from rows. Adding a field to a
sub-image touches its `kraftlake.replay` module and its module here; `tables`, `changes` and `rebuild` only assemble.

A row on its way to Delta is a tuple of its column values in schema order (`Values`), not a dict: a
bootstrap builds and compares a million of them, and Arrow columns are their transpose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import MetadataImage

Key = tuple[Any, ...]
Row = dict[str, Any]
Values = tuple[Any, ...]  # a row's column values, in the order of its table's schema
TouchedRows = Callable[[Any, MetadataDelta], Iterable[tuple[str, Key]]]
TableRows = Mapping[str, Iterable[Row]]  # table name -> its rows as dicts, as a warehouse reader has them


@dataclass(frozen=True)
class TableSpec:
    """A table of one sub-image: `key` columns identify a row; `image_rows` lists them all; `row` reads one."""

    name: str
    sub_image: str  # the MetadataImage field its rows come from: a delta that leaves it alone changes none
    key: tuple[str, ...]
    schema: pa.Schema
    image_rows: Callable[[MetadataImage], Iterator[tuple[Key, Values]]]
    row: Callable[[MetadataDelta, Key], Values | None]
    # Whether a row hides what its record set (a secret's "[redacted]"): a record touching such a row is a new
    # version even when the row reads the same, so that a secret changed, and when, stays in the history.
    hides_change: Callable[[Values], bool] | None = None

    @cached_property
    def _key_positions(self) -> tuple[int, ...]:
        return tuple(self.schema.names.index(column) for column in self.key)

    def key_only(self, key: Key) -> Values:
        """A row holding only `key` (other columns null): what a deletion writes."""
        values: list[Any] = [None] * len(self.schema)
        for position, part in zip(self._key_positions, key, strict=True):
            values[position] = part
        return tuple(values)

    def arrow(self, rows: Sequence[Values]) -> pa.Table:
        """Rows as an Arrow table of this schema: one conversion of the tuples as structs, in C++ (a bootstrap's
        million rows: 2-3x faster than transposing them into columns in Python first)."""
        structs = pa.array(rows, type=self._row_type)
        return pa.Table.from_batches([pa.RecordBatch.from_struct_array(structs)], schema=self.schema)

    @cached_property
    def _row_type(self) -> pa.StructType:
        return pa.struct(list(self.schema))


@dataclass(frozen=True)
class SubImageTables:
    """All the table code of one sub-image (`sub_image` names its MetadataImage field)."""

    sub_image: str
    tables: tuple[TableSpec, ...]
    touched_rows: Mapping[type, TouchedRows]  # record type -> the rows it can change
    rebuild: Callable[[TableRows], Any]  # the sub-image back from its tables' rows


def dict_table(
    name: str,
    sub_image: str,
    key: tuple[str, ...],
    schema: pa.Schema,
    dict_rows: Callable[[MetadataImage], Iterator[tuple[Key, Row]]],
    dict_row: Callable[[MetadataDelta, Key], Row | None],
    hides_change: Callable[[Row], bool] | None = None,
) -> TableSpec:
    """A small table whose rows are built as dicts (readable), handed out as `Values`."""

    def image_rows(image: MetadataImage) -> Iterator[tuple[Key, Values]]:
        for row_key, row in dict_rows(image):
            yield row_key, tuple(row[column] for column in schema.names)

    def row(delta: MetadataDelta, row_key: Key) -> Values | None:
        found = dict_row(delta, row_key)
        return None if found is None else tuple(found[column] for column in schema.names)

    def hidden(values: Values) -> bool:
        return hides_change is not None and hides_change(dict(zip(schema.names, values, strict=True)))

    return TableSpec(name, sub_image, key, schema, image_rows, row, None if hides_change is None else hidden)


def single(table: str, key: Callable[[Any], Key]) -> TouchedRows:
    """The record touches one row of `table`, whose key it carries."""

    def touched(record: Any, delta: MetadataDelta) -> tuple[tuple[str, Key]]:
        return ((table, key(record)),)  # a tuple, not a generator: one per record of a bootstrap

    return touched


ENDPOINT = pa.struct(
    [("name", pa.string()), ("host", pa.string()), ("port", pa.int32()), ("security_protocol", pa.int16())]
)
FEATURE_RANGE = pa.struct(
    [("name", pa.string()), ("min_supported_version", pa.int16()), ("max_supported_version", pa.int16())]
)
INTS = pa.list_(pa.int32())
STRINGS = pa.list_(pa.string())



def grouped(rows: Iterable[Row], group: Callable[[Row], Any], name_column: str, value_column: str) -> Any:
    """{group(row): {row[name_column]: row[value_column]}} as read-only mappings (configs, quotas)."""
    groups: dict[Any, dict[str, Any]] = {}
    for r in rows:
        groups.setdefault(group(r), {})[r[name_column]] = r[value_column]
    return MappingProxyType({key: MappingProxyType(values) for key, values in groups.items()})
