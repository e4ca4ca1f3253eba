"""Every warehouse table as a Spark temp view, read through Arrow (delta-rs → pyarrow → Spark), never
through Parquet paths: Spark here has no object-store connector, and delta-rs reads any URI.

    register_views(spark, warehouse)            # notebook users: one call, then spark.sql("SELECT …")

Sub-image tables are one whole image (the last published one, or the one at `at_offset`); the `_history`
tables and `batches` stop at the last image's offset, so every view agrees with one another and none shows
part of an image still being written.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from analytics.summaries import SUMMARIES
from image_schema.tables import TABLES
from lake.history import history_rows, published_offset
from lake.time_travel import image_at_offset, image_at_time
from lake.warehouse import BATCHES, IMAGES, Warehouse


def register_views(
    spark: Any, warehouse: Warehouse, at_offset: int | None = None, at_time_ms: int | None = None
) -> list[str]:
    """Register every table and summary as a temp view; returns the view names."""
    last = published_offset(warehouse)
    if at_time_ms is not None:
        image = image_at_time(warehouse, at_time_ms)
    else:
        image = image_at_offset(warehouse, last if at_offset is None else at_offset)
    frames = {name: _frame(spark, table) for name, table in image.tables.items()}
    for name in TABLES:
        frames[f"{name}_history"] = _frame(spark, history_rows(warehouse, name))
    frames[BATCHES] = _frame(spark, warehouse.table(BATCHES).to_pyarrow_table(filters=[("base_offset", "<=", last)]))
    frames[IMAGES] = _frame(spark, warehouse.table(IMAGES).to_pyarrow_table())
    for name, frame in frames.items():
        frame.createOrReplaceTempView(name)
    for name, summary in SUMMARIES.items():
        spark.sql(summary.sql).createOrReplaceTempView(name)
    return [*frames, *SUMMARIES]


def _frame(spark: Any, table: pa.Table) -> Any:
    """A DataFrame of `table` (one chunk per column: Spark refuses a column of no chunks)."""
    return spark.createDataFrame(table.combine_chunks() if table.num_rows else table.schema.empty_table())
