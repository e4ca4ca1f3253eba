"""The Delta log of a local table stays bounded by versions, not by age: delta-rs lists a local `_delta_log`
whole on every commit and open, so a log kept by age made every commit slower while a backlog was caught up.
Pruning must leave the latest version readable, a handle a little behind able to catch up, and every offset
answering as before."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import DeltaTable, write_deltalake

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.lake.maintenance import KEEP_LOG_VERSIONS, prune_log
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import TABLE_PROPERTIES, Warehouse, all_tables
from kraftlake.records import RecordBatch, make_batch, wire
from kraftlake.records import metadata_types as mt
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.loader import BatchLoader
from tests.fixtures.s3 import S3Store

INTERVAL = int(TABLE_PROPERTIES["delta.checkpointInterval"])


def _log_versions(table_path: Path) -> list[int]:
    names = [entry.name[:20] for entry in (table_path / "_delta_log").iterdir()]
    return sorted({int(name) for name in names if name.isdigit()})


def test_prune_keeps_the_latest_version_and_a_margin(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path)
    path = tmp_path / "table"
    write_deltalake(path, pa.table({"n": [0]}), configuration=dict(TABLE_PROPERTIES))
    behind = None
    commits = KEEP_LOG_VERSIONS + 3 * INTERVAL
    for n in range(1, commits + 1):
        write_deltalake(path, pa.table({"n": [n]}), mode="append")
        if n == commits - KEEP_LOG_VERSIONS + 1:
            behind = DeltaTable(path)  # a reader that opened the table just inside the margin
    assert prune_log(warehouse, "table") > 0
    versions = _log_versions(path)
    assert versions[0] > 0 and versions[-1] == commits
    assert versions[-1] - versions[0] <= KEEP_LOG_VERSIONS + INTERVAL
    assert prune_log(warehouse, "table") == 0  # nothing more to do until the table moves on
    assert sorted(DeltaTable(path).to_pyarrow_table()["n"].to_pylist()) == list(range(commits + 1))
    assert behind is not None
    behind.update_incremental()
    assert behind.version() == commits


def test_prune_works_on_an_object_store(s3_store: S3Store) -> None:
    warehouse = Warehouse(s3_store.uri(f"prune-{uuid.uuid4().hex[:8]}"), s3_store.storage_options())
    uri, options = warehouse.table_uri("table"), s3_store.storage_options()
    write_deltalake(uri, pa.table({"n": [0]}), configuration=dict(TABLE_PROPERTIES), storage_options=options)
    commits = KEEP_LOG_VERSIONS + 2 * INTERVAL
    for n in range(1, commits + 1):
        write_deltalake(uri, pa.table({"n": [n]}), mode="append", storage_options=options)
    assert prune_log(warehouse, "table") > 0
    listing = warehouse.filesystem("table").get_file_info(pafs.FileSelector("_delta_log"))
    versions = sorted({int(info.base_name[:20]) for info in listing if info.base_name[:20].isdigit()})
    assert versions[0] > 0 and versions[-1] == commits
    assert sorted(warehouse.table("table").to_pyarrow_table()["n"].to_pylist()) == list(range(commits + 1))


def _noop_log(count: int) -> list[RecordBatch]:
    topic = wire.uuid_to_text((3).to_bytes(16, "big"))
    setup = make_batch(0, 1, 1_000, [
        mt.FeatureLevelRecord(name="metadata.version", feature_level=21),
        mt.TopicRecord(name="t", topic_id=topic),
        mt.PartitionRecord(partition_id=0, topic_id=topic, replicas=(1,), isr=(1,), leader=1),
    ])
    batches = [setup]
    for n in range(count):
        batches.append(make_batch(setup.last_offset + 1 + n, 1, 2_000 + n, [mt.NoOpRecord()]))
    return batches


def test_the_sink_prunes_its_logs_and_every_offset_still_answers(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    pipeline = MetadataPipeline(warehouse)
    log = _noop_log(2 * KEEP_LOG_VERSIONS + 20)
    for batch in log:  # an image per batch: `images` and `batches` commit every time
        pipeline.load(batch)
        pipeline.commit()
    images = Path(warehouse.table_uri("images"))
    versions = _log_versions(images)
    assert versions[0] > 0, "the sink never pruned the images log"
    assert len(versions) <= KEEP_LOG_VERSIONS + 3 * INTERVAL  # margin, checkpoint interval, pruning's pace
    for name in all_tables():
        DeltaTable(warehouse.table_uri(name))  # every table still opens at its latest version
    for batch in (log[0], log[1], log[len(log) // 2], log[-1]):
        offset = batch.last_offset
        read_back = WarehouseReader(warehouse).image_at(offset).canonical_json(None)
        assert read_back == canonical_json(_replayed(log, offset))


def _replayed(log: list[RecordBatch], offset: int) -> MetadataImage:
    loader = BatchLoader(None)
    for batch in log:
        if batch.base_offset <= offset:
            loader.load_batch(batch, "test")
    loader.flush(True)
    return loader.image
