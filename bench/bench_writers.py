"""Which writer commits an image: delta-rs (the sink, in the driver's Python) or delta-spark (Delta's own Spark
writer, as a `foreachBatch` function would call it), for the same images into the same tables.

A synthetic log: a mid-size first image (3 brokers, 200 topics of 10 partitions: 2,000 partitions, about 4,400
rows over `partitions`, `topics`, their histories, `brokers`, `features`, `batches`, `images`), then small
deltas (an ISR change on 10 partitions each: 10 history rows, a 10-row merge into `partitions`, a batch row
and an images row). Both writers make the same commits the sink prepares (`DeltaSink.prepare`): appends for
the history tables, `batches` and `images`, a merge by key for a current table, each with the sink's app
transaction (delta-spark: `txnAppId`/`txnVersion`, as options of an append and as session settings of a
merge). Only the writing is timed, not the replay. Each writer gets a fresh warehouse per run; medians of
the runs ($KRAFTLAKE_BENCH_WRITER_RUNS, default 3) for the first image and of every small delta of every run
($KRAFTLAKE_BENCH_WRITER_DELTAS per run, default 4). delta-spark runs in a local[2] session built by
`kraftlake.settings.spark`, warmed up by one run first (a JVM's first merge compiles a lot). The machine is shared:
the load average is noted.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench import row
from bench.bench_lake import cluster_records
from kraftlake.image_schema.changes import RowVersion
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.sink import DeltaSink
from kraftlake.lake.warehouse import Warehouse, partition_columns
from kraftlake.lake.writes import DELETED, LoadedBatch, PublishedImage, TableWrite
from kraftlake.records import RecordBatch, make_batch, wire
from kraftlake.records import metadata_types as mt
from kraftlake.settings.spark import session_builder

NOTES = """Decision: the sink keeps delta-rs. delta-spark was not "at least as fast": each of its commits is a
Spark job (Arrow -> DataFrame, Delta's log state, the write or the merge's joins) where delta-rs commits
from the driver's Python, so even a 10-row delta costs seconds instead of a fraction of one. Beside speed,
delta-spark has no per-commit custom metadata (only one `userMetadata` string, so `kraftlake.offset`,
`kraftlake.epoch`, `kraftlake.logTimeMs` would have to be packed into it), a merge takes its app
transaction from session settings rather than from the call, and `kraftlake ingest`/`image`/`maintain` would
need a JVM. Delta's Spark connector stays the reader of every Spark session (analytics, `kraftlake sql`).
The machine was heavily shared (load 38-47 on 2 cores); an earlier single run at load 21-26 gave the same
picture: delta-rs 175 ms (first image) and 0.6 s (small delta), delta-spark 79 s and 32 s."""
TOPICS = 200
PARTITIONS = 10
BROKERS = 3
CHANGED = 10  # partitions whose ISR one small delta changes
Writer = Callable[[DeltaSink, PublishedImage | None, Sequence[RowVersion], Sequence[LoadedBatch]], bool]


def _topic_id(topic: int) -> str:
    return wire.uuid_to_text((1000 + topic).to_bytes(16, "big"))


def first_batch(time_ms: int) -> RecordBatch:
    records = cluster_records(BROKERS)
    for topic in range(TOPICS):
        records.append(mt.TopicRecord(name=f"topic-{topic}", topic_id=_topic_id(topic)))
        records += [
            mt.PartitionRecord(partition_id=p, topic_id=_topic_id(topic), replicas=(0, 1, 2), isr=(0, 1, 2),
                               leader=p % BROKERS, leader_epoch=0, partition_epoch=0)
            for p in range(PARTITIONS)
        ]
    return make_batch(0, 1, time_ms, records)


def small_deltas(first: RecordBatch, count: int) -> Iterator[RecordBatch]:
    """An ISR shrink or expand on CHANGED partitions of one topic, one batch per delta."""
    offset, time_ms = first.last_offset + 1, first.append_time_ms
    for index in range(count):
        isr = (0, 1) if index % 2 == 0 else (0, 1, 2)
        changes = [mt.PartitionChangeRecord(partition_id=p, topic_id=_topic_id(index % TOPICS), isr=isr)
                   for p in range(CHANGED)]
        time_ms += 1000
        batch = make_batch(offset, 1, time_ms, changes)
        offset = batch.last_offset + 1
        yield batch


def delta_rs_writer(sink: DeltaSink, image: PublishedImage | None, versions: Sequence[RowVersion],
                    batches: Sequence[LoadedBatch]) -> bool:
    return DeltaSink.write(sink, image, versions, batches)  # the class's: the instance's is the timer below


def delta_spark_writer(spark: Any) -> Writer:
    """The sink's commits made with delta-spark instead of delta-rs (what a `foreachBatch` writer would do)."""
    from delta.tables import DeltaTable as SparkDeltaTable
    from pyspark.sql import Column

    def txn(name: str, offset: int) -> dict[str, str]:
        return {"txnAppId": f"kraftlake:{name}", "txnVersion": str(offset)}

    def append(warehouse: Warehouse, write: TableWrite) -> None:
        frame = spark.createDataFrame(write.data)
        writer = frame.write.format("delta").mode("append").options(**txn(write.table, write.offset))
        writer = writer.option("userMetadata", json.dumps({"kraftlake.offset": write.provenance.offset}))
        if columns := partition_columns(write.table):
            writer = writer.partitionBy(*columns)
        writer.save(warehouse.table_uri(write.table))

    def merge(warehouse: Warehouse, write: TableWrite) -> None:
        spec = TABLES[write.table]
        keys = " AND ".join(f"t.{column} = s.{column}" for column in spec.key)
        touched = ", ".join(str(b) for b in sorted(set(write.data["bucket"].to_pylist())))
        values: dict[str, str | Column] = {c: f"s.{c}" for c in write.data.column_names if c != DELETED}
        for key, value in txn(write.table, write.offset).items():  # a merge takes its txn from the session
            spark.conf.set(f"spark.databricks.delta.write.{key}", value)
        (
            SparkDeltaTable.forPath(spark, warehouse.table_uri(write.table)).alias("t")
            .merge(spark.createDataFrame(write.data).alias("s"), f"t.bucket IN ({touched}) AND {keys}")
            .whenMatchedDelete(condition=f"s.{DELETED}")
            .whenMatchedUpdate(condition=f"NOT s.{DELETED}", set=values)
            .whenNotMatchedInsert(condition=f"NOT s.{DELETED}", values=values)
            .execute()
        )

    def write(sink: DeltaSink, image: PublishedImage | None, versions: Sequence[RowVersion],
              batches: Sequence[LoadedBatch]) -> bool:
        for table_write in sink.prepare(image, versions, batches):
            (merge if table_write.merge else append)(sink.warehouse, table_write)
        if image is None:
            return False
        append(sink.warehouse, sink.image_write(image))
        return True

    return write


