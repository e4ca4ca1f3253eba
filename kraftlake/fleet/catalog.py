"""The fleet's catalog: every cluster's tables registered in a Hive metastore as a schema of their own
(`prod_eu.partitions_history`, `prod_eu.batches`, …), so any Spark session pointed at the metastore finds them
by name. The streaming job registers a cluster as soon as its warehouse exists (`CREATE … IF NOT EXISTS`:
a new cluster appears without a manual step, a restart registers nothing twice); after a run's first cluster, a
cluster's entries are copies of one registered before with its own locations and text (`copy_table`,
`copy_view`), so a cluster added costs metastore calls, not a Delta log load per table and an analysis per view.

The tables are external Delta tables (`USING delta LOCATION '<warehouse>/<table>'`): the metastore holds only
their names and locations; Delta's log stays the truth about their contents, written by kraftlake's writer.

Which metastore: Spark's own Hive metastore client (hive-metastore 2.3.10, shipped in the pyspark wheel, so it
matches Spark 4.2 exactly) on PostgreSQL through DataNucleus, its tables created on first use. Chosen over
Unity Catalog OSS because it needs no server of its own (the metastore is a library in each Spark driver;
PostgreSQL is the only service, and Debian ships it) and Delta 4.4's `DeltaCatalog` runs over it unchanged;
Unity Catalog would be a JVM service to run and a second catalog plugin to configure in every session. Without
a `[catalog]` in the fleet file the metastore is Spark's embedded Derby (one JVM at a time: the job's own).

The fleet's questions as persistent views (`PublishedViews`, kept current by the job), so a plain Spark session
with Delta and the metastore's settings runs them:

    <cluster>_published.<view>   every view `kraftlake sql` has for one cluster (the image's tables, the history
                                 tables, `batches`, `images`, `gaps`, the summaries), showing the cluster's last
                                 published image: the reader's `image_reads` rendered as SQL over the registered
                                 tables, pinned by offset literals (the history up to the image's offset, the
                                 image checkpoint it starts from), never a half-written image
    default.fleet_<view>         UNION ALL of the clusters' views with `cluster` and `labels` in front

Pinned by offsets, not by Delta versions (`VERSION AS OF`, which persistent views accept here): a session
without kraftlake's settings refuses a version older than the tables' 5-minute
`delta.deletedFileRetentionDuration` once a later one exists (DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_
RETENTION_DURATION, checked with Spark 4.2.0 and Delta 4.4.0), and VACUUM deletes old versions' files: an idle
cluster's views would break. Rows at offsets up to a published image never change (the tables are append-only
there, compaction rewrites them unchanged), so the offsets alone pin the image and the latest version serves it,
as it serves the reader. The summaries' SQL (`kraftlake.analytics.summaries`) is created with the cluster's
`_published` schema as the current namespace, so its unqualified names resolve to the pinned views.
"""

from __future__ import annotations

import logging
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from pyspark.errors import AnalysisException

from kraftlake.analytics.fleet import CLUSTERS, FLEET, labelled_sql
from kraftlake.analytics.fleet import PREFIX as FLEET_PREFIX  # `kraftlake sql --fleet`'s temp views shadow these
from kraftlake.analytics.summaries import SUMMARIES, Scope, summaries
from kraftlake.analytics.views import image_table_sql, selection_sql, sql_literal
from kraftlake.lake.errors import LakeError
from kraftlake.lake.reader import TableRead, WarehouseReader
from kraftlake.lake.warehouse import Warehouse, all_tables
from kraftlake.settings.fleet import PUBLISHED_SUFFIX, CatalogSettings
from kraftlake.settings.spark import spark_uri

POSTGRES_DRIVER = "org.postgresql.Driver"
CONNECT_TIMEOUT_S = 10.0
_JDBC_HOST = re.compile(r"^jdbc:[a-z]+://(?P<host>\[[^\]]+\]|[^:/?]+)(?::(?P<port>\d+))?")
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306}
log = logging.getLogger(__name__)


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


def register_cluster(spark: Any, name: str, warehouse: Warehouse, like: str | None = None) -> list[str]:
    """Schema `name` with every table of the cluster's warehouse (which must exist), idempotently; returns the
    qualified names. With `like`, a cluster registered before, each table's entry is a copy of that cluster's with
    this warehouse's location (`copy_table`), else Spark's DDL makes it. A metastore failure raises CatalogError
    naming the cluster (a rerun registers the rest)."""
    try:
        return _register(spark, name, warehouse, like)
    except CatalogError:
        raise
    except Exception as error:
        raise CatalogError(f"catalog: cannot register cluster {name}: {_first_line(error)}") from None


