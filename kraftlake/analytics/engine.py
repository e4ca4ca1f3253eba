"""Questions in-process: DataFusion over the reader's Arrow rows, no JVM (`kraftlake sql` and `summary`'s default).

    context = one_cluster(WarehouseReader(Warehouse(uri)))    # or fleet(clusters) for the fleet_* views
    answer = run(context, "SELECT …")                          # a pyarrow.Table

The rows are what the Spark views hold (`WarehouseReader.view_rows`, the reader's own choice: the image at an
offset, the history up to the last published image), the summaries are the same SQL text as Spark's
(`summaries.py` keeps to what both engines parse), so a question answers alike in either. Where DataFusion lacks
a Spark function the docs' queries use, it is registered here under Spark's name, with Spark's result:
`size`, `timestamp_millis`, `unix_millis`. The SQL dialect is DataFusion's Databricks one (backquoted names,
`offset` as a column name), with decimal literals as in Spark (`1000.0` is a DECIMAL(5,1)).

Chosen by measurement over DuckDB (BENCHMARKS.md, "sql"): DuckDB reserves `offset`, a column name in nearly
every summary and the history tables, so the one SQL would not parse there; on the rows both hold, each answers
in milliseconds next to the interpreter's start.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kraftlake.analytics.summaries import Summary

if TYPE_CHECKING:
    from kraftlake.analytics.fleet import ClusterPart, FleetViews

_SETTINGS = {
    "datafusion.sql_parser.dialect": "databricks",
    "datafusion.sql_parser.parse_float_as_decimal": "true",
    "datafusion.execution.time_zone": "+00:00",
    "datafusion.sql_parser.default_null_ordering": "nulls_min",  # Spark's: NULL first ascending, last descending
}
TABLE_OPENERS = 8  # Delta logs opened at once for a fleet view (mostly waiting on files)
TIMESTAMP = pa.timestamp("us")  # Spark's TIMESTAMP, shown in UTC (the CLI's session time zone)
# the labels' type (`kraftlake.analytics.fleet.LABELS`) in DataFusion's words: a map literal with no entries is
# typed null -> null otherwise
_LABELS = 'Map("entries": non-null Struct("key": non-null Utf8, "value": Utf8), unsorted)'


class QueryError(Exception):
    """A question the engine refuses (a name it does not know, a syntax error): one line."""


def context() -> Any:
    """A DataFusion session with Spark's names for the functions the docs use."""
    import datafusion

    config = datafusion.SessionConfig()
    for key, value in _SETTINGS.items():
        config = config.set(key, value)
    session = datafusion.SessionContext(config)
    for name, function, inputs, output in (
        ("size", pc.list_value_length, [pa.list_(pa.int32())], pa.int32()),
        ("timestamp_millis", lambda ms: pc.cast(pc.cast(ms, pa.timestamp("ms")), TIMESTAMP), [pa.int64()], TIMESTAMP),
        ("unix_millis", lambda ts: pc.cast(pc.cast(ts, pa.timestamp("ms")), pa.int64()), [TIMESTAMP], pa.int64()),
    ):
        session.register_udf(datafusion.udf(function, inputs, output, "immutable", name))
    return session


def register(session: Any, tables: Mapping[str, pa.Table], summaries: Mapping[str, Summary],
             only: Collection[str] | None = None) -> list[str]:
    """`tables` as tables and `summaries` (in dependency order) as views of `session`, those of `only` if
    given; returns the names."""
    for name, table in tables.items():
        batches = [batch for batch in table.to_batches() if batch.num_rows]
        session.register_record_batches(name, [batches or [pa.RecordBatch.from_pylist([], table.schema)]])
    views = [name for name in summaries if only is None or name in only]
    for name in views:
        session.register_view(name, _planned(session, summaries[name].sql))
    return [*tables, *views]


def one_cluster(reader: Any, at_offset: int | None = None, only: Collection[str] | None = None) -> Any:
    """A session with one warehouse's views (`kraftlake.analytics.views`' names and rows), or those of `only`."""
    from kraftlake.analytics.summaries import SUMMARIES
    from kraftlake.analytics.views import table_views

    tables = [name for name in table_views() if only is None or name in only]
    session = context()
    register(session, reader.view_rows(tables, at_offset), SUMMARIES, only)
    return session


