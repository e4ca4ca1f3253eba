"""The fleet's views: every table and summary of `kraftlake.analytics.views`, for every cluster, unioned as
`fleet_<name>` with the cluster's name (`cluster`) and labels (`labels`, a map: `labels['env'] = 'prod'`) in front.

    fleet_brokers, fleet_topics, fleet_partitions, fleet_features, …    the image of each cluster at one moment
    fleet_partitions_history, fleet_batches, …                          each cluster's history
    fleet_under_replicated, fleet_offline_partitions, fleet_fencing_episodes, fleet_events, fleet_raft_epochs, …

Each cluster's part is exactly its one-cluster view (the same reads, the same summary SQL: one definition of
each fact); a cluster's views are registered, captured as DataFrames, then the next cluster's replace them.
The image is each cluster's last published one, or the one published at or before a time (`at_time_ms`: the
same moment across clusters, as offsets are per cluster). A cluster with no image (yet) at that moment is left
out and named in `skipped`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from kraftlake.analytics.views import register_views
from kraftlake.lake.errors import LakeError
from kraftlake.lake.reader import WarehouseReader

PREFIX = "fleet_"


@dataclass
class FleetViews:
    views: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # cluster -> why it is not in the views


def register_fleet_views(
    spark: Any, clusters: Mapping[str, tuple[WarehouseReader, Mapping[str, str]]], at_time_ms: int | None = None
) -> FleetViews:
    """Register `fleet_<name>` for every view of every cluster's warehouse (`clusters`: name -> reader, labels)."""
    from pyspark.sql import functions as F

    parts: dict[str, list[Any]] = {}
    result = FleetViews()
    for name, (reader, labels) in clusters.items():
        try:
            offset = None if at_time_ms is None else reader.offset_at(at_time_ms)
            views = register_views(spark, reader, offset)
        except LakeError as error:
            result.skipped[name] = str(error)
            continue
        label_map = F.create_map(*[F.lit(part) for key, value in sorted(labels.items()) for part in (key, value)])
        if not labels:
            label_map = F.create_map().cast("map<string,string>")
        for view in views:
            frame = spark.table(view)
            parts.setdefault(view, []).append(frame.select(F.lit(name).alias("cluster"), label_map.alias("labels"),
                                                           *[F.col(f"`{column}`") for column in frame.columns]))
    for view, frames in parts.items():
        reduce(lambda left, right: left.unionByName(right), frames).createOrReplaceTempView(PREFIX + view)
        result.views.append(PREFIX + view)
    return result
