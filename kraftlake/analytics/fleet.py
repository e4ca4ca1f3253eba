"""The fleet's views: every table and summary of `kraftlake.analytics.views`, for every cluster, unioned as
`fleet_<name>` with the cluster's name (`cluster`) and labels (`labels`, a map: `labels['env'] = 'prod'`) in front.

    fleet_brokers, fleet_topics, fleet_partitions, fleet_features, …    the image of each cluster at one moment
    fleet_partitions_history, fleet_batches, …                          each cluster's history
    fleet_under_replicated, fleet_offline_partitions, fleet_fencing_episodes, fleet_events, fleet_raft_epochs, …
    fleet_clusters                                                      each cluster shown, with its labels

A table's view is one relation of every cluster's rows, read with the project's reader
(`WarehouseReader.view_rows`: the rows `kraftlake sql` reads for one cluster, as Arrow); a summary is its one SQL
in the fleet's scope (`summaries(FLEET)`: every window, group and join also per `cluster`) over them. So a fleet
question is one plan of a few shuffles whatever the number of clusters: fifty one-cluster plans unioned took
Spark minutes to plan and thousands of stages to run (BENCHMARKS.md, fleet). Only the views a query names are
read (`views_used`).

The image is each cluster's last published one, or the one published at or before a time (`at_time_ms`: the
same moment across clusters, as offsets are per cluster). A cluster with no image (yet) at that moment is left
out and named in `skipped`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from kraftlake.analytics.summaries import Scope, Summary, summaries
from kraftlake.analytics.views import table_views
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.errors import LakeError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.scan import Selection, scan
from kraftlake.lake.warehouse import Warehouse, all_tables

PREFIX = "fleet_"
FLEET = Scope(PREFIX, "cluster")
CLUSTERS = PREFIX + "clusters"
LABELS = pa.map_(pa.string(), pa.string())
CLUSTER_READERS = 8  # clusters read at once: mostly waiting on files, so more than the cores


@dataclass
class FleetViews:
    views: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # cluster -> why it is not in the views


def labelled_sql(sql: str, clusters_view: str = CLUSTERS) -> str:
    """A fleet summary's rows (`sql`, in a fleet scope) with the cluster's labels after its name."""
    return (f"SELECT s.cluster, c.labels, s.* EXCEPT (cluster) FROM ({sql}) s "
            f"JOIN {clusters_view} c ON s.cluster = c.cluster")


def register_fleet_views(
    spark: Any, clusters: Mapping[str, tuple[WarehouseReader, Mapping[str, str]]], at_time_ms: int | None = None,
    only: Collection[str] | None = None,
) -> FleetViews:
    """Register `fleet_<name>` for every view of every cluster's warehouse (`clusters`: name -> reader, labels),
    or for those of `only` (`views_used(query, PREFIX)`), and `fleet_clusters`, in a Spark session."""
    tables, result = fleet_tables(clusters, at_time_ms, only)
    for view, rows in tables.items():
        _frame(spark, rows, view)
    for name, summary in fleet_summaries(only).items():
        spark.sql(summary.sql).createOrReplaceTempView(name)
    result.views.extend(fleet_summaries(only))
    return result


@dataclass(frozen=True)
class ClusterPart:
    """One cluster's share of the fleet's views: its image tables' rows, read, and for every other table the
    rows to take from its latest Delta version (the reader's bound: up to the last published image), unread."""

    name: str
    labels: Mapping[str, str]
    warehouse: Warehouse
    image: dict[str, pa.Table]
    published: dict[str, Selection]


def fleet_parts(
    clusters: Mapping[str, tuple[WarehouseReader, Mapping[str, str]]], at_time_ms: int | None = None,
    only: Collection[str] | None = None,
) -> tuple[list[ClusterPart], FleetViews]:
    """Each cluster's part of the table views (of `only`, if given), the clusters side by side (delta-rs and
    Arrow release the GIL: one after another, 200 clusters' Delta logs took most of a fleet question's time)."""
    wanted = set(only) if only is not None else set(table_views())
    tables = [name for name in table_views() if name in wanted]

    def part(name: str) -> ClusterPart | LakeError:
        reader, labels = clusters[name]
        try:
            offset = None if at_time_ms is None else reader.offset_at(at_time_ms)
            return ClusterPart(name, labels, reader.warehouse, *reader.view_parts(tables, offset))
        except LakeError as error:
            return error

    result = FleetViews(views=[PREFIX + view for view in tables])
    with ThreadPoolExecutor(max_workers=CLUSTER_READERS) as readers:
        found = dict(zip(clusters, readers.map(part, clusters), strict=True))
    result.skipped.update({name: str(got) for name, got in found.items() if isinstance(got, LakeError)})
    return [got for got in found.values() if isinstance(got, ClusterPart)], result


def fleet_tables(
    clusters: Mapping[str, tuple[WarehouseReader, Mapping[str, str]]], at_time_ms: int | None = None,
    only: Collection[str] | None = None,
) -> tuple[dict[str, pa.Table], FleetViews]:
    """Every cluster's rows of each table view (of `only`, if given) as one table `fleet_<name>`, and
    `fleet_clusters`: what a Spark session registers before the summaries (every column read into memory)."""
    parts, result = fleet_parts(clusters, at_time_ms, only)

    def scanned(part: ClusterPart) -> dict[str, pa.Table]:
        return {**part.image, **{view: scan(part.warehouse, view, where) for view, where in part.published.items()}}

    with ThreadPoolExecutor(max_workers=CLUSTER_READERS) as readers:
        rows = list(readers.map(scanned, parts))
    out = {CLUSTERS: clusters_table(parts)}
    for view in (name.removeprefix(PREFIX) for name in result.views):
        frames = [_with_cluster(tables[view], part.name, part.labels) for part, tables in zip(parts, rows, strict=True)]
        out[PREFIX + view] = pa.concat_tables(frames, promote_options="permissive") if frames else empty_view(view)
    return out, result


def clusters_table(parts: Collection[ClusterPart]) -> pa.Table:
    """`fleet_clusters`: each cluster shown, with its labels."""
    return pa.table({"cluster": pa.array([part.name for part in parts], pa.string()),
                     "labels": pa.array([_pairs(part.labels) for part in parts], LABELS)})


def image_view(parts: Collection[ClusterPart], view: str) -> pa.Table:
    """An image table's `fleet_<view>`: every cluster's rows, with its name and labels in front."""
    frames = [_with_cluster(part.image[view], part.name, part.labels) for part in parts]
    return pa.concat_tables(frames, promote_options="permissive") if frames else empty_view(view)


def fleet_summaries(only: Collection[str] | None = None) -> dict[str, Summary]:
    """The summaries of `only` (all if None) as `fleet_<name>`, each with the cluster's labels."""
    return {PREFIX + name: Summary(summary.description, labelled_sql(summary.sql))
            for name, summary in summaries(FLEET).items() if only is None or name in only}


def _frame(spark: Any, rows: pa.Table, view: str) -> None:
    """`rows` as a temp view, without its empty batches: given batches [1 row, empty, 1 row], Spark 4.2.0's
    createDataFrame (local[2]) has one row, silently."""
    batches = [batch for batch in rows.to_batches() if batch.num_rows] or [pa.RecordBatch.from_pylist([], rows.schema)]
    spark.createDataFrame(pa.Table.from_batches(batches, rows.schema)).createOrReplaceTempView(view)


def _pairs(labels: Mapping[str, str]) -> list[tuple[str, str]]:
    return sorted(labels.items())


def _with_cluster(table: pa.Table, name: str, labels: Mapping[str, str]) -> pa.Table:
    every_row = np.zeros(table.num_rows, dtype=np.int64)  # one value taken for each row: no Python list per row
    table = table.add_column(0, "labels", pa.array([_pairs(labels)], LABELS).take(every_row))
    return table.add_column(0, "cluster", pa.array([name], pa.string()).take(every_row))


def empty_view(view: str) -> pa.Table:
    """No cluster shown: the view's columns, no rows."""
    schema = TABLES[view].schema if view in TABLES else all_tables()[view]
    return _with_cluster(schema.empty_table(), "", {})
