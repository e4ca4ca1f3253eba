"""A short report on a warehouse, queried the way a user would: Spark SQL over the Delta tables.

The views come from `analytics.views.register_views` (every table as of the last published image), so
the report shows one consistent published image, never a half-written one.
"""

from __future__ import annotations

from typing import Any

from analytics.views import register_views
from image_schema.tables import TABLES
from lake.reader import WarehouseReader
from lake.warehouse import Warehouse, history_name


def report(spark: Any, warehouse: Warehouse) -> str:
    images = WarehouseReader(warehouse).images()
    if not images:
        return f"{warehouse.uri}: no image published yet"
    register_views(spark, warehouse)
    lines = [f"warehouse {warehouse.uri}", "", "tables at the last published image (Spark SQL):"]
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
    lines += _kraft_features(spark)
    lines += _time_travel_example(spark, warehouse)
    return "\n".join(lines)


def _kraft_features(spark: Any) -> list[str]:
    """Registered controllers, and how often ELRs and reassignments appear in the partitions' history."""
    controllers = [r["controller_id"] for r in spark.sql(
        "SELECT controller_id FROM controllers ORDER BY controller_id").collect()]
    with_elr = spark.sql(
        "SELECT count(DISTINCT topic_name, partition_id) AS n FROM partitions_history WHERE size(elr) > 0"
    ).first()["n"]
    reassigned = spark.sql(
        "SELECT count(DISTINCT topic_name, partition_id) AS n FROM partitions_history "
        "WHERE size(adding_replicas) > 0 OR size(removing_replicas) > 0"
    ).first()["n"]
    return [
        "",
        f"controllers registered: {controllers or 'none'}",
        f"partitions that had eligible leader replicas: {with_elr}; partitions reassigned: {reassigned}",
    ]


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
        image = WarehouseReader(warehouse).image_at(offset)
        match = [
            row for row in image.tables["partitions"].to_pylist()
            if row["topic_name"] == topic and row["partition_id"] == partition
        ]
        state = (
            f"replicas {match[0]['replicas']}, leader {match[0]['leader']}, isr {match[0]['isr']}, "
            f"elr {match[0]['elr']}" if match else "absent"
        )
        lines.append(f"  at offset {offset:>8} (epoch {image.provenance.epoch}): {state}")
    return lines
