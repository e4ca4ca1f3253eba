"""Delta Lake's own Spark connector (delta-spark) and kraftlake's delta-rs tables, both ways.

delta-spark reads exactly the rows delta-rs reads from every table kraftlake writes, at the latest version
and at older ones, after kraftlake's compactions, Delta checkpoints and log pruning and after `kraftlake
maintain` (compaction, checkpoint, VACUUM), on a local disk and on S3 (SeaweedFS): after `maintain`, every table
on the local disk and one of each kind on S3. The other way round: a user's own OPTIMIZE and VACUUM RETAIN 0 HOURS
through delta-spark leave the protocol as delta-rs reads it and every offset answering as replay does, and the
sink goes on writing images after delta-spark's commits.
"""

from __future__ import annotations

import json
import random
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from pyspark.sql import SparkSession

from kraftlake.lake.maintenance import MaintenancePolicy, maintain
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.sink import DeltaSink
from kraftlake.lake.warehouse import (
    BATCHES,
    IMAGE_CHECKPOINTS,
    IMAGES,
    Warehouse,
    WarehouseLayoutError,
    all_tables,
    history_name,
    image_checkpoint_table,
)
from kraftlake.records.files import LogReader
from kraftlake.replay.log_replay import history_sources
from kraftlake.settings.spark import spark_uri, use_store
from tests.fixtures.s3 import S3Store
from tests.harness.answers import from_warehouse, replayed
from tests.lake.test_ingest import _history_offsets

SAMPLE = "Niloufar1171_LDI-POC"
# Small numbers, so a short log gets image checkpoints, compactions, Delta checkpoints and a pruned log.
POLICY = MaintenancePolicy(checkpoint_min_rows=10, compact_above_files=3)
IMAGE_EVERY = {"local": 20, "s3": 100}  # local: 243 images, `images` and `batches` pruned past version 200
# One table of each kind the sink writes (current, history, image checkpoint, and the three bookkeeping ones):
# their older versions are compared too (every table is compared at its latest version).
EVERY_KIND = (
    "partitions", history_name("partitions"), image_checkpoint_table("partitions"), IMAGES, BATCHES, IMAGE_CHECKPOINTS
)


def ingest_through(directory: Path, warehouse: Warehouse, last_offset: int | None, image_every: int) -> None:
    """What `kraftlake.lake.ingest.ingest` does, stopping after `last_offset` (None: the whole log)."""
    pipeline = MetadataPipeline(warehouse, policy=POLICY)
    reader, published = LogReader(), -1
    for source in history_sources(directory):
        for batch in reader.batches(source.path):
            if last_offset is not None and batch.base_offset > last_offset:
                break
            pipeline.load(batch, str(source.path))
            if pipeline.loaded_offset - published >= image_every:
                pipeline.commit()
                published = pipeline.loaded_offset
    pipeline.commit()


def offsets_to_check(warehouse: Warehouse, seed: int) -> list[int]:
    """The bootstrap transaction, both sides of a sample of change points, and the last offset: each is a
    replay from offset 0, so a few dozen rather than every image's offset."""
    changes = sorted({row["from_offset"] for row in _history_offsets(warehouse)})
    picked = set(random.Random(seed).sample(changes, min(12, len(changes))))
    picked |= {offset - 1 for offset in picked if offset > 0} | set(range(6)) | {changes[-1]}
    return sorted(picked)


def rows(table: pa.Table) -> list[str]:
    """A table's rows as sorted JSON texts: equal lists are equal multisets of rows."""
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in table.to_pylist())


def spark_rows(spark: SparkSession, warehouse: Warehouse, name: str, version: int | None = None) -> list[str]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return rows(reader.load(spark_uri(warehouse.table_uri(name))).toArrow())


def oldest_readable(warehouse: Warehouse, name: str) -> int:
    """The oldest version whose state the pruned `_delta_log` still holds: version 0's commit, else its
    oldest Delta checkpoint."""
    listing = warehouse.filesystem(name).get_file_info(pafs.FileSelector("_delta_log"))
    names = [info.base_name for info in listing]
    if "00000000000000000000.json" in names:
        return 0
    return min(int(entry[:20]) for entry in names if ".checkpoint." in entry)


