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

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kraftlake.analytics.summaries import Summary

if TYPE_CHECKING:
    from kraftlake.analytics.fleet import FleetViews

_SETTINGS = {
    "datafusion.sql_parser.dialect": "databricks",
    "datafusion.sql_parser.parse_float_as_decimal": "true",
    "datafusion.execution.time_zone": "+00:00",
    "datafusion.sql_parser.default_null_ordering": "nulls_min",  # Spark's: NULL first ascending, last descending
}
TIMESTAMP = pa.timestamp("us")  # Spark's TIMESTAMP, shown in UTC (the CLI's session time zone)


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
    """A session with the fleet's views (`kraftlake.analytics.fleet`' names and rows), or those of `only`."""
    from kraftlake.analytics.fleet import fleet_summaries, fleet_tables

    tables, registered = fleet_tables(clusters, at_time_ms, only)
    summaries = fleet_summaries(only)
    session = context()
    register(session, tables, summaries)
    registered.views.extend(summaries)
    return session, registered


def run(session: Any, sql: str) -> pa.Table:
    """The answer to `sql`, whole (the CLI prints at most 1000 rows of it, as Spark's `show`)."""
    try:
        return _planned(session, sql).to_arrow_table()
    except QueryError:
        raise
    except Exception as error:  # an error while it runs (a cast that fails, …)
        raise QueryError(str(error).strip().splitlines()[0]) from None


def _planned(session: Any, sql: str) -> Any:
    try:
        return session.sql(sql)
    except Exception as error:  # DataFusion raises Exception for every planning error
        raise QueryError(str(error).strip().splitlines()[0]) from None
