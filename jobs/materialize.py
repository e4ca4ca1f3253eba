"""The streaming job: the metadata topic, replayed into Delta tables, one published image per micro-batch.

    spark-submit jobs/materialize.py --bootstrap-servers HOST:PORT --topic T --warehouse W --checkpoint C

Each Kafka message is one committed Raft batch (value: RecordBatch v2 bytes, key: base offset). In
`foreachBatch` the driver decodes the micro-batch, orders it by metadata offset, drops batches it has
already applied, replays the rest (transactions folded, across micro-batches too) and writes the image.
The replay state lives in the driver between micro-batches; after a restart it is rebuilt by reading the
topic up to where Spark resumes (the Delta sink skips everything already written), so a job SIGKILLed at
any point and restarted ends with the same tables as one that never stopped.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from jobs.kafka_source import RECEIVE_MAX_BYTES, SOURCE_NAME, KafkaSource
from lake.gc_pause import paused_collector
from lake.pipeline import MetadataPipeline
from lake.warehouse import Warehouse
from records import RecordBatch, decode_batch
from records.errors import RecordFormatError
from replay.errors import ReplayError

REBUILD_TIMEOUT_S = 30.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MaterializeConfig:
    bootstrap_servers: str
    topic: str
    warehouse: str  # a local path or an object-store URI
    checkpoint: Path
    trigger_seconds: float = 1.0
    available_now: bool = False
    max_offsets_per_trigger: int | None = None
    idle_publish_seconds: float = 0.0  # hold offset-only images this long (see lake.pipeline); 0: never


class MaterializeError(Exception):
    """A bad batch or record in the topic: the job stops with what and where, nothing past it published."""


def decode_messages(topic: str, messages: Iterable[tuple[int, bytes]]) -> list[RecordBatch]:
    """(Kafka offset, value) pairs to batches in metadata-offset order; a bad value names both offsets."""
    batches = []
    for kafka_offset, value in messages:
        try:
            batches.append(decode_batch(value, source=f"topic {topic} message at Kafka offset {kafka_offset}"))
        except RecordFormatError as error:
            raise MaterializeError(str(error)) from None
    return sorted(batches, key=lambda batch: batch.base_offset)


class MicroBatchWriter:
    """The foreachBatch function. Runs in the driver, so the replay state survives between micro-batches."""

    def __init__(self, config: MaterializeConfig) -> None:
        self.config = config
        self.pipeline: MetadataPipeline | None = None
        self.failure: str | None = None

    def __call__(self, frame: Any, batch_id: int) -> None:
        self.write(collect_messages(frame))

    def write(self, messages: list[tuple[int, bytes]]) -> None:
        """Replay one micro-batch's (Kafka offset, value) pairs, in Kafka offset order, and publish."""
        with paused_collector():
            self._write(messages)

    def _write(self, messages: list[tuple[int, bytes]]) -> None:
        try:
            if self.pipeline is None:
                if not messages:
                    return
                self.pipeline = MetadataPipeline(
                    Warehouse(self.config.warehouse),
                    hold_gaps=True,
                    idle_publish_ms=int(self.config.idle_publish_seconds * 1000),
                )
                self._catch_up(self.pipeline, before_kafka_offset=messages[0][0])
            self._apply(self.pipeline, messages)
        except (MaterializeError, ReplayError) as error:
            self.failure = str(error)
            raise

    def _apply(self, pipeline: MetadataPipeline, messages: list[tuple[int, bytes]]) -> None:
        """Load the messages' batches (already applied ones are dropped), then write what became visible."""
        for batch in decode_messages(self.config.topic, messages):
            pipeline.load(batch, source=f"topic {self.config.topic}")
        pipeline.commit()
        if pipeline.held:
            log.warning(
                "waiting for offset %d: %d later batch(es) held until the publisher re-sends it",
                pipeline.loaded_offset + 1, len(pipeline.held),
            )

    def flush(self) -> None:
        if self.pipeline is not None:
            with paused_collector():
                self.pipeline.flush()

    def _catch_up(self, pipeline: MetadataPipeline, before_kafka_offset: int) -> None:
        """Replay what earlier runs of the job consumed (Kafka offsets before `before_kafka_offset`)."""
        chunk: list[tuple[int, bytes]] = []
        for message in read_topic(self.config, before_kafka_offset):
            chunk.append(message)
            if len(chunk) >= 10_000:
                self._apply(pipeline, chunk)
                chunk = []
        self._apply(pipeline, chunk)


