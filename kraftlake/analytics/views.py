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

import operator
from functools import reduce
from typing import Any

from kraftlake.analytics.summaries import SUMMARIES
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.reader import TableRead, WarehouseReader
from kraftlake.lake.scan import AnyOf, Where
from kraftlake.settings.spark import spark_uri, use_store

_COMPARISONS = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_RANK = "__kraftlake_rank"


def register_views(spark: Any, reader: WarehouseReader, at_offset: int | None = None) -> list[str]:
    """Register every table and summary as a temp view; returns the view names."""
    use_store(spark, reader.warehouse.storage_options)
    reads = reader.image_reads(at_offset)
    frames = {name: _image_table(spark, reader, name, *pair) for name, pair in reads.image.items()}
    frames.update({name: read_table(spark, reader, read) for name, read in reads.others.items()})
    for name, frame in frames.items():
        frame.createOrReplaceTempView(name)
    for name, summary in SUMMARIES.items():
        spark.sql(summary.sql).createOrReplaceTempView(name)
    return [*frames, *SUMMARIES]


def read_table(spark: Any, reader: WarehouseReader, read: TableRead) -> Any:
    """A DataFrame of the rows the reader chose: Delta prunes the files by their statistics, Parquet the row
    groups."""
    uri = spark_uri(reader.warehouse.table_uri(read.name))
    frame = spark.read.format("delta").option("versionAsOf", read.version).load(uri)
    conjunctions = read.where.conjunctions if isinstance(read.where, AnyOf) else (tuple(read.where),)
    return frame.where(reduce(operator.or_, [_all_of(conjunction) for conjunction in conjunctions]))


def _all_of(conjunction: tuple[Where, ...]) -> Any:
    from pyspark.sql import functions as F

    terms = [F.col(t.column).isin(list(t.value)) if t.op == "in"
             else _COMPARISONS[t.op](F.col(t.column), F.lit(t.value)) for t in conjunction]
    return reduce(operator.and_, terms, F.lit(True))


def _image_table(spark: Any, reader: WarehouseReader, name: str, base: TableRead | None, since: TableRead) -> Any:
    """Table `name` in the image: the image checkpoint's rows (None: none) and the history versions since, of
    which each key's last one wins and is dropped if it is a deletion."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spec = TABLES[name]
    columns = spec.schema.names
    versions = read_table(spark, reader, since).select(*columns, "from_offset", "deleted")
    if base is not None:
        rows = read_table(spark, reader, base)
        rows = rows.select(*columns, F.lit(-1).cast("long").alias("from_offset"), F.lit(False).alias("deleted"))
        versions = rows.unionByName(versions)
    latest_first = Window.partitionBy(*spec.key).orderBy(F.col("from_offset").desc())
    ranked = versions.withColumn(_RANK, F.row_number().over(latest_first))
    return ranked.where((F.col(_RANK) == 1) & ~F.col("deleted")).select(*columns)