def fleet(clusters: Mapping[str, tuple[Any, Mapping[str, str]]], at_time_ms: int | None = None,
          only: Collection[str] | None = None) -> tuple[Any, FleetViews]:
    """A session with the fleet's views (`kraftlake.analytics.fleet`' names and rows), or those of `only`. The
    image tables (one image a cluster: small) are the reader's rows; every other table (the histories,
    `batches`, …: a week of 200 clusters is millions of rows) is each cluster's Delta table scanned by DataFusion
    itself, unioned, so a question reads only the columns and files it needs, never every column into memory."""
    from kraftlake.analytics.fleet import CLUSTERS, PREFIX, clusters_table, fleet_parts, fleet_summaries, image_view
    from kraftlake.image_schema.tables import TABLES

    parts, registered = fleet_parts(clusters, at_time_ms, only)
    session = context()
    views = [name.removeprefix(PREFIX) for name in registered.views]
    images = {PREFIX + view: image_view(parts, view) for view in views if view in TABLES}
    register(session, {CLUSTERS: clusters_table(parts), **images}, {})
    for view in views:
        if view not in TABLES:
            session.register_view(PREFIX + view, _planned(session, _scanned(session, parts, view)))
    summaries = fleet_summaries(only)
    register(session, {}, summaries)
    registered.views.extend(summaries)
    return session, registered


def _scanned(session: Any, parts: Sequence[ClusterPart], view: str) -> str:
    """`fleet_<view>` of a table outside the image, as SQL: each cluster's Delta table registered (a provider
    DataFusion scans: projection and filters pushed down), its rows up to its last published image, with its name
    and labels as constants (a join with `fleet_clusters` cost a probe per row), unioned."""
    from kraftlake.analytics.fleet import empty_view
    from kraftlake.analytics.views import selection_sql, sql_literal
    from kraftlake.lake.warehouse import all_tables

    if not parts:
        register(session, {f"__{view}": empty_view(view)}, {})
        return f"SELECT * FROM __{view}"
    with ThreadPoolExecutor(max_workers=TABLE_OPENERS) as openers:  # each open reads a Delta log
        tables = list(openers.map(lambda part: _source(part, view), parts))
    columns = ", ".join(f"`{column}`" for column in all_tables()[view].names)
    branches = []
    for index, (part, table) in enumerate(zip(parts, tables, strict=True)):
        if isinstance(table, pa.Table):
            register(session, {f"__{view}_{index}": table}, {})
        else:
            session.register_table(f"__{view}_{index}", table)
        pairs = sorted(part.labels.items())
        labels = (f"map(make_array({', '.join(sql_literal(key) for key, _ in pairs)}), "
                  f"make_array({', '.join(sql_literal(value) for _, value in pairs)}))")
        branches.append(f"SELECT {sql_literal(part.name)} AS cluster, arrow_cast({labels}, '{_LABELS}') AS labels, "
                        f"{columns} FROM __{view}_{index} WHERE {selection_sql(part.published[view])}")
    return " UNION ALL ".join(branches)


def _source(part: ClusterPart, view: str) -> Any:
    """What DataFusion reads a cluster's `view` from: on local disk the Delta table itself (scanned by DataFusion);
    on an object store the rows the reader selects, read here, because a delta-rs table registered in a DataFusion
    session finds no object store there for its `s3://` URI ("No suitable object store found")."""
    from kraftlake.lake.scan import scan

    if part.warehouse.is_local:
        return part.warehouse.table(view)
    return scan(part.warehouse, view, part.published[view])


def run(session: Any, sql: str) -> pa.Table:
    """The answer to `sql`, whole (the CLI prints at most 1000 rows of it, as Spark's `show`)."""
    try:
        return _plain(_planned(session, sql).to_arrow_table())
    except QueryError:
        raise
    except Exception as error:  # an error while it runs (a cast that fails, …)
        raise QueryError(str(error).strip().splitlines()[0]) from None


def _plain(answer: pa.Table) -> pa.Table:
    """`answer` with Arrow's plain string types where DataFusion's scans of Delta tables give string views, so
    an answer has one type whichever way its rows were read."""
    schema = pa.schema([field.with_type(_plain_type(field.type)) for field in answer.schema])
    return answer if schema == answer.schema else answer.cast(schema)


def _plain_type(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_binary_view(kind):
        return pa.binary()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        item = kind.value_field.with_type(_plain_type(kind.value_type))
        return (pa.list_ if pa.types.is_list(kind) else pa.large_list)(item)
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_plain_type(field.type)) for field in kind])
    return kind


def _planned(session: Any, sql: str) -> Any:
    try:
        return session.sql(sql)
    except Exception as error:  # DataFusion raises Exception for every planning error
        raise QueryError(str(error).strip().splitlines()[0]) from None