def _register(spark: Any, name: str, warehouse: Warehouse, like: str | None) -> list[str]:
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {name} COMMENT 'kraftlake: cluster {name}, warehouse {warehouse.uri}'")
    registered = []
    for table in all_tables():
        location = spark_uri(warehouse.table_uri(table))
        if like is None or not copy_table(spark, like, name, table, location):
            quoted = location.replace("'", "\\'")
            spark.sql(f"CREATE TABLE IF NOT EXISTS {name}.{table} USING delta LOCATION '{quoted}'")
        registered.append(f"{name}.{table}")
    return registered


def copy_table(spark: Any, like: str, schema: str, name: str, location: str) -> bool:
    """Table `schema.name` registered, if it is not, as a copy of `like.name`'s entry with `location`: one
    metastore call instead of `CREATE TABLE … USING delta LOCATION`, which loads the table's Delta log (most of a
    second a table, 45 a cluster). Sound because the entry of a Delta table Spark makes holds only its name,
    location and provider (no columns, no properties: Delta reads them from the log), and every warehouse this
    kraftlake opens has the same tables. False when `like.name` is not registered."""
    catalog = spark._jsparkSession.sessionState().catalog()
    external = catalog.externalCatalog()
    if external.tableExists(schema, name):
        return True
    template = _entry(external, like, name)
    if template is None:
        return False
    jvm = _classes(spark._jvm)
    uri = catalog.makeQualifiedPath(jvm.catalog_utils.stringToURI(location))
    storage = _copied(template.storage(), locationUri=jvm.some(uri))
    external.createTable(_copied(template, identifier=_identifier(spark, schema, name), storage=storage,
                                 createTime=int(time.time() * 1000)), False)
    return True


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


def published_schema(cluster: str) -> str:
    return cluster + PUBLISHED_SUFFIX


def publish_views(spark: Any, cluster: str, reader: WarehouseReader, like: str | None = None) -> tuple[int, list[str]]:
    """Schema `<cluster>_published` with a view of every table as the reader's last published image has it
    (over the cluster's registered tables, which must exist); returns the image's offset and the view names.
    With `like`, a cluster whose views this kraftlake made (this cluster itself, to pin a newer image), each view
    is `like`'s entry with this view's text (`copy_view`), else Spark's DDL makes it."""
    reads = reader.image_reads()
    schema = published_schema(cluster)
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema} COMMENT 'kraftlake: cluster {cluster}, its last published image'")
    views = {name: image_table_sql(name, None if base is None else _read_sql(cluster, base), _read_sql(cluster, since))
             for name, (base, since) in reads.image.items()}
    views.update({name: f"SELECT * FROM {_read_sql(cluster, read)}" for name, read in reads.others.items()})
    comment = f"kraftlake: cluster {cluster}, the image published at offset {reads.offset}"
    for name, sql in views.items():
        if like is None or not copy_view(spark, published_schema(like), schema, name, sql, comment):
            spark.sql(f"CREATE OR REPLACE VIEW {schema}.{name} COMMENT {sql_literal(comment)} AS {sql}")
    return reads.offset, list(views)


def _read_sql(cluster: str, read: TableRead) -> str:
    return f"(SELECT * FROM {cluster}.{read.name} WHERE {selection_sql(read.where)})"


def create_summaries(session: Any, cluster: str, like: str | None = None) -> list[str]:
    """The summaries as views of `<cluster>_published`, from their one SQL, over its pinned views; with `like`, a
    cluster whose summaries this kraftlake made, as copies of its entries (`copy_view`). Views resolve unqualified
    names in the namespace they were created in: `session`'s current one is set to that schema, so give a session
    of the catalog's own (`spark.newSession()`)."""
    schema = published_schema(cluster)
    session.sql(f"USE {schema}")
    for name, summary in SUMMARIES.items():
        comment = f"kraftlake: {summary.description}"
        if like is None or not copy_view(session, published_schema(like), schema, name, summary.sql, comment):
            session.sql(f"CREATE OR REPLACE VIEW {schema}.{name} COMMENT {sql_literal(comment)} AS {summary.sql}")
    return list(SUMMARIES)