def collect_messages(frame: Any) -> list[tuple[int, bytes]]:
    """A micro-batch's (Kafka offset, value) pairs, brought to the driver, in Kafka offset order."""
    table = frame.select("offset", "value").toArrow().sort_by("offset")
    return list(zip(table.column("offset").to_pylist(), table.column("value").to_pylist(), strict=True))


def read_topic(config: MaterializeConfig, end_kafka_offset: int) -> Iterator[tuple[int, bytes]]:
    """(Kafka offset, value) of partition 0 from the start up to `end_kafka_offset` (exclusive)."""
    if end_kafka_offset <= 0:
        return
    consumer = Consumer({
        "bootstrap.servers": config.bootstrap_servers,
        "group.id": f"kraftlake-rebuild-{os.getpid()}",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "receive.message.max.bytes": RECEIVE_MAX_BYTES,
    })
    try:
        consumer.assign([TopicPartition(config.topic, 0, 0)])
        position = 0
        while position < end_kafka_offset:
            message = consumer.poll(REBUILD_TIMEOUT_S)
            if message is None:
                raise MaterializeError(
                    f"rebuilding state: no message from {config.bootstrap_servers} topic {config.topic} "
                    f"at Kafka offset {position} within {REBUILD_TIMEOUT_S:.0f} s"
                )
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise MaterializeError(f"rebuilding state from {config.bootstrap_servers}: {message.error()}")
            position = message.offset() + 1
            if message.offset() < end_kafka_offset:
                yield message.offset(), message.value()
    finally:
        consumer.close()


def start_query(spark: Any, config: MaterializeConfig, writer: MicroBatchWriter) -> Any:
    spark.dataSource.register(KafkaSource)
    reader = (
        spark.readStream.format(SOURCE_NAME)
        .option("bootstrap.servers", config.bootstrap_servers)
        .option("topic", config.topic)
        .option("startingOffsets", "earliest")
    )
    if config.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    stream = reader.load().writeStream.foreachBatch(writer).option("checkpointLocation", str(config.checkpoint))
    if config.available_now:
        stream = stream.trigger(availableNow=True)
    else:
        stream = stream.trigger(processingTime=f"{config.trigger_seconds} seconds")
    return stream.queryName("kraftlake-materialize").start()


def local_spark(app_name: str = "kraftlake-materialize") -> Any:
    """A local SparkSession whose Python workers run this interpreter (the venv's). Quiet: the job reports
    its own failures in one line ($KRAFTLAKE_SPARK_LOG_LEVEL=WARN shows Spark's log again)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.appName(app_name)
        .master(os.environ.get("KRAFTLAKE_SPARK_MASTER", "local[2]"))
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", os.environ.get("KRAFTLAKE_SPARK_LOG_LEVEL", "FATAL"))
        .getOrCreate()
    )
    return session


def run(config: MaterializeConfig, spark: Any | None = None) -> None:
    """Run the job until it is stopped (or, with `available_now`, until the topic is drained)."""
    spark = spark or local_spark()
    writer = MicroBatchWriter(config)
    query = start_query(spark, config, writer)
    try:
        query.awaitTermination()
    except Exception as error:
        raise MaterializeError(writer.failure or concise_failure(str(error))) from None
    writer.flush()  # the topic is drained (available-now): publish an offset-only image still held


def concise_failure(text: str) -> str:
    """The line that says what went wrong, out of a streaming query's error (Python and JVM traces)."""
    for line in reversed(text.splitlines()):
        for marker in ("KafkaSourceError: ", "RecordFormatError: ", "ReplayError: "):
            if marker in line:
                return line.split(marker, 1)[1].strip()
    return f"the streaming query failed: {text.splitlines()[0] if text else 'no message'}"


def parse_args(argv: list[str] | None) -> MaterializeConfig:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--warehouse", required=True, help="a local path or an object-store URI")
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    parser.add_argument("--available-now", action="store_true", help="drain the topic, then stop")
    parser.add_argument("--max-offsets-per-trigger", type=int)
    parser.add_argument("--idle-publish-seconds", type=float, default=10.0,
                        help="an image that only moves offsets waits up to this long (0: publish every trigger)")
    args = parser.parse_args(argv)
    return MaterializeConfig(**vars(args))


def main(argv: list[str] | None = None) -> int:
    try:
        run(parse_args(argv))
    except MaterializeError as error:
        print(f"materialize: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
