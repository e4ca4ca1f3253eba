"""The streaming job: the metadata topic, replayed into Delta tables, one published image per micro-batch.

    spark-submit jobs/materialize.py --bootstrap-servers HOST:PORT --topic T --warehouse URI --checkpoint C
        [--storage-option KEY=VALUE …]

Each Kafka message is one committed Raft batch (value: RecordBatch v2 bytes, key: base offset) or one batch
of a snapshot (`kraftlake.records.topic`: `kraftlake publish` puts one first when a real cluster's log no longer starts
at 0). In `foreachBatch` the driver decodes the micro-batch, orders its log batches by metadata offset, drops
batches it has already applied, replays the rest (transactions folded, across micro-batches too) and writes
the image; a snapshot is gathered until its footer arrives (across micro-batches too), then loaded as
Kafka's loader loads one (everything it does not re-assert is removed) and published as such.
The replay state lives in the driver between micro-batches; after a restart it is rebuilt by reading the
topic up to where Spark resumes (the Delta sink skips everything already written), so a job SIGKILLed at
any point and restarted ends with the same tables as one that never stopped.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftlake.jobs import kafka_topic
from kraftlake.jobs.kafka_topic import KafkaTopicError, TopicMessage, collect_messages
from kraftlake.jobs.store_errors import describe_store_error, is_store_error
from kraftlake.lake.gc_pause import paused_collector
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.sink_tables import WriterFencedError
from kraftlake.lake.source import SourceMismatchError, topic_source
from kraftlake.lake.warehouse import Warehouse, WarehouseLayoutError
from kraftlake.records import RecordBatch, SnapshotId, decode_batch
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.topic import ends_snapshot, snapshot_of, starts_snapshot
from kraftlake.replay.errors import ReplayError
from kraftlake.settings.spark import session_builder

REBUILD_TIMEOUT_S = 30.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MaterializeConfig:
    bootstrap_servers: str
    topic: str
    warehouse: str  # a local path or an object-store URI (s3://bucket/prefix)
    spark_checkpoint: Path  # Spark's checkpoint location: the stream's progress (not an image checkpoint)
    trigger_seconds: float = 1.0
    available_now: bool = False
    max_offsets_per_trigger: int | None = None
    idle_publish_seconds: float = 0.0  # hold offset-only images this long (see kraftlake.lake.pipeline); 0: never
    coalesce_backlog: bool = False  # hold images of a backlog (see kraftlake.lake.pipeline)
    storage_options: tuple[tuple[str, str], ...] = ()  # for the warehouse; delta-rs reads AWS_* besides
    kafka_options: tuple[tuple[str, str], ...] = ()  # Kafka client options (Java names), Spark's `kafka.X`
    cluster_id: str | None = None  # the cluster whose log the topic holds, when the operator says (lake.source)


class MaterializeError(Exception):
    """A bad batch or record in the topic: the job stops with what and where, nothing past it published."""


@dataclass
class PendingSnapshot:
    """A snapshot's batches read so far: it loads once its footer arrives."""

    snapshot: SnapshotId
    batches: list[RecordBatch] = field(default_factory=list)


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
    """The foreachBatch function. Runs in the driver, so the replay state survives between micro-batches;
    `spark` is the driver's session, for the reads a restart makes before the stream's first micro-batch."""

    def __init__(self, config: MaterializeConfig, spark: Any) -> None:
        self.config = config
        self.spark = spark
        self.pipeline: MetadataPipeline | None = None
        self.failure: str | None = None
        self.pending_snapshot: PendingSnapshot | None = None

    def __call__(self, frame: Any, batch_id: int) -> None:
        self.write(collect_messages(frame))

    def write(self, messages: list[TopicMessage]) -> None:
        """Replay one micro-batch's messages, in Kafka offset order, and publish."""
        with paused_collector():
            self._write(messages)

    def _write(self, messages: list[TopicMessage]) -> None:
        try:
            if self.pipeline is None:
                if not messages:
                    return
                self.pipeline = self._rebuilt(before_kafka_offset=messages[0][0])
            self._apply(self.pipeline, messages)
        except (MaterializeError, ReplayError, KafkaTopicError, WarehouseLayoutError, SourceMismatchError,
                WriterFencedError) as error:
            self.failure = str(error)
            raise
        except Exception as error:  # the store refused, is full or could not be reached: nothing past this was
            if not is_store_error(error):  # published
                raise
            self.failure = f"warehouse {self.config.warehouse}: {describe_store_error(error)}"
            raise

    def _apply(self, pipeline: MetadataPipeline, messages: list[TopicMessage]) -> None:
        """Load the messages' batches (already applied ones are dropped), then write what became visible."""
        run: list[TopicMessage] = []  # log batches since the last snapshot batch
        for message in messages:
            snapshot = snapshot_of(message.key)
            if snapshot is None:
                run.append(message)
                continue
            self._load_log(pipeline, run)
            run = []
            self._add_snapshot_batch(pipeline, snapshot, message)
        self._load_log(pipeline, run)
        pipeline.commit()
        if pipeline.held:
            log.warning(
                "waiting for offset %d: %d later batch(es) held until the publisher re-sends it",
                pipeline.loaded_offset + 1, len(pipeline.held),
            )

    def _rebuilt(self, before_kafka_offset: int) -> MetadataPipeline:
        """The replay state after the topic's messages before `before_kafka_offset` (what earlier runs of
        the job consumed; the sink skips what the warehouse already holds)."""
        pipeline = MetadataPipeline(
            open_warehouse(self.config.warehouse, self.config.storage_options),
            hold_gaps=True,
            idle_publish_ms=int(self.config.idle_publish_seconds * 1000),
            coalesce_backlog=self.config.coalesce_backlog,
            source=topic_source(self.config.bootstrap_servers, self.config.topic, self.config.cluster_id),
        )
        self._catch_up(pipeline, before_kafka_offset)
        return pipeline

    def flush(self) -> None:
        """Publish an offset-only image still held. A run that found nothing new built no state, while an
        earlier run may have been stopped holding one: rebuild from the topic first, then publish."""
        with paused_collector():
            if self.pipeline is None:
                self.pipeline = self._rebuilt(before_kafka_offset=self._topic_end())
            self.pipeline.flush()

    def _load_log(self, pipeline: MetadataPipeline, run: list[TopicMessage]) -> None:
        if not run:
            return
        if self.pending_snapshot is not None:  # its publisher stopped half-way, then went on with the log
            log.warning("snapshot %s: its footer never came; dropped", self.pending_snapshot.snapshot.file_name())
            self.pending_snapshot = None
        for batch in decode_messages(self.config.topic, [(message.kafka_offset, message.value) for message in run]):
            pipeline.load(batch, source=f"topic {self.config.topic}")

    def _add_snapshot_batch(self, pipeline: MetadataPipeline, snapshot: SnapshotId, message: TopicMessage) -> None:
        """Gather a snapshot's batches; at its footer, load it unless the log loaded is already past it."""
        where = f"topic {self.config.topic} message at Kafka offset {message.kafka_offset}"
        batch = decode_messages(self.config.topic, [(message.kafka_offset, message.value)])[0]
        if starts_snapshot(batch):
            self.pending_snapshot = PendingSnapshot(snapshot)  # a snapshot cut short before is dropped
        elif self.pending_snapshot is None or self.pending_snapshot.snapshot != snapshot:
            raise MaterializeError(f"{where}: a batch of snapshot {snapshot.file_name()} without its header")
        pending = self.pending_snapshot
        pending.batches.append(batch)
        if not ends_snapshot(batch):
            return
        self.pending_snapshot = None
        if snapshot.end_offset - 1 > pipeline.loaded_offset:
            pipeline.commit()  # what the log made visible before the snapshot gets its own image
            source = f"topic {self.config.topic} snapshot {snapshot.file_name()}"
            pipeline.load_snapshot(pending.batches, snapshot, source)

    def _catch_up(self, pipeline: MetadataPipeline, before_kafka_offset: int) -> None:
        """Replay what earlier runs of the job consumed (Kafka offsets before `before_kafka_offset`)."""
        config = self.config
        options = dict(config.kafka_options)
        for chunk in kafka_topic.read_messages(
            self.spark, config.bootstrap_servers, config.topic, options, before_kafka_offset
        ):
            self._apply(pipeline, chunk)

    def _topic_end(self) -> int:
        config = self.config
        return kafka_topic.end_offset(
            self.spark, config.bootstrap_servers, config.topic, dict(config.kafka_options), REBUILD_TIMEOUT_S
        )


