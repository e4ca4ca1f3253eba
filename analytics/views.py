"""Every warehouse table as a Spark temp view, defined lazily: nothing is read until a query needs it.

    register_views(spark, warehouse)            # notebook users: one call, then spark.sql("SELECT …")

On a local warehouse Spark reads the Parquet files of each table's latest Delta version itself (delta-rs
lists them), so a query reads only the columns and row groups it needs; elsewhere (Spark here has no
object-store connector) delta-rs reads the rows, with the same filters pushed down, and hands them over
as Arrow. Sub-image tables are one whole image (the last published one, or the one at `at_offset`), built
by the same rule as `lake.time_travel.image_at_offset`: the newest image checkpoint at or before it, with
each key's last history version since applied. The `_history` tables and `batches` stop at the last
image's offset, so every view agrees with one another and none shows part of an image still being written.
"""

from __future__ import annotations

import operator
from typing import Any

import pyarrow as pa

from analytics.summaries import SUMMARIES
from image_schema.tables import TABLES
from lake.history import Filter, published_offset
from lake.time_travel import checkpoint_for, image_offset_at_time
from lake.warehouse import BATCHES, IMAGES, Warehouse, all_tables, checkpoint_name, history_name

_COMPARISONS = {"=": operator.eq, "<=": operator.le, ">": operator.gt}
_RANK = "__kraftlake_rank"


def register_views(
    spark: Any, warehouse: Warehouse, at_offset: int | None = None, at_time_ms: int | None = None
) -> list[str]:
    """Register every table and summary as a temp view; returns the view names."""
    last = published_offset(warehouse)
    if at_time_ms is not None:
        offset = image_offset_at_time(warehouse, at_time_ms)
    else:
        offset = last if at_offset is None else at_offset
    checkpoint = checkpoint_for(warehouse, offset)
    frames = {name: _image_table(spark, warehouse, name, checkpoint, offset) for name in TABLES}
    for name in TABLES:
        frames[history_name(name)] = read_table(spark, warehouse, history_name(name), [("from_offset", "<=", last)])
    frames[BATCHES] = read_table(spark, warehouse, BATCHES, [("base_offset", "<=", last)])
    frames[IMAGES] = read_table(spark, warehouse, IMAGES)
    for name, frame in frames.items():
        frame.createOrReplaceTempView(name)
    for name, summary in SUMMARIES.items():
        spark.sql(summary.sql).createOrReplaceTempView(name)
    return [*frames, *SUMMARIES]


def read_table(spark: Any, warehouse: Warehouse, name: str, where: Filter | None = None) -> Any:
    """A DataFrame of the rows of `name`'s latest Delta version that match every (column, op, value) of
    `where` (op: =, <=, >)."""
    where = where or []
    schema = all_tables()[name]
    table = warehouse.table(name)
    if not warehouse.is_local:
        return _from_arrow(spark, table.to_pyarrow_table(filters=where or None))
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    files = table.file_uris()
    if not files:  # no rows to hand over: cheaper than an empty Arrow table
        return spark.createDataFrame(spark.sparkContext.emptyRDD(), from_arrow_schema(schema))
    frame = spark.read.schema(from_arrow_schema(schema)).parquet(*files)
    for column, op, value in where:
        frame = frame.where(_COMPARISONS[op](F.col(column), F.lit(value)))
    return frame


def _image_table(spark: Any, warehouse: Warehouse, name: str, checkpoint: int, offset: int) -> Any:
    """Table `name` in the image at `offset`: the checkpoint's rows (-1: none) and every history version in
    (checkpoint, offset], of which each key's last one wins and is dropped if it is a deletion."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spec = TABLES[name]
    columns = spec.schema.names
    versions = read_table(spark, warehouse, history_name(name), [("from_offset", ">", checkpoint),
                                                                 ("from_offset", "<=", offset)])
    versions = versions.select(*columns, "from_offset", "deleted")
    if checkpoint >= 0:
        base = read_table(spark, warehouse, checkpoint_name(name), [("checkpoint_offset", "=", checkpoint)])
        base = base.select(*columns, F.lit(-1).cast("long").alias("from_offset"), F.lit(False).alias("deleted"))
        versions = base.unionByName(versions)
    latest_first = Window.partitionBy(*spec.key).orderBy(F.col("from_offset").desc())
    ranked = versions.withColumn(_RANK, F.row_number().over(latest_first))
    return ranked.where((F.col(_RANK) == 1) & ~F.col("deleted")).select(*columns)


def _from_arrow(spark: Any, table: pa.Table) -> Any:
    """A DataFrame of `table` (one chunk per column: Spark refuses a column of no chunks)."""
    return spark.createDataFrame(table.combine_chunks() if table.num_rows else table.schema.empty_table())