def assert_spark_reads_what_delta_rs_reads(spark: SparkSession, warehouse: Warehouse, tables: Iterable[str],
                                           older: bool) -> int:
    """`tables` at their latest version (and, with `older`, their oldest readable and a middle one); returns
    how many (table, version) pairs were compared."""
    compared = 0
    for name in tables:
        latest = warehouse.table(name).version()
        versions = {latest}
        if older:
            first = oldest_readable(warehouse, name)
            versions |= {first, (first + latest) // 2}
        for version in sorted(versions):
            expected = rows(warehouse.table(name, version).to_pyarrow_table())
            assert spark_rows(spark, warehouse, name, version) == expected, f"{name} at version {version}"
            compared += 1
    return compared


@pytest.fixture(scope="module")
def local_warehouse(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    warehouse = Warehouse(tmp_path_factory.mktemp("delta-spark") / "warehouse")
    ingest_through(samples_dir / SAMPLE, warehouse, None, IMAGE_EVERY["local"])
    return warehouse


def copy_of(warehouse: Warehouse, root: Path) -> Warehouse:
    shutil.copytree(warehouse.uri, root / "warehouse")
    return Warehouse(root / "warehouse")


def test_the_warehouse_exercises_pruning_and_checkpoints(local_warehouse: Warehouse) -> None:
    """The premise of the comparisons below: `images` was compacted, checkpointed and its log pruned."""
    assert oldest_readable(local_warehouse, "images") > 0
    assert len(local_warehouse.table("images").file_uris()) < 20
    assert local_warehouse.table("checkpoints").to_pyarrow_table().num_rows >= 2  # image checkpoints


@pytest.mark.parametrize("where", ["local", "s3"])
def test_delta_spark_reads_every_table_as_delta_rs_does(
    spark: SparkSession, where: str, local_warehouse: Warehouse, samples_dir: Path, request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    if where == "local":
        warehouse = copy_of(local_warehouse, tmp_path)
    else:
        s3_store: S3Store = request.getfixturevalue("s3_store")
        warehouse = Warehouse(s3_store.uri(f"delta-spark-{uuid.uuid4().hex[:8]}"), s3_store.storage_options())
        use_store(spark, warehouse.storage_options)
        ingest_through(samples_dir / SAMPLE, warehouse, None, IMAGE_EVERY[where])
    assert assert_spark_reads_what_delta_rs_reads(spark, warehouse, EVERY_KIND, older=True) > 2 * len(EVERY_KIND)
    maintain(warehouse, retention_hours=0)  # compaction, a Delta checkpoint, log cleanup, VACUUM of everything old
    # every table on the local disk; on S3, whose tables are the same kinds written through another store, one
    # table of each kind (a Spark read is about a second on 2 cores)
    after = all_tables() if where == "local" else EVERY_KIND
    assert assert_spark_reads_what_delta_rs_reads(spark, warehouse, after, older=False) == len(after)


def test_sql_versions_timestamps_and_history(spark: SparkSession, local_warehouse: Warehouse) -> None:
    """`VERSION AS OF`, `TIMESTAMP AS OF` and `DESCRIBE HISTORY` on a kraftlake table answer as delta-rs."""
    name = history_name("partitions")
    table = local_warehouse.table(name)
    path = f"delta.`{local_warehouse.table_uri(name)}`"
    history = {row["version"]: row for row in spark.sql(f"DESCRIBE HISTORY {path}").collect()}
    assert sorted(history) == list(range(table.version() + 1))
    assert history[0]["operation"] == "CREATE TABLE"
    for version, entry in history.items():
        expected = local_warehouse.table(name, version).to_pyarrow_table().num_rows
        count = scalar(spark, f"SELECT count(*) FROM {path} VERSION AS OF {version}")
        at_time = scalar(spark, f"SELECT count(*) FROM {path} TIMESTAMP AS OF '{entry['timestamp']}'")
        assert count == at_time == expected, version


def scalar(spark: Any, query: str) -> int:
    return int(spark.sql(query).first()[0])


def spark_optimize_and_vacuum(spark: SparkSession, warehouse: Warehouse, tables: Iterable[str]) -> None:
    """What a user may run on `tables`: OPTIMIZE, then VACUUM with no retention at all (the worst case)."""
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        for name in tables:
            path = f"delta.`{spark_uri(warehouse.table_uri(name))}`"
            spark.sql(f"OPTIMIZE {path}")
            spark.sql(f"VACUUM {path} RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")


def protocol(warehouse: Warehouse, name: str) -> tuple[Any, ...]:
    found = warehouse.table(name).protocol()
    return found.min_reader_version, found.min_writer_version, found.reader_features, found.writer_features


@pytest.mark.long  # `make test-long`: about six minutes of Spark OPTIMIZE and VACUUM on 2 cores
def test_user_optimize_and_vacuum_keep_time_travel_and_the_sink_writes_on(
    spark: SparkSession, samples_dir: Path, tmp_path: Path
) -> None:
    """A user's delta-spark OPTIMIZE, then VACUUM with no retention, on one table of each kind half-way
    through a log: no table gains a feature delta-rs lacks, every offset answers as replay does, the commits
    keep the sink's app transactions (the rest of the log then neither repeats nor loses a row), kraftlake's
    own maintenance still runs, and delta-spark reads what delta-rs reads. One pass for all of it: each
    table's OPTIMIZE and VACUUM cost about a minute of Spark jobs on 2 cores."""
    directory, warehouse = samples_dir / SAMPLE, Warehouse(tmp_path / "warehouse")
    ingest_through(directory, warehouse, 2500, IMAGE_EVERY["local"])
    before = {name: protocol(warehouse, name) for name in all_tables()}
    txn = "kraftlake:" + history_name("partitions")
    written = warehouse.table(history_name("partitions")).transaction_version(txn)
    spark_optimize_and_vacuum(spark, warehouse, [n for n in EVERY_KIND if warehouse.table(n).file_uris()])
    assert {name: protocol(warehouse, name) for name in all_tables()} == before  # no feature delta-rs lacks
    assert warehouse.table(history_name("partitions")).transaction_version(txn) == written
    for offset in offsets_to_check(warehouse, seed=19):
        from_lake = from_warehouse(warehouse, offset, provenance=False)
        assert from_lake == replayed([directory], offset, provenance=False), offset
    ingest_through(directory, warehouse, None, IMAGE_EVERY["local"])  # a rerun: what the tables hold is skipped
    history = warehouse.table(history_name("partitions")).to_pyarrow_table()
    keys = history.select(["topic_id", "partition_id", "from_offset"]).to_pylist()
    assert len(keys) == len({json.dumps(key, sort_keys=True) for key in keys})  # no version written twice
    for offset in offsets_to_check(warehouse, seed=5):
        from_lake = from_warehouse(warehouse, offset, provenance=False)
        assert from_lake == replayed([directory], offset, provenance=False), offset
    maintain(warehouse, retention_hours=0)  # kraftlake's own maintenance still runs on them
    assert assert_spark_reads_what_delta_rs_reads(spark, warehouse, EVERY_KIND, older=False) == len(EVERY_KIND)


def test_a_table_upgraded_past_what_delta_rs_writes_is_refused(
    spark: SparkSession, local_warehouse: Warehouse, tmp_path: Path
) -> None:
    """Deletion vectors enabled by delta-spark make a table delta-rs can neither read nor write: the sink
    refuses the warehouse up front, naming the table and the repair, instead of failing mid-image."""
    warehouse = copy_of(local_warehouse, tmp_path)
    table = spark_uri(warehouse.table_uri(IMAGES))
    spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)")
    with pytest.raises(WarehouseLayoutError) as refused:
        DeltaSink(warehouse)
    message = str(refused.value)
    assert "\n" not in message and warehouse.table_uri(IMAGES) in message
    assert "deletionVectors" in message and "rebuild the warehouse" in message
