"""A short report on a warehouse, queried the way a user would: Spark SQL over the Delta tables.

Spark gets each table at the version an `images` row pins from delta-rs as Arrow (never as file paths:
the warehouse may be on object storage Spark has no connector for), so the report shows one consistent
published image, never a half-written one.
"""

from __future__ import annotations

from typing import Any

from image_schema.tables import TABLES
from jobs.time_travel import image_at_offset, published_images
from jobs.warehouse import Warehouse, history_name


def register_views(spark: Any, warehouse: Warehouse) -> dict[str, int]:
    """Temp views of every table at the last published image; returns their Delta versions."""
    latest = published_images(warehouse)[-1]
    for name in [*TABLES, *(history_name(t) for t in TABLES)]:
        rows = warehouse.table(name, latest.table_versions[name]).to_pyarrow_table()
        if rows.num_rows == 0:  # Spark's Arrow conversion fails on columns with no chunk at all
            rows = rows.schema.empty_table()
        spark.createDataFrame(rows).createOrReplaceTempView(name)
    return latest.table_versions


def report(spark: Any, warehouse: Warehouse) -> str:
    images = published_images(warehouse)
    if not images:
        return f"{warehouse.root}: no image published yet"
    register_views(spark, warehouse)
    lines = [f"warehouse {warehouse.root}", "", "tables at the last published image (Spark SQL):"]
    for name in TABLES:
        rows = spark.sql(f"SELECT count(*) AS n FROM {name}").first()["n"]
        versions = spark.sql(f"SELECT count(*) AS n FROM {history_name(name)}").first()["n"]
        lines.append(f"  {name:<18} {rows:>8} rows   {versions:>8} row versions in {history_name(name)}")
    snapshots = sum(image.snapshot for image in images)
    lines += [
        "",
        f"images published: {len(images)} (offsets {images[0].offset}..{images[-1].offset}"
        + (f", {snapshots} from snapshots" if snapshots else "") + ")",
    ]
    lines += _time_travel_example(spark, warehouse)
    return "\n".join(lines)


def _time_travel_example(spark: Any, warehouse: Warehouse) -> list[str]:
    """One partition's leader and ISR at three offsets: the partition whose leadership moved most."""
    busiest = spark.sql(
        "SELECT topic_name, partition_id, count(*) AS versions, min(from_offset) AS first, "
        "max(from_offset) AS last FROM partitions_history WHERE NOT deleted "
        "GROUP BY topic_name, partition_id ORDER BY versions DESC, topic_name, partition_id LIMIT 1"
    ).collect()
    if not busiest:
        return ["", "time travel: no partition in this warehouse"]
    topic, partition = busiest[0]["topic_name"], busiest[0]["partition_id"]
    first, last = busiest[0]["first"], busiest[0]["last"]
    lines = ["", f"time travel: {topic}-{partition} ({busiest[0]['versions']} versions)"]
    for offset in sorted({first, (first + last) // 2, last}):
        image = image_at_offset(warehouse, offset)
        match = [
            row for row in image.tables["partitions"].to_pylist()
            if row["topic_name"] == topic and row["partition_id"] == partition
        ]
        state = f"leader {match[0]['leader']}, isr {match[0]['isr']}" if match else "absent"
        lines.append(f"  at offset {offset:>8} (epoch {image.provenance.epoch}): {state}")
    return lines