def open_warehouse(uri: str, storage_options: tuple[tuple[str, str], ...]) -> Warehouse:
    return Warehouse(uri, dict(storage_options))


def start_query(spark: Any, config: MaterializeConfig, writer: MicroBatchWriter) -> Any:
    options = dict(config.kafka_options)
    frame = kafka_topic.stream(spark, config.bootstrap_servers, config.topic, options, config.max_offsets_per_trigger)
    stream = frame.writeStream.foreachBatch(writer).option("checkpointLocation", str(config.spark_checkpoint))
    if config.available_now:
        stream = stream.trigger(availableNow=True)
    else:
        stream = stream.trigger(processingTime=f"{config.trigger_seconds} seconds")
    return stream.queryName("kraftlake-materialize").start()


def local_spark(app_name: str = "kraftlake-materialize", short_lived: bool = False) -> Any:
    """The job's SparkSession (`kraftlake.settings.spark`'s builder: Delta's reader, the project's jars), under the
    master spark-submit set (`--master`, spark-defaults.conf); run as a
    plain Python program, a local one ($KRAFTLAKE_SPARK_MASTER, default local[2]) whose Python workers run
    this interpreter (the venv's). Quiet: the job reports its own failures in one line
    ($KRAFTLAKE_SPARK_LOG_LEVEL=WARN shows Spark's log again).

    `short_lived` (a CLI query, not a streaming job): the local JVM compiles with C1 only, as a query that
    lasts seconds to a minute pays more for the C2 compiler's warm-up than it gains from its code (a cold
    `kraftlake summary under_replicated` on 1M partitions: 40 s -> 19 s, see BENCHMARKS.md, analytics)."""
    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": os.environ.get("KRAFTLAKE_SPARK_LOG_LEVEL", "FATAL"),
    }
    master = None
    if not launched_with_master():
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        master = os.environ.get("KRAFTLAKE_SPARK_MASTER", "local[2]")
        conf["spark.pyspark.python"] = sys.executable
        if short_lived:
            conf["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1"
    return session_builder(app_name, master, conf).getOrCreate()


def launched_with_master() -> bool:
    """True under spark-submit (it hands its JVM to Python through PYSPARK_GATEWAY_PORT, with the master the
    user chose or its own default) or when $PYSPARK_SUBMIT_ARGS names one: then the job must not pick one."""
    return "PYSPARK_GATEWAY_PORT" in os.environ or "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def run(config: MaterializeConfig, spark: Any | None = None) -> None:
    """Run the job until it is stopped (or, with `available_now`, until the topic is drained)."""
    spark = spark or local_spark()
    check_topic_identity(spark, config)
    writer = MicroBatchWriter(config, spark)
    query = start_query(spark, config, writer)
    try:
        query.awaitTermination()
        writer.flush()  # the topic is drained (available-now): publish an offset-only image still held
    except Exception as error:
        raise MaterializeError(writer.failure or concise_failure(str(error))) from None


TOPIC_ID_FILE = "kraftlake-topic-id"  # in the checkpoint directory: the topic its Kafka offsets are of


def check_topic_identity(spark: Any, config: MaterializeConfig) -> None:
    """Refuse a topic deleted and created again under the same name since the checkpoint's first run: Spark's
    Kafka source names a topic by its name only, so it would go on from the old topic's offsets into the new
    one's messages (or rebuild its replay state from them), mixing two logs into one history."""
    try:
        current = kafka_topic.topic_id(
            spark, config.bootstrap_servers, config.topic, dict(config.kafka_options), REBUILD_TIMEOUT_S
        )
    except KafkaTopicError as error:
        raise MaterializeError(str(error)) from None
    recorded_at = config.spark_checkpoint / TOPIC_ID_FILE
    if recorded_at.exists():
        recorded = recorded_at.read_text().strip()
        if recorded != current:
            raise MaterializeError(
                f"topic {config.topic} on {config.bootstrap_servers} has id {current}, but the checkpoint "
                f"{config.spark_checkpoint} read the topic of id {recorded}: it was deleted and created again; its "
                "messages are not the log this checkpoint and warehouse hold (use a new checkpoint and warehouse)"
            )
        return
    config.spark_checkpoint.mkdir(parents=True, exist_ok=True)
    temporary = recorded_at.with_suffix(".tmp")
    temporary.write_text(current + "\n")
    temporary.replace(recorded_at)


def concise_failure(text: str) -> str:
    """The line that says what went wrong, out of a streaming query's error (Python and JVM traces)."""
    for line in reversed(text.splitlines()):
        for marker in ("KafkaTopicError: ", "RecordFormatError: ", "ReplayError: "):
            if marker in line:
                return line.split(marker, 1)[1].strip()
    return f"the streaming query failed: {text.splitlines()[0] if text else 'no message'}"


def parse_args(argv: list[str] | None) -> MaterializeConfig:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--warehouse", required=True, help="a local path or an object-store URI")
    parser.add_argument("--checkpoint", dest="spark_checkpoint", type=Path, required=True)
    parser.add_argument("--cluster-id",
                        help="the cluster whose log the topic holds: the warehouse records it, refuses another")
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    parser.add_argument("--available-now", action="store_true", help="drain the topic, then stop")
    parser.add_argument("--max-offsets-per-trigger", type=int)
    parser.add_argument("--idle-publish-seconds", type=float, default=10.0,
                        help="an image that only moves offsets waits up to this long (0: publish every trigger)")
    parser.add_argument("--coalesce-backlog", action=argparse.BooleanOptionalAction, default=True,
                        help="while the job is behind (batches older than a minute), images wait until their "
                             "change is as big as the history before it")
    parser.add_argument("--storage-option", dest="storage_options", action="append", type=storage_option,
                        default=[], metavar="KEY=VALUE", help="a delta-rs storage option for the warehouse")
    parser.add_argument("--kafka-option", dest="kafka_options", action="append", type=storage_option, default=[],
                        metavar="KEY=VALUE", help="a Kafka client option (e.g. security.protocol=SASL_SSL)")
    args = parser.parse_args(argv)
    return MaterializeConfig(**{
        **vars(args), "storage_options": tuple(args.storage_options), "kafka_options": tuple(args.kafka_options),
    })


def storage_option(pair: str) -> tuple[str, str]:
    key, separator, value = pair.partition("=")
    if not separator or not key.strip():
        raise argparse.ArgumentTypeError(f"{pair!r}: expected KEY=VALUE")
    return key.strip(), value


def main(argv: list[str] | None = None) -> int:
    try:
        run(parse_args(argv))
    except MaterializeError as error:
        print(f"materialize: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
