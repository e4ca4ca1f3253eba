"""The fleet's views against each cluster's own: for every table and summary, a cluster's rows in `fleet_<view>`
are exactly the rows of `<view>` in a session of that cluster alone (Delta's Spark reader, the one-cluster SQL),
so the fleet's one plan per question (every window per `cluster`) answers as fifty one-cluster plans would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kraftlake.analytics.fleet import CLUSTERS, PREFIX, register_fleet_views
from kraftlake.analytics.summaries import SUMMARIES
from kraftlake.analytics.views import register_views, table_views, views_used
from kraftlake.lake.ingest import ingest
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.analytics.test_summaries import SCENARIO
from tests.replay.builders import data

SAMPLE = "Jeong-Rae_KafkaDemo/kraft-combined-logs/__cluster_metadata-0"
LABELS = {"scenario": {"env": "prod", "region": "eu-west-1"}, "kafka": {}}


@pytest.fixture(scope="module")
def fleet(spark: Any, samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, WarehouseReader]:
    """Two clusters of different shapes: the summaries' hand-built scenario and a real Kafka log."""
    root = tmp_path_factory.mktemp("fleet")
    scenario = Warehouse(root / "scenario")
    pipeline = MetadataPipeline(scenario)
    for offset, record in enumerate(SCENARIO):
        pipeline.load(data(offset, 1, 100, [record], append_time_ms=1_000_000 + offset * 1000))
        if offset == 12:
            pipeline.commit()
    pipeline.commit()
    kafka = Warehouse(root / "kafka")
    ingest(samples_dir / SAMPLE, kafka, image_every=2000)
    return {"scenario": WarehouseReader(scenario), "kafka": WarehouseReader(kafka),
            "unwritten": WarehouseReader(Warehouse(root / "unwritten"))}


def rows(frame: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted((tuple(row[column] for column in columns) for row in frame.collect()), key=repr)


# Exact text of every value: timestamps to the microsecond, nulls written out (not left out of the object).
AS_JSON = "map('timestampFormat', \"yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX\", 'ignoreNullFields', 'false')"


def tagged_rows(session: Any, relations: dict[str, str], columns: dict[str, list[str]],
                extra: str = "''") -> dict[str, list[tuple[str, str]]]:
    """Every relation's rows (view -> what follows `FROM`) in one Spark job instead of a job per view (each costs
    seconds on a loaded 2-core machine): per view, sorted, each row's `columns` as JSON text and `extra`'s value."""
    sql = " UNION ALL ".join(
        f"SELECT '{view}' AS view, to_json(struct({', '.join(f'`{c}`' for c in columns[view])}), {AS_JSON}) AS row, "
        f"{extra} AS extra FROM {relation}" for view, relation in relations.items())
    found: dict[str, list[tuple[str, str]]] = {view: [] for view in relations}
    for row in session.sql(sql).collect():
        found[row["view"]].append((row["row"], row["extra"]))
    return {view: sorted(texts) for view, texts in found.items()}


def test_every_fleet_view_holds_each_cluster_s_own_rows(spark: Any, fleet: dict[str, WarehouseReader]) -> None:
    session = spark.newSession()
    registered = register_fleet_views(session, {name: (reader, LABELS.get(name, {})) for name, reader in fleet.items()})
    assert set(registered.skipped) == {"unwritten"}
    views = [*table_views(), *SUMMARIES]
    assert registered.views == [PREFIX + view for view in views]
    for name in ("scenario", "kafka"):
        alone = spark.newSession()
        register_views(alone, fleet[name])
        columns = {view: alone.table(view).columns for view in views}
        own = tagged_rows(alone, {view: view for view in views}, columns)
        fleet_rows = tagged_rows(session, {view: f"{PREFIX}{view} WHERE cluster = '{name}'" for view in views},
                                 columns, extra="to_json(labels)")
        labels = json.dumps(LABELS[name], separators=(",", ":"))
        for view in views:
            assert [row for row, _ in fleet_rows[view]] == [row for row, _ in own[view]], f"{view} of cluster {name}"
            assert all(extra == labels for _, extra in fleet_rows[view]), (view, fleet_rows[view][:1])
    assert {row["cluster"]: row["labels"] for row in session.table(CLUSTERS).collect()} == LABELS
    # the summaries are not all empty (the check above would hold trivially)
    assert session.table(PREFIX + "offline_partitions").where("cluster = 'scenario' AND offline = 1").count() == 1
    assert session.table(PREFIX + "events").where("cluster = 'kafka'").count() > 0


def test_a_moment_is_one_time_across_clusters(spark: Any, fleet: dict[str, WarehouseReader]) -> None:
    at_ms = 1_000_000 + 14 * 1000  # the scenario's offset 14; before the Kafka log began: left out, named
    session = spark.newSession()
    registered = register_fleet_views(session, {"scenario": (fleet["scenario"], {}), "kafka": (fleet["kafka"], {})},
                                       at_time_ms=at_ms, only={"partitions"})
    assert list(registered.skipped) == ["kafka"]
    alone = spark.newSession()
    register_views(alone, fleet["scenario"], fleet["scenario"].offset_at(at_ms), only={"partitions"})
    columns = alone.table("partitions").columns
    assert rows(session.table(PREFIX + "partitions"), columns) == rows(alone.table("partitions"), columns)
    assert [row["isr"] for row in alone.table("partitions").orderBy("partition_id").collect()][:2] == [[0, 1], [1, 0]]


def test_only_the_views_a_query_names_are_read() -> None:
    assert views_used("SELECT * FROM fleet_offline_partitions WHERE cluster = 'fleet_brokers'", PREFIX) == {
        "offline_partitions", "partition_states", "partitions_history", "batches"}
    assert views_used("SELECT rack FROM Brokers JOIN features") == {"brokers", "features"}
    assert views_used("SELECT 1") == frozenset()