def create_fleet_views(spark: Any, views: list[str], clusters: Mapping[str, Mapping[str, str]],
                       first_round: bool = True) -> list[str]:
    """`default.fleet_<view>` for each of `views` (tables before the summaries that read them), as `kraftlake sql
    --fleet` has them (`kraftlake.analytics.fleet`): a table's is every cluster's `<cluster>_published.<table>`
    (which must exist) with its name (`cluster`) and labels (`labels`, a map) in front; a summary's is its one SQL
    in the fleet's scope over those, so a question is one plan whatever the number of clusters; and
    `default.fleet_clusters`. Returns the fleet views' names.

    A run's first round creates them all (this kraftlake's SQL and columns). A later one, the clusters or their
    labels changed, leaves the summaries as they are (their SQL names the fleet's table views, not the clusters)
    and gives the unions and `fleet_clusters`, whose columns do not change with the clusters, their new text in the
    metastore without Spark analyzing it (`copy_view`): `CREATE OR REPLACE VIEW` resolves every cluster's
    views that a union names, so a cluster added cost more the bigger the fleet (BENCHMARKS.md, registration)."""
    define = partial(_define_view, spark, analyzed=first_round)
    rows = ", ".join(f"({sql_literal(name)}, {_labels_sql(labels)})" for name, labels in sorted(clusters.items()))
    define(CLUSTERS, f"SELECT * FROM VALUES {rows} AS t(cluster, labels)")
    fleet = Scope(f"default.{FLEET_PREFIX}", FLEET.key)
    scoped = summaries(fleet)
    created = [CLUSTERS]
    for view in views:
        if view in scoped and not first_round:
            continue
        if view in scoped:
            sql = labelled_sql(scoped[view].sql, f"default.{CLUSTERS}")
        else:
            sql = " UNION ALL ".join(f"SELECT {sql_literal(name)} AS cluster, {_labels_sql(labels)} AS labels, * "
                                     f"FROM {published_schema(name)}.{view}"
                                     for name, labels in sorted(clusters.items()))
        define(FLEET_PREFIX + view, sql)
        created.append(FLEET_PREFIX + view)
    return created


def _define_view(spark: Any, name: str, sql: str, analyzed: bool) -> None:
    if analyzed or not copy_view(spark, "default", "default", name, sql):  # its own entry, the new text
        spark.sql(f"CREATE OR REPLACE VIEW default.{name} AS {sql}")


def copy_view(spark: Any, like: str, schema: str, name: str, sql: str, comment: str | None = None) -> bool:
    """View `schema.name` made, or replaced, as a copy of the metastore's view `like.name` with the text `sql`
    (and `comment`), which must have that view's columns (Spark keeps them with the view and reads the text's by
    those names) and resolve in `schema` as the original did in `like`: one metastore call, where `CREATE OR
    REPLACE VIEW` analyzes the text, loading every Delta table it reads. With `like` the view's own schema, the view
    gets the new text in place. False when there is no `like.name`."""
    catalog = spark._jsparkSession.sessionState().catalog()
    external = catalog.externalCatalog()
    template = _entry(external, like, name)
    if template is None:
        return False
    some = _classes(spark._jvm).some
    identifier = _identifier(spark, schema, name)
    changes: dict[str, Any] = {"viewText": some(sql), "viewOriginalText": some(sql)}  # the text read, as given
    if comment is not None:
        changes["comment"] = some(comment)
    if like != schema:
        properties = template.properties()
        namespace = properties.get(_VIEW_NAMESPACE)  # where the view's unqualified names resolve
        if namespace.isDefined() and namespace.get() == like:
            properties = properties.updated(_VIEW_NAMESPACE, schema)
        changes.update(identifier=identifier, properties=properties, createTime=int(time.time() * 1000))
    view = _copied(template, **changes)
    if like == schema or external.tableExists(schema, name):
        external.alterTable(view)
        catalog.invalidateCachedTable(identifier)
    else:
        external.createTable(view, False)
    return True


_VIEW_NAMESPACE = "view.catalogAndNamespace.part.1"  # part 0 is the catalog (spark_catalog), 1 the schema


def _entry(external: Any, schema: str, name: str) -> Any | None:
    """The metastore's CatalogTable `schema.name`, None when there is none."""
    try:
        return external.getTable(schema, name)
    except AnalysisException as error:
        if error.getCondition() in ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND"):
            return None
        raise


def _identifier(spark: Any, schema: str, name: str) -> Any:
    jvm = _classes(spark._jvm)
    return jvm.table_identifier(name, jvm.some(schema))


@dataclass(frozen=True)
class _Classes:
    """The JVM classes a copy names, looked up once per gateway: each step of `spark._jvm.org.apache…` is a Py4J
    round trip holding the driver's GIL beside the micro-batches."""

    some: Any
    table_identifier: Any
    catalog_utils: Any


@cache
def _classes(jvm: Any) -> _Classes:
    catalyst = jvm.org.apache.spark.sql.catalyst
    return _Classes(jvm.scala.Some, catalyst.TableIdentifier, catalyst.catalog.CatalogUtils)


