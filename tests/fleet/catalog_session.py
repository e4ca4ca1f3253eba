"""The Spark processes of the catalog's tests, each its own JVM (embedded Derby opens in one JVM at a time, and
a reader of the catalog must be a session of its own, not the one that made the views):

    python -m tests.fleet.catalog_session publish FLEET_TOML DERBY_HOME [--resume CLUSTER=DIRECTORY]
    python -m tests.fleet.catalog_session query FLEET_TOML DERBY_HOME SQL

`publish` is the job's side: every cluster's tables registered and its views made current (`PublishedViews`), one
JSON line of what each cluster's views show and the fleet views in the catalog (with `--added CLUSTER`, a line
before that cluster joins the fleet views and one after); with `--resume`, the cluster's
log is then ingested to its end (a new image) and the upkeep runs again, throttled (nothing refreshed), then due
(refreshed), a line each.
`query` is a plain session: Delta's jars and extension, the fleet's metastore settings (`catalog_conf`) and, for
warehouses on S3, the `spark.hadoop.fs.s3a.*` settings an operator gives a session (from the `AWS_*` environment);
nothing of kraftlake's session settings and no temp view; it prints the rows as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kraftlake.fleet.catalog import PublishedViews, catalog_conf, published_schema, register_cluster
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.settings.fleet import cluster_location, load_fleet
from kraftlake.settings.jars import spark_conf
from kraftlake.settings.spark import session_builder, store_conf

QUIET = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.log.level": "ERROR",
         "spark.sql.session.timeZone": "UTC"}
BUDGET_S = 600.0


def publish(fleet_file: Path, derby_home: Path, resume: str | None, added: str | None = None) -> None:
    fleet = load_fleet(fleet_file)
    assert fleet.settings.warehouse_root is not None
    conf = {**catalog_conf(fleet.settings.catalog, derby_home), **QUIET}
    spark = session_builder("kraftlake-catalog-publish", "local[2]", conf).enableHiveSupport().getOrCreate()
    readers = {name: WarehouseReader(Warehouse(cluster_location(fleet.settings.warehouse_root, name)))
               for name in fleet.clusters}
    clusters = {name: (reader, fleet.clusters[name].labels) for name, reader in readers.items()}
    first = next(iter(readers))
    for name, reader in readers.items():  # as the job does: the first through Spark's DDL, the rest copies of it
        register_cluster(spark, name, reader.warehouse, like=None if name == first else first)
    views = PublishedViews(spark, fleet.settings.catalog_refresh_seconds)
    if added is not None:  # the fleet views first without it, then it joins them
        views.keep_current({name: cluster for name, cluster in clusters.items() if name != added})
        _report(spark, "before", views)
    views.keep_current(clusters)
    _report(spark, "published", views)
    if resume is None:
        return
    name, _, directory = resume.partition("=")
    ingest(Path(directory), readers[name].warehouse)
    views.keep_current(clusters, budget_s=BUDGET_S)  # looked at moments ago: not due
    _report(spark, "throttled", views)
    views.refresh_s = 0
    views.keep_current(clusters, budget_s=BUDGET_S)
    _report(spark, "refreshed", views)


def _report(spark: Any, step: str, views: PublishedViews) -> None:
    """What each cluster's views show: the offset pinned, and the last image its `images` view and the fleet's
    hold (read back through the catalog)."""
    shown = {name: {"pinned": offset,
                    "images_view": _one(spark, f"SELECT max(offset) FROM {published_schema(name)}.images"),
                    "fleet_images": _one(spark, f"SELECT max(offset) FROM fleet_images WHERE cluster = '{name}'")}
             for name, offset in views.pinned.items()}
    found = sorted(row.viewName for row in spark.sql("SHOW VIEWS IN default LIKE 'fleet_*'").collect())
    print(json.dumps({"step": step, "clusters": shown, "fleet_views": found}), flush=True)


def _one(spark: Any, sql: str) -> Any:
    return spark.sql(sql).collect()[0][0]


def query(fleet_file: Path, derby_home: Path, sql: str) -> None:
    from pyspark.sql import SparkSession

    conf = catalog_conf(load_fleet(fleet_file).settings.catalog, derby_home)
    conf.update({f"spark.hadoop.{key}": value for key, value in store_conf({}).items()})
    builder = SparkSession.builder.master("local[2]").appName("plain-session").enableHiveSupport()
    for key, value in {**spark_conf(), **conf, **QUIET}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for row in spark.sql(sql).toLocalIterator():
        print(json.dumps(row.asDict(recursive=True), sort_keys=True, default=str))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="catalog_session")
    steps = parser.add_subparsers(dest="step", required=True)
    one = steps.add_parser("publish")
    one.add_argument("--resume")
    one.add_argument("--added")
    other = steps.add_parser("query")
    for step in (one, other):
        step.add_argument("fleet", type=Path)
        step.add_argument("derby_home", type=Path)
    other.add_argument("sql")
    args = parser.parse_args(argv)
    if args.step == "publish":
        publish(args.fleet, args.derby_home, args.resume, args.added)
    else:
        query(args.fleet, args.derby_home, args.sql)


if __name__ == "__main__":
    main(sys.argv[1:])
