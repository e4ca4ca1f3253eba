"""Every warehouse table as a Spark temp view: registering reads the Delta logs, a query reads the rows it needs.

    register_views(spark, WarehouseReader(Warehouse(uri)))   # notebook users: one call, then spark.sql("SELECT …")

What to read comes from the reader (`WarehouseReader.image_reads`): each table, the Delta version it chose and
the filters (`kraftlake.lake.scan.Where`, `AnyOf`); Spark reads them with Delta's own reader (`format("delta")`,
`versionAsOf`), on a local disk or an object store alike (an `s3://` warehouse through S3A, its delta-rs
storage options mapped to `fs.s3a.*` by `kraftlake.settings.spark`), so a query reads only the files, columns and row
groups it needs. The session must have Delta's jars and extension (`kraftlake.settings.spark.session_builder`, or
`--packages`: see the README).

Sub-image tables are one whole image (the last published one, or the one at `at_offset`): the reader's image
checkpoint rows and history versions since, of which each key's last one wins. The `_history` tables,
`batches` and `images` stop at the last image's offset, so every view agrees with one another and none shows
part of an image still being written.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from kraftlake.analytics.summaries import SUMMARIES
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.reader import TableRead, WarehouseReader
from kraftlake.lake.scan import AnyOf, Selection, Where
from kraftlake.lake.warehouse import BATCHES, GAPS, IMAGES, history_name
from kraftlake.settings.spark import spark_uri, use_store

_RANK = "__kraftlake_rank"


def register_views(spark: Any, reader: WarehouseReader, at_offset: int | None = None,
                   only: Collection[str] | None = None) -> list[str]:
    """Register every table and summary as a temp view, or those of `only` (`views_used`); returns the view
    names."""
    use_store(spark, reader.warehouse.storage_options)
    reads = reader.image_reads(at_offset, only)
    frames = {name: _image_table(spark, reader, name, *pair) for name, pair in reads.image.items()}
    frames.update({name: read_table(spark, reader, read) for name, read in reads.others.items()})
    for name, frame in frames.items():
        frame.createOrReplaceTempView(name)
    summaries = [name for name in SUMMARIES if only is None or name in only]
    for name in summaries:
        spark.sql(SUMMARIES[name].sql).createOrReplaceTempView(name)
    return [*frames, *summaries]


def table_views() -> list[str]:
    """The views read straight from the warehouse's tables: each sub-image table, its history, `batches`, …"""
    return [*TABLES, *map(history_name, TABLES), BATCHES, IMAGES, GAPS]


def views_used(text: str, prefix: str = "") -> frozenset[str]:
    """The views a query names (as `prefix` + name, a whole word outside quotes, in any case), with those the
    named summaries read in turn: what to register for it, instead of every table (each costs a Delta log
    read). A word that only looks like a view's name (a column's) costs a read too, never a wrong answer."""
    used: set[str] = set()
    pending = _named(re.findall(r"\w+", re.sub(r"'[^']*'", "", text)), prefix)
    while pending:
        name = pending.pop()
        if name not in used:
            used.add(name)
            if name in SUMMARIES:  # their SQL reads views only after FROM and JOIN
                pending.extend(_named(re.findall(r"(?:FROM|JOIN)\s+(\w+)", SUMMARIES[name].sql)))
    return frozenset(used)


def read_table(spark: Any, reader: WarehouseReader, read: TableRead) -> Any:
    """A DataFrame of the rows the reader chose: Delta prunes the files by their statistics, Parquet the row
    groups."""
    uri = spark_uri(reader.warehouse.table_uri(read.name))
    return spark.read.format("delta").option("versionAsOf", read.version).load(uri).where(selection_sql(read.where))


def selection_sql(where: Selection) -> str:
    """`where` as a Spark SQL condition (literals, so Delta prunes files by it), for DataFrames and the
    catalog's persistent views alike."""
    conjunctions = where.conjunctions if isinstance(where, AnyOf) else (tuple(where),)
    return " OR ".join(f"({_all_of(conjunction)})" for conjunction in conjunctions) or "false"


def _named(words: list[str], prefix: str = "") -> list[str]:
    known = {*table_views(), *SUMMARIES}
    names = [word.lower().removeprefix(prefix) for word in words if word.lower().startswith(prefix)]
    return [name for name in names if name in known]


def _all_of(conjunction: tuple[Where, ...]) -> str:
    terms = [(f"`{t.column}` IN ({', '.join(map(sql_literal, t.value))})" if t.value else "false") if t.op == "in"
             else f"`{t.column}` {t.op} {sql_literal(t.value)}" for t in conjunction]
    return " AND ".join(terms) or "true"


def sql_literal(value: Any) -> str:
    """A number or string as a Spark SQL literal (strings escaped)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"no SQL literal for {value!r} in a filter")
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(value)


def image_table_sql(name: str, base: str | None, since: str) -> str:
    """Table `name` in the image, as SQL over two relations: `base`, the image checkpoint's rows (None: none),
    and `since`, the history versions after it, of which each key's last one wins and is dropped if it is a
    deletion."""
    spec = TABLES[name]
    columns = ", ".join(f"`{column}`" for column in spec.schema.names)
    versions = f"SELECT {columns}, from_offset, deleted FROM {since}"
    if base is not None:
        versions = (f"SELECT {columns}, CAST(-1 AS BIGINT) AS from_offset, false AS deleted FROM {base} "
                    f"UNION ALL {versions}")
    key = ", ".join(f"`{column}`" for column in spec.key)
    return (f"SELECT {columns} FROM (SELECT *, row_number() OVER (PARTITION BY {key} ORDER BY from_offset DESC) "
            f"AS {_RANK} FROM ({versions})) WHERE {_RANK} = 1 AND NOT deleted")


def _image_table(spark: Any, reader: WarehouseReader, name: str, base: TableRead | None, since: TableRead) -> Any:
    """Table `name` in the image (`image_table_sql`) over the reads' DataFrames."""
    frames = {"since": read_table(spark, reader, since)}
    if base is not None:
        frames["base"] = read_table(spark, reader, base)
    return spark.sql(image_table_sql(name, "{base}" if base is not None else None, "{since}"), **frames)
