"""One SQL, two engines: every query of the docs and every summary gives the same rows through DataFusion
(`kraftlake.analytics.engine`, the CLI's default) as through Spark on the same warehouses, and an ordered
answer prints the same table as Spark's `show`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from kraftlake.analytics import engine
from kraftlake.analytics.fleet import PREFIX, register_fleet_views
from kraftlake.analytics.printing import SHOWN, WIDTH, show
from kraftlake.analytics.summaries import SUMMARIES
from kraftlake.analytics.views import register_views, views_used
from kraftlake.lake.reader import WarehouseReader
from tests.analytics.test_fleet_views import LABELS, fleet  # noqa: F401  (the fixture: two clusters)

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/queries.md", "docs/fleet.md"]
# needs a table of the reader's own (an authorizer log loaded as `audit`), or reads a table by its Delta path
# (Spark's reader: the CLI sends such a query to Spark)
NOT_COMPARED = ("FROM change_log c JOIN audit a", "delta.`")


def docs_queries() -> list[str]:
    """Every `kraftlake sql "…"` of the docs and each line of their ```sql blocks (a query per line or block)."""
    queries = []
    for doc in DOCS:
        text = (REPO / doc).read_text().replace("\\\n", " ")
        queries += [m.group(1) for m in re.finditer(r'kraftlake sql [^"\n]*"([^"]+)"', text) if m.group(1) != "…"]
        for block in re.findall(r"```sql\n(.*?)```", text, re.S):
            lines = [line for line in block.splitlines() if line.strip() and not line.startswith("--")]
            queries += lines if all(line.startswith("SELECT") for line in lines) else [" ".join(lines)]
    return [" ".join(q.split()) for q in queries if not any(skip in q for skip in NOT_COMPARED)]


QUERIES = docs_queries()
ONE_CLUSTER = [q for q in QUERIES if PREFIX not in q] + [f"SELECT * FROM {name}" for name in SUMMARIES]
FLEET = [q for q in QUERIES if PREFIX in q] + [f"SELECT * FROM {PREFIX}{name}" for name in SUMMARIES]


def test_the_docs_have_their_queries() -> None:
    assert len([q for q in QUERIES if PREFIX in q]) == 10, "five fleet questions in the README and docs/fleet.md"
    assert any("size(elr)" in q for q in QUERIES) and any("under_replicated" in q for q in QUERIES)


def value(item: Any) -> Any:
    """A value of either engine's rows in one form (Spark's Row and dict, Arrow's Python values)."""
    if hasattr(item, "asDict"):
        item = item.asDict(recursive=True)
    if isinstance(item, dict):
        return tuple(sorted((k, value(v)) for k, v in item.items()))
    if isinstance(item, list | tuple):
        return tuple(value(v) for v in item)
    if isinstance(item, float):
        return Decimal(repr(item))
    return item


def spark_rows(frame: Any) -> list[tuple[Any, ...]]:
    return [tuple(value(row[i]) for i in range(len(row))) for row in frame.collect()]


def arrow_rows(table: Any) -> list[tuple[Any, ...]]:
    return [tuple(value(v) for v in row.values()) for row in table.to_pylist(maps_as_pydicts="lossy")]


def compare(spark_frame: Any, table: Any, query: str) -> None:
    expected, got = spark_rows(spark_frame), arrow_rows(table)
    if "ORDER BY" in query and "LIMIT" not in query:
        assert got == expected, query
        assert show(table) == spark_frame._jdf.showString(SHOWN, WIDTH, False), query
    else:
        assert sorted(got, key=repr) == sorted(expected, key=repr), query
    if query.startswith("SELECT * FROM"):
        assert table.schema.names == spark_frame.columns, query


@pytest.mark.parametrize("cluster", ["scenario", "kafka"])
def test_one_cluster_queries_and_summaries_answer_alike(spark: Any, fleet: dict[str, WarehouseReader],  # noqa: F811
                                                        cluster: str) -> None:
    session = spark.newSession()
    session.conf.set("spark.sql.session.timeZone", "UTC")
    tables = [name for name in register_views(session, fleet[cluster]) if name not in SUMMARIES]
    context = engine.one_cluster(fleet[cluster])
    with read_once(session, tables):
        for query in ONE_CLUSTER:
            compare(session.sql(query), engine.run(context, query), query)
        assert engine.run(engine.one_cluster(fleet[cluster], only=views_used("SELECT * FROM events")),
                          "SELECT count(*) AS n FROM events").column("n")[0].as_py() == session.table("events").count()


@contextmanager
def read_once(session: Any, views: list[str]) -> Iterator[None]:
    """Spark's side reads each table's Delta files once, not again for every query and every `show`: the rows
    compared are the same, the minutes of re-reading are not spent."""
    for name in views:
        session.catalog.cacheTable(name)
    try:
        yield
    finally:
        for name in views:
            session.catalog.uncacheTable(name)


def test_fleet_queries_and_summaries_answer_alike(spark: Any, fleet: dict[str, WarehouseReader]) -> None:  # noqa: F811
    clusters = {name: (reader, LABELS.get(name, {})) for name, reader in fleet.items()}
    session = spark.newSession()
    session.conf.set("spark.sql.session.timeZone", "UTC")
    register_fleet_views(session, clusters)
    context, registered = engine.fleet(clusters)
    assert set(registered.skipped) == {"unwritten"}
    for query in FLEET:
        compare(session.sql(query), engine.run(context, query), query)


def test_a_bad_query_is_one_line(fleet: dict[str, WarehouseReader]) -> None:  # noqa: F811
    with pytest.raises(engine.QueryError, match="nope") as raised:
        engine.run(engine.one_cluster(fleet["scenario"], only={"brokers"}), "SELECT nope FROM brokers")
    assert "\n" not in str(raised.value)
