"""The fleet's catalog: every cluster's tables registered in a Hive metastore as a schema of their own
(`prod_eu.partitions_history`, `prod_eu.batches`, …), so any Spark session pointed at the metastore finds them
by name. The streaming job registers a cluster as soon as its warehouse exists (`CREATE … IF NOT EXISTS`:
a new cluster appears without a manual step, a restart registers nothing twice).

The tables are external Delta tables (`USING delta LOCATION '<warehouse>/<table>'`): the metastore holds only
their names and locations; Delta's log stays the truth about their contents, written by kraftlake's writer.

Which metastore: Spark's own Hive metastore client (hive-metastore 2.3.10, shipped in the pyspark wheel, so it
matches Spark 4.2 exactly) on PostgreSQL through DataNucleus, its tables created on first use. Chosen over
Unity Catalog OSS because it needs no server of its own (the metastore is a library in each Spark driver;
PostgreSQL is the only service, and Debian ships it) and Delta 4.4's `DeltaCatalog` runs over it unchanged;
Unity Catalog would be a JVM service to run and a second catalog plugin to configure in every session. Without
a `[catalog]` in the fleet file the metastore is Spark's embedded Derby (one JVM at a time: the job's own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraftlake.lake.warehouse import Warehouse, all_tables
from kraftlake.settings.fleet import CatalogSettings
from kraftlake.settings.spark import spark_uri

POSTGRES_DRIVER = "org.postgresql.Driver"


class CatalogError(Exception):
    """The metastore cannot be used: names the JDBC URL (never the password)."""


def catalog_conf(catalog: CatalogSettings | None, derby_home: Path) -> dict[str, str]:
    """The session settings of the fleet's metastore: a shared PostgreSQL one, else embedded Derby under
    `derby_home`."""
    conf = {"spark.sql.catalogImplementation": "hive"}
    if catalog is None:
        derby = f"jdbc:derby:;databaseName={derby_home}/metastore_db;create=true"
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = derby
        conf["spark.sql.warehouse.dir"] = str(derby_home / "spark-warehouse")
        return conf
    conf.update({
        "spark.hadoop.javax.jdo.option.ConnectionURL": catalog.jdbc_url,
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": POSTGRES_DRIVER,
        "spark.hadoop.javax.jdo.option.ConnectionUserName": catalog.user,
        # DataNucleus creates the metastore's tables lazily, each on first use, from a second connection; adding a
        # foreign key then waits for the lock the first connection's open transaction holds on the table it
        # references (seen here: `ALTER TABLE "TBL_PRIVS" ADD CONSTRAINT …` blocked by an INSERT into
        # TABLE_PARAMS, forever). So tables and columns are created, constraints not (`autoCreateAll` would
        # turn them on again).
        "spark.hadoop.datanucleus.schema.autoCreateAll": "false",
        "spark.hadoop.datanucleus.schema.autoCreateTables": "true",
        "spark.hadoop.datanucleus.schema.autoCreateColumns": "true",
        "spark.hadoop.datanucleus.schema.autoCreateConstraints": "false",
        "spark.hadoop.hive.metastore.schema.verification": "false",
    })
    if catalog.password_file is not None:
        try:
            password = catalog.password_file.read_text().strip()
        except OSError as error:
            raise CatalogError(f"catalog {catalog.jdbc_url}: cannot read password_file {catalog.password_file}: "
                               f"{error.strerror}") from None
        # Spark redacts conf keys matching "password" wherever it shows its settings
        conf["spark.hadoop.javax.jdo.option.ConnectionPassword"] = password
    if catalog.warehouse_dir:
        conf["spark.sql.warehouse.dir"] = catalog.warehouse_dir
    return conf


def register_cluster(spark: Any, name: str, warehouse: Warehouse) -> list[str]:
    """Schema `name` with every table of the cluster's warehouse (which must exist), idempotently; returns the
    qualified names."""
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {name} COMMENT 'kraftlake: cluster {name}, warehouse {warehouse.uri}'")
    registered = []
    for table in all_tables():
        location = spark_uri(warehouse.table_uri(table)).replace("'", "\\'")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name}.{table} USING delta LOCATION '{location}'")
        registered.append(f"{name}.{table}")
    return registered