def _copied(case_class: Any, **changes: Any) -> Any:
    """A Scala case class with `changes` (field name -> value), through its `copy`; its field names read once per
    class (walking them was 40-odd Py4J calls a copy), only the fields kept read from it."""
    kind = case_class.productPrefix()
    if (fields := _FIELDS.get(kind)) is None:
        names, fields = case_class.productElementNames(), []
        while names.hasNext():
            fields.append(names.next())
        _FIELDS[kind] = fields
    if unknown := set(changes) - set(fields):
        raise ValueError(f"{kind} has no field {', '.join(sorted(unknown))}")
    return case_class.copy(*(changes[field] if field in changes else case_class.productElement(index)
                             for index, field in enumerate(fields)))


_FIELDS: dict[str, list[str]] = {}  # a case class's field names, by its name (`productPrefix`)


def _labels_sql(labels: Mapping[str, str]) -> str:
    pairs = ", ".join(sql_literal(part) for key, value in sorted(labels.items()) for part in (key, value))
    return f"CAST(map({pairs}) AS MAP<STRING, STRING>)"


class PublishedViews:
    """The job's upkeep of the persistent views: a cluster's are re-created when its last published image
    changed, looked at no more often than every `refresh_s` seconds (the fleet file's `catalog_refresh_seconds`)
    and within a time budget per round, the longest-waiting cluster first; the fleet views when the set of
    clusters shown or their labels changed. The DDL runs in its own session (its own current namespace), never
    inside a micro-batch. Only the run's first cluster's views go through Spark's DDL (which analyzes each view,
    loading the Delta tables it reads); the rest, and every later pinning, are copies of views made in this run
    with their own text (`copy_view`): one metastore call a view, whatever the history's length or the fleet's."""

    def __init__(self, spark: Any, refresh_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.session = spark.newSession()
        self.refresh_s = refresh_s
        self.clock = clock
        self.pinned: dict[str, int] = {}  # cluster -> the offset of the image its views show
        self.looked: dict[str, float] = {}  # cluster -> when its last image was last looked at
        self.views: list[str] = []  # every view a cluster's schema has
        self.unioned: dict[str, dict[str, str]] | None = None  # the clusters (and labels) the fleet views show

    def keep_current(self, clusters: Mapping[str, tuple[WarehouseReader, Mapping[str, str]]],
                     budget_s: float | None = None) -> None:
        """Refresh the clusters due (all of them, whatever `refresh_s`, when `budget_s` is None: at the end of a
        run; never looked at first, then in `clusters`' order), then the fleet views if what they show changed,
        whether or not other clusters still wait to be registered: after a run's first round the unions get
        their new text in the metastore (`create_fleet_views`), about a second at 200 clusters, so a cluster
        added is in `fleet_*` in the round after its views (waiting for the fleet to settle, one added mid-run
        to 200 was not in `fleet_*` after 270 s). `clusters`: name -> (reader, labels), each with its tables
        registered."""
        started = self.clock()
        waited = sorted(clusters, key=lambda name: self.looked.get(name, float("-inf")))
        for name in waited:
            if budget_s is not None and (self.clock() - started >= budget_s
                                         or started - self.looked.get(name, float("-inf")) < self.refresh_s):
                break
            self.looked[name] = self.clock()
            self._try(f"cluster {name}'s views", partial(self._refresh, name, clusters[name][0]))
        shown = {name: dict(labels) for name, (_, labels) in clusters.items() if name in self.pinned}
        if shown and shown != self.unioned:
            # the summaries once a run (this kraftlake's SQL), then only what names the clusters
            union = partial(create_fleet_views, self.session, self.views, shown, first_round=self.unioned is None)
            if self._try(f"the fleet views ({', '.join(sorted(shown))})", union):
                self.unioned = shown

    def _refresh(self, name: str, reader: WarehouseReader) -> None:
        """The cluster's views, if its last published image is not the one they show."""
        try:
            last = reader.last_published()
        except LakeError:  # no warehouse (yet)
            return
        if last < 0 or self.pinned.get(name) == last:
            return
        # the views this run made are the pattern (their columns are this kraftlake's): a cluster's own, to pin
        # its newer image, else the first cluster's; the first cluster's views of a run come from Spark's DDL
        made = next(iter(self.pinned), None)
        offset, tables = publish_views(self.session, name, reader, like=name if name in self.pinned else made)
        # the summaries once a run: they name the pinned views
        summaries = list(SUMMARIES) if name in self.pinned else create_summaries(self.session, name, like=made)
        self.views = [*tables, *summaries]
        self.pinned[name] = offset
        log.info("catalog: cluster %s's views show the image at offset %d", name, offset)

    @staticmethod
    def _try(what: str, action: Callable[[], object]) -> bool:
        """A failure (the metastore away, a warehouse changing under a read) is one line; the next round tries
        again, and the streaming query goes on."""
        try:
            action()
            return True
        except Exception as error:
            log.warning("catalog: %s not updated (tried again later): %s", what, _first_line(error)[:500])
            return False
