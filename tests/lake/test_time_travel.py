"""The time-travel API: each sub-image at an offset as Arrow and as Spark DataFrames, at a time, and
what changed between two offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.lake.errors import TimeTravelError
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.replay.log_replay import replay_paths

SAMPLE = "rjmfernandes_flink-on-prem/data"


@pytest.fixture(scope="module")
def warehouse(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    warehouse = Warehouse(tmp_path_factory.mktemp("tt") / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse, image_every=5000)
    return warehouse


def test_spark_dataframes_hold_the_image(spark, warehouse: Warehouse, samples_dir: Path) -> None:
    offset = 9000  # between published images (every 5000 offsets)
    frames = WarehouseReader(warehouse).image_at(offset).dataframes(spark)
    expected = replay_paths([samples_dir / SAMPLE], offset).image
    assert frames["partitions"].count() == expected.topics.partition_count()
    frames["topics"].createOrReplaceTempView("topics_at")
    names = {row["name"] for row in spark.sql("SELECT name FROM topics_at").collect()}
    assert names == set(expected.topics.by_name)
    leaders = frames["partitions"].where("topic_name = '__consumer_offsets' AND partition_id = 0").collect()
    registration = expected.topics.by_name["__consumer_offsets"].partitions[0]
    assert [(r["leader"], list(r["isr"])) for r in leaders] == [(registration.leader, list(registration.isr))]


def test_image_at_time_is_the_image_after_the_last_batch_by_then(warehouse: Warehouse, samples_dir: Path) -> None:
    reader = WarehouseReader(warehouse)
    at_offset = reader.image_at(7751)
    at_time = reader.image_at(reader.offset_at(at_offset.provenance.log_time_ms))
    assert at_time.provenance.log_time_ms == at_offset.provenance.log_time_ms
    assert at_time.canonical_json() == reader.image_at(at_time.provenance.offset).canonical_json()
    with pytest.raises(TimeTravelError, match="no metadata was committed"):
        reader.offset_at(0)


def test_changes_between_two_offsets_are_the_history_rows_in_between(warehouse: Warehouse) -> None:
    changes = WarehouseReader(warehouse).changes(100, 2000)
    offsets = [o for table in changes.values() for o in table.column("from_offset").to_pylist()]
    assert offsets and all(100 < o <= 2000 for o in offsets)
    before, after = WarehouseReader(warehouse).image_at(100), WarehouseReader(warehouse).image_at(2000)
    changed_topics = set(changes["topics"].column("topic_id").to_pylist())
    old = set(before.tables["topics"].column("topic_id").to_pylist())
    new = set(after.tables["topics"].column("topic_id").to_pylist())
    assert old ^ new <= changed_topics
