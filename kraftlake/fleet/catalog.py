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

import re
import socket
from pathlib import Path
from typing import Any

from kraftlake.lake.warehouse import Warehouse, all_tables
from kraftlake.settings.fleet import CatalogSettings
from kraftlake.settings.spark import spark_uri

POSTGRES_DRIVER = "org.postgresql.Driver"
CONNECT_TIMEOUT_S = 10.0
_JDBC_HOST = re.compile(r"^jdbc:[a-z]+://(?P<host>\[[^\]]+\]|[^:/?]+)(?::(?P<port>\d+))?")
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306}


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
    qualified names. A metastore failure raises CatalogError naming the cluster (a rerun registers the rest)."""
    try:
        return _register(spark, name, warehouse)
    except CatalogError:
        raise
    except Exception as error:
        raise CatalogError(f"catalog: cannot register cluster {name}: {_first_line(error)}") from None


def _register(spark: Any, name: str, warehouse: Warehouse) -> list[str]:
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {name} COMMENT 'kraftlake: cluster {name}, warehouse {warehouse.uri}'")
    registered = []
    for table in all_tables():
        location = spark_uri(warehouse.table_uri(table)).replace("'", "\\'")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name}.{table} USING delta LOCATION '{location}'")
        registered.append(f"{name}.{table}")
    return registered


def check_catalog(spark: Any, catalog: CatalogSettings | None) -> None:
    """Fail before any micro-batch when the metastore cannot be used: its database's address is tried first
    (a server that is down is named with the reason, not as Hive's "Unable to instantiate
    SessionHiveMetaStoreClient"), then the metastore itself is asked for its schemas."""
    where = "the embedded metastore" if catalog is None else f"catalog {catalog.jdbc_url}"
    if catalog is not None:
        _check_reachable(catalog.jdbc_url)
    try:
        spark.sql("SHOW SCHEMAS").collect()
    except Exception as error:
        hint = "" if catalog is None else (" (is the JDBC driver in build/jars/spark: `make jars`; are the user and "
                                           "password_file right?)")
        raise CatalogError(f"{where}: {_first_line(error)}{hint}") from None


def _check_reachable(jdbc_url: str) -> None:
    found = _JDBC_HOST.match(jdbc_url)
    if found is None:
        return
    kind = jdbc_url.split(":", 2)[1]
    port = int(found["port"]) if found["port"] else _DEFAULT_PORTS.get(kind)
    if port is None:
        return
    host = found["host"].strip("[]")
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise CatalogError(f"catalog {jdbc_url}: cannot connect to {host}:{port}: "
                           f"{error.strerror or error}") from None


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
