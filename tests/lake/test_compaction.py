"""Compaction of the append-only tables: rows stay in offset order round after round (so row groups keep
narrow offset statistics), no row is lost or doubled, the commit changes no data, and a compaction that
lost a race to another leaves the table as it was; the sink's sweep merges the small files of a table that
went quiet."""

from __future__ import annotations

import json
import random
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import write_deltalake

from kraftlake.lake.maintenance import MaintenancePolicy, compact_if_due, small_files
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import BATCHES, BATCHES_SCHEMA, ROW_GROUP_ROWS, Warehouse, history_name, history_schema
from kraftlake.records import RecordBatch, make_batch, wire
from kraftlake.records import metadata_types as mt

POLICY = MaintenancePolicy(compact_above_files=4)


def _batches(first: int, count: int) -> pa.Table:
    offsets = list(range(first, first + count))
    return pa.Table.from_pylist(
        [{"base_offset": o, "last_offset": o, "epoch": 1, "append_time_ms": 1_000 * o, "record_count": 1,
          "control": False, "size_bytes": 80} for o in offsets],
        schema=BATCHES_SCHEMA,
    )


def _append_rounds(warehouse: Warehouse, rounds: int, rng: random.Random) -> int:
    """Append small files of random sizes in offset order, compacting when due; the next offset."""
    offset = 0
    for _ in range(rounds):
        for _ in range(POLICY.compact_above_files + 1):
            count = rng.choice([1, 2, 500, 4_000])
            write_deltalake(warehouse.table_uri(BATCHES), _batches(offset, count), mode="append")
            offset += count
        compact_if_due(warehouse, BATCHES, warehouse.table(BATCHES), POLICY)
    return offset


def test_compacted_files_stay_in_offset_order_round_after_round(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    warehouse.create()
    end = _append_rounds(warehouse, rounds=6, rng=random.Random(5))
    table = warehouse.table(BATCHES)
    assert table.to_pyarrow_table()["base_offset"].to_pylist() == list(range(end))
    [compacted] = [uri for uri in table.file_uris() if pq.ParquetFile(uri).metadata.num_rows > ROW_GROUP_ROWS]
    metadata = pq.ParquetFile(compacted).metadata
    ranges = [(group.column(0).statistics.min, group.column(0).statistics.max)
              for group in (metadata.row_group(i) for i in range(metadata.num_row_groups))]
    assert metadata.num_row_groups > 1
    assert ranges == sorted(ranges) and all(high < low for (_, high), (low, _) in pairwise(ranges))


def test_compaction_keeps_two_versions_at_one_offset_in_order(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    warehouse.create()
    name = history_name("features")
    for offset in range(POLICY.compact_above_files + 1):
        rows = [{"name": "metadata.version", "level": 2 * offset + step, "from_offset": offset, "deleted": False}
                for step in (0, 1)]
        write_deltalake(warehouse.table_uri(name), pa.Table.from_pylist(rows, schema=history_schema("features")),
                        mode="append")
    assert compact_if_due(warehouse, name, warehouse.table(name), POLICY, above=0)
    table = warehouse.table(name)
    assert len(table.file_uris()) == 1
    assert table.to_pyarrow_table()["level"].to_pylist() == list(range(2 * POLICY.compact_above_files + 2))


def test_the_compaction_commit_changes_no_data_and_carries_statistics(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    warehouse.create()
    for first in range(0, 50, 10):
        write_deltalake(warehouse.table_uri(BATCHES), _batches(first, 10), mode="append")
    assert compact_if_due(warehouse, BATCHES, warehouse.table(BATCHES), POLICY, above=0)
    table = warehouse.table(BATCHES)
    commit = Path(warehouse.table_uri(BATCHES)) / "_delta_log" / f"{table.version():020d}.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    changes = [action[kind] for action in actions for kind in ("add", "remove") if kind in action]
    assert len(changes) == 6 and not any(change["dataChange"] for change in changes)
    stats = pa.table(table.get_add_actions(flatten=True)).to_pylist()[0]
    assert (stats["num_records"], stats["min.base_offset"], stats["max.base_offset"]) == (50, 0, 49)
    assert (stats["min.append_time_ms"], stats["max.append_time_ms"]) == (0, 49_000)
    assert table.to_pyarrow_table(filters=[("base_offset", "=", 7)])["last_offset"].to_pylist() == [7]


def test_a_compaction_that_lost_the_race_leaves_the_table_as_it_was(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    warehouse.create()
    for first in range(0, 50, 10):
        write_deltalake(warehouse.table_uri(BATCHES), _batches(first, 10), mode="append")
    winner, loser = warehouse.table(BATCHES), warehouse.table(BATCHES)
    files_before = set(Path(warehouse.table_uri(BATCHES)).glob("*.parquet"))
    assert compact_if_due(warehouse, BATCHES, winner, POLICY, above=0)
    assert not compact_if_due(warehouse, BATCHES, loser, POLICY, above=0)
    table = warehouse.table(BATCHES)
    assert sorted(table.to_pyarrow_table()["base_offset"].to_pylist()) == list(range(50))
    assert len(small_files(table, POLICY)) == 1
    files_after = set(Path(warehouse.table_uri(BATCHES)).glob("*.parquet"))
    assert len(files_after - files_before) == 1  # the winner's file; the loser deleted its own


def _isr_change(offset: int, topic: str, isr: tuple[int, ...]) -> RecordBatch:
    return make_batch(offset, 1, 1_000 + offset, [mt.PartitionChangeRecord(partition_id=0, topic_id=topic, isr=isr)])


def test_a_table_that_went_quiet_is_compacted_by_the_sweep(tmp_path: Path) -> None:
    """ISR churn leaves `partitions_history` a few small files; once no image wrote it for a whole sweep
    period, they become one, and time travel still answers the same."""
    warehouse = Warehouse(tmp_path / "warehouse")
    pipeline = MetadataPipeline(warehouse)
    topic = wire.uuid_to_text((3).to_bytes(16, "big"))
    log = [make_batch(0, 1, 1_000, [
        mt.FeatureLevelRecord(name="metadata.version", feature_level=21),
        mt.TopicRecord(name="t", topic_id=topic),
        mt.PartitionRecord(partition_id=0, topic_id=topic, replicas=(1, 2), isr=(1, 2), leader=1),
    ])]
    log += [_isr_change(log[0].last_offset + 1 + n, topic, (1,) if n % 2 else (1, 2)) for n in range(5)]
    for batch in log:
        pipeline.load(batch)
        pipeline.commit()
    history = history_name("partitions")
    assert len(warehouse.table(history).file_uris()) == 6
    during = WarehouseReader(warehouse).image_at(log[-1].last_offset).canonical_json(None)
    # written in the first sweep's period: merged by the second
    for n in range(2 * MaintenancePolicy().sweep_every_images):
        pipeline.load(make_batch(log[-1].last_offset + 1 + n, 1, 9_000 + n, [mt.NoOpRecord()]))
        pipeline.commit()
    assert len(warehouse.table(history).file_uris()) == 1
    assert WarehouseReader(warehouse).image_at(log[-1].last_offset).canonical_json(None) == during
