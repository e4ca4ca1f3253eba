"""The current tables' bucket layout: a merge rewrites only the buckets it touches, the bucket count follows
the table's size (re-bucketing keeps every row), and a warehouse of the older layout is refused by name."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from kraftlake.cli.main import main
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.sink import DeltaSink
from kraftlake.lake.warehouse import (
    BUCKET,
    ROWS_PER_BUCKET,
    Warehouse,
    WarehouseLayoutError,
    bucket_column,
    buckets_for,
    buckets_of,
)
from kraftlake.records import make_batch
from kraftlake.records import metadata_types as mt


class Cluster:
    """A tiny controller log written straight into a pipeline: topics of 10 partitions, then ISR changes."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.pipeline = MetadataPipeline(warehouse)
        self.offset = 0
        self.partitions: list[tuple[str, int]] = []
        self._append([mt.FeatureLevelRecord(name="metadata.version", feature_level=21)])
        self._append([mt.RegisterBrokerRecord(broker_id=b, incarnation_id=str(uuid.UUID(int=b + 1)), broker_epoch=b)
                      for b in range(3)])

    def _append(self, messages: list[Any]) -> None:
        self.pipeline.load(make_batch(self.offset, 1, 1_750_000_000_000 + self.offset, messages))
        self.offset += len(messages)

    def create_topics(self, count: int) -> None:
        for _ in range(count):
            topic_id = str(uuid.UUID(int=len(self.partitions) + 1000))
            messages: list[Any] = [mt.TopicRecord(name=f"t-{len(self.partitions)}", topic_id=topic_id)]
            for partition in range(10):
                messages.append(mt.PartitionRecord(partition_id=partition, topic_id=topic_id, replicas=(0, 1, 2),
                                                   isr=(0, 1, 2), leader=0, leader_epoch=0, partition_epoch=0))
                self.partitions.append((topic_id, partition))
            self._append(messages)
        self.pipeline.commit()

    def shrink_isr(self, partitions: list[tuple[str, int]]) -> None:
        self._append([mt.PartitionChangeRecord(partition_id=p, topic_id=t, isr=(0, 1), leader=-2)
                      for t, p in partitions])
        self.pipeline.commit()


def _current(warehouse: Warehouse, name: str = "partitions") -> pa.Table:
    return warehouse.table(name).to_pyarrow_table()


def _same_rows(current: pa.Table, image: pa.Table, name: str) -> bool:
    key = [(column, "ascending") for column in TABLES[name].key]
    return current.select(image.column_names).sort_by(key).equals(image.sort_by(key))


def test_bucket_numbers_name_their_count() -> None:
    assert [buckets_for(rows) for rows in (0, 1, ROWS_PER_BUCKET, ROWS_PER_BUCKET + 1, 3 * ROWS_PER_BUCKET)] == [
        1, 1, 1, 2, 4]
    keys = pa.table({"topic_id": [f"id-{n}" for n in range(200)], "partition_id": list(range(200))})
    for buckets in (1, 8, 256):
        numbers = bucket_column(keys, ("topic_id", "partition_id"), buckets).to_pylist()
        assert {buckets_of(n) for n in numbers} == {buckets}
        assert min(numbers) >= buckets and max(numbers) < 2 * buckets
    assert len(set(bucket_column(keys, ("topic_id", "partition_id"), 8).to_pylist())) == 8


def test_a_growing_table_is_rebucketed_and_a_merge_rewrites_only_touched_buckets(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    cluster = Cluster(warehouse)
    cluster.create_topics(5)
    assert set(_current(warehouse)[BUCKET.name].to_pylist()) == {1}, "a small table is one bucket"
    cluster.create_topics(2 * ROWS_PER_BUCKET // 10 + 5)  # past twice what one bucket is for
    buckets = buckets_for(len(cluster.partitions))
    assert buckets >= 4
    current = _current(warehouse)
    assert {buckets_of(n) for n in current[BUCKET.name].to_pylist()} == {buckets}
    assert len(warehouse.table("partitions").file_uris()) == buckets
    written = cluster.pipeline.sink.tables.written_through("partitions")
    assert DeltaSink(warehouse).tables.written_through("partitions") == written, "the overwrite kept the app txn"
    image = WarehouseReader(warehouse).image_at(cluster.offset - 1)
    assert _same_rows(current, image.tables["partitions"], "partitions")

    changed = cluster.partitions[:3]
    cluster.shrink_isr(changed)
    metrics = DeltaTable(warehouse.table_uri("partitions")).history(1)[0]["operationMetrics"]
    touched = set(bucket_column(pa.table({"topic_id": [t for t, _ in changed],
                                          "partition_id": [p for _, p in changed]}),
                                ("topic_id", "partition_id"), buckets).to_pylist())
    assert metrics["num_target_files_removed"] == len(touched) < buckets
    current = _current(warehouse)
    shrunk = current.filter(pc.equal(pc.list_value_length(current["isr"]), 2))
    assert sorted(zip(shrunk["topic_id"].to_pylist(), shrunk["partition_id"].to_pylist(), strict=True)) == sorted(
        changed)
    before = WarehouseReader(warehouse).image_at(cluster.offset - 1)
    assert _same_rows(current, before.tables["partitions"], "partitions")


def test_a_warehouse_of_the_older_layout_is_refused(
    tmp_path: Path, samples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    DeltaTable.create(warehouse.table_uri("features"), schema=TABLES["features"].schema)  # no bucket partition
    with pytest.raises(WarehouseLayoutError, match=r"features has no `bucket` partition.*older kraftlake; rebuild"):
        DeltaSink(warehouse)
    sample = samples_dir / "rjmfernandes_flink-on-prem/data"
    assert main(["ingest", str(sample), "--warehouse", warehouse.uri]) == 2
    assert f"{warehouse.uri}: table features has no `bucket` partition" in capsys.readouterr().err
    assert not DeltaTable.is_deltatable(warehouse.table_uri("images")), "refused before writing anything"
