"""Every warehouse table as a Spark temp view: registering reads the Delta logs, a query reads the rows it needs.

    register_views(spark, warehouse)            # notebook users: one call, then spark.sql("SELECT …")

Spark reads every table with Delta's own reader (`format("delta")`, the latest version), on a local disk or
an object store alike (an `s3://` warehouse through S3A, its delta-rs storage options mapped to `fs.s3a.*` by
`settings.spark`), so a query reads only the files, columns and row groups it needs. The session must have
Delta's jars and extension (`settings.spark.session_builder`, or `--packages`: see the README).

Sub-image tables are one whole image (the last published one, or the one at `at_offset`), built by the same
rule as `lake.time_travel.image_at_offset`: the newest image checkpoint at or before it, with
each key's last history version since applied. The `_history` tables and `batches` stop at the last
image's offset, so every view agrees with one another and none shows part of an image still being written.
"""

from __future__ import annotations

import operator
from typing import Any

from analytics.summaries import SUMMARIES
from image_schema.tables import TABLES
from lake.history import Filter, published_offset
from lake.time_travel import checkpoint_for, image_offset_at_time
from lake.warehouse import BATCHES, IMAGES, Warehouse, checkpoint_name, history_name
from settings.spark import spark_uri, use_store

_COMPARISONS = {"=": operator.eq, "<=": operator.le, ">": operator.gt}
_RANK = "__kraftlake_rank"


def register_views(
    spark: Any, warehouse: Warehouse, at_offset: int | None = None, at_time_ms: int | None = None
) -> list[str]:
    """Register every table and summary as a temp view; returns the view names."""
    use_store(spark, warehouse.storage_options)
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
    `where` (op: =, <=, >): Delta prunes the files by their statistics, Parquet the row groups."""
    from pyspark.sql import functions as F

    frame = spark.read.format("delta").load(spark_uri(warehouse.table_uri(name)))
    for column, op, value in where or []:
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