def timed_run(root: Path, name: str, writer: Writer, deltas: int) -> tuple[float, list[float]]:
    """One fresh warehouse: the first image's write time and each small delta's (seconds)."""
    pipeline = MetadataPipeline(Warehouse(root / name))
    times: list[float] = []

    def write(image: PublishedImage | None, versions: Sequence[RowVersion], batches: Sequence[LoadedBatch]) -> bool:
        start = time.perf_counter()
        published = writer(pipeline.sink, image, versions, batches)
        times.append(time.perf_counter() - start)
        return published

    pipeline.sink.write = write  # type: ignore[method-assign]  # the same prepared commits, another writer
    first = first_batch(1_760_000_000_000)
    pipeline.load(first)
    pipeline.commit()
    for batch in small_deltas(first, deltas):
        pipeline.load(batch)
        pipeline.commit()
    return times[0], times[1:]


def _check_same_rows(root: Path, name: str) -> None:
    """Both writers' first runs hold the same current partitions: the timings are of the same work."""
    reference = Warehouse(root / "delta-rs-0").table("partitions").to_pyarrow_table().drop_columns("bucket")
    written = Warehouse(root / f"{name}-0").table("partitions").to_pyarrow_table().drop_columns("bucket")
    if sorted(map(str, written.to_pylist())) != sorted(map(str, reference.to_pylist())):
        raise AssertionError(f"{name} wrote other partitions rows than delta-rs")


def run() -> list[dict[str, Any]]:
    runs = int(os.environ.get("KRAFTLAKE_BENCH_WRITER_RUNS", "3"))
    deltas = int(os.environ.get("KRAFTLAKE_BENCH_WRITER_DELTAS", "4"))
    spark = session_builder("kraftlake-bench-writers", "local[2]", {
        "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
    }).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    writers = {"delta-rs": delta_rs_writer, "delta-spark": delta_spark_writer(spark)}
    results: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="kraftlake-bench-writers-") as scratch:
            root = Path(scratch)
            timed_run(root, "warm-up", writers["delta-spark"], 2)
            for name, writer in writers.items():
                firsts, smalls = [], []
                for number in range(runs):
                    first, small = timed_run(root, f"{name}-{number}", writer, deltas)
                    firsts.append(first)
                    smalls.extend(small)
                load = os.getloadavg()[0]
                results.append(row(f"{name}: first image (2,000 partitions)", statistics.median(firsts) * 1000, "ms",
                                   f"median of {runs}; load {load:.1f}"))
                _check_same_rows(root, name)
                results.append(row(f"{name}: small delta ({CHANGED} partitions)", statistics.median(smalls) * 1000,
                                   "ms", f"median of {len(smalls)}; load {load:.1f}"))
    finally:
        spark.stop()
    return results


if __name__ == "__main__":
    for result in run():
        print(result)
