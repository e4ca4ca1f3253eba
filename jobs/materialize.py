"""The streaming job: the metadata topic, replayed into Delta tables, one published image per micro-batch.

    spark-submit jobs/materialize.py [--bootstrap-servers HOST:PORT] [--topic T] [--warehouse URI]
        [--checkpoint C] [--config conf/kraftlake.toml] [--storage-option KEY=VALUE …] …

The flags and their defaults are `kraftlake materialize`'s (`kraftlake.settings.flags`, over
conf/kraftlake.toml). This module is Spark glue: Spark's Kafka source hands each micro-batch to the driver
(`foreachBatch`), which passes its messages to the topic's replay (`kraftlake.lake.topic_replay`: decoding,
snapshots, commit points, catch-up after a restart, all decided there) and turns a failure into one line.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from kraftlake.jobs import kafka_topic
from kraftlake.jobs.kafka_topic import KafkaTopicError, collect_messages
from kraftlake.lake.errors import LakeError, WriterFencedError
from kraftlake.lake.idle_budget import IdleBudget
from kraftlake.lake.pipeline import CATCH_UP_LAG_MS
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.source import SourceIdentity, topic_source
from kraftlake.lake.store_errors import store_failure
from kraftlake.lake.topic_replay import TopicFormatError, TopicMessage, TopicReads, TopicReplay
from kraftlake.lake.warehouse import Warehouse
from kraftlake.lake.writes import PublishedImage
from kraftlake.replay.errors import ReplayError
from kraftlake.settings import SettingsError, load_kraftlake
from kraftlake.settings.flags import MaterializeConfig, add_materialize_arguments, materialize_config
from kraftlake.settings.jars import MissingJarsError
from kraftlake.settings.spark import require_job_jars, session_builder
from kraftlake.stopping import stop_on_signals

__all__ = ["MaterializeConfig", "MaterializeError", "MicroBatchWriter", "TopicMessage", "main", "run"]

REBUILD_TIMEOUT_S = 30.0


class MaterializeError(Exception):
    """The job stopped: what and where, in one line; nothing past the last good image was published.
    `fenced`: another writer took the warehouse over (a rerun would only stop that one)."""

    def __init__(self, line: str, fenced: bool = False) -> None:
        super().__init__(line)
        self.fenced = fenced


# What the topic's replay raises with a message that is the whole story (each names the topic or warehouse).
EXPECTED_ERRORS: tuple[type[Exception], ...] = (TopicFormatError, ReplayError, KafkaTopicError, LakeError)


class SparkTopicReads:
    """The topic read outside the stream with the driver's session, as the replay rebuilds its state after a
    restart (`kraftlake.lake.topic_replay.TopicReads`)."""

    def __init__(self, config: MaterializeConfig, spark: Any) -> None:
        self.config = config
        self.spark = spark

    def messages_before(self, kafka_offset: int) -> Iterator[list[TopicMessage]]:
        config = self.config
        return kafka_topic.read_messages(
            self.spark, config.bootstrap_servers, config.topic, dict(config.kafka_options), kafka_offset
        )

    def end_offset(self) -> int:
        config = self.config
        return kafka_topic.end_offset(
            self.spark, config.bootstrap_servers, config.topic, dict(config.kafka_options), REBUILD_TIMEOUT_S
        )


class JobObserver(Protocol):
    """Told what the writer did (the metrics of `kraftlake materialize --metrics-address`)."""

    def micro_batch(self, seconds: float, failed: bool) -> None: ...

    def published(self, image: PublishedImage, rows_written: int) -> None: ...

    def left(self) -> None: ...  # a fleet's cluster left the fleet file: no longer written


class JobLog:
    """The job's own lines for one cluster: where it starts (the warehouse's last published offset), when it falls
    behind (an image published more than a minute after its batch's commit: the pipeline's backlog rule), when it
    has caught up again, a gap recorded, and where it stopped (the last image told, else the one it started at)."""

    def __init__(self, cluster: str, say: Callable[[str], None]) -> None:
        self.cluster = cluster
        self.say = say
        self.behind = False
        self.last = "none yet"

    def started(self, source: str, warehouse: Warehouse) -> None:
        self.last = held_offset(warehouse)
        self.say(f"materialize {self.cluster}: {source} into {warehouse.uri}, last published offset {self.last}")

    def stopped(self) -> None:
        self.say(f"materialize {self.cluster}: stopped at offset {self.last}")

    def left(self) -> None:
        self.stopped()

    def micro_batch(self, seconds: float, failed: bool) -> None:
        pass  # a failure is the job's last line already

    def published(self, image: PublishedImage, rows_written: int) -> None:
        offset, age_s = image.provenance.offset, time.time() - image.provenance.log_time_ms / 1000
        self.last = str(offset)
        if image.gap is not None:
            self.say(f"materialize {self.cluster}: recorded a gap: {image.gap.describe()}")
        if image.provenance.log_time_ms >= 0 and (age_s * 1000 > CATCH_UP_LAG_MS) != self.behind:
            self.behind = not self.behind
            state = "behind" if self.behind else "caught up"
            self.say(f"materialize {self.cluster}: {state}: offset {offset} published {age_s:.0f} s after its commit")


def held_offset(warehouse: Warehouse) -> str:
    """The warehouse's last published offset as its reader states it, for a start line ("none yet": no
    warehouse; "not readable": the job's own first step names why, in its one line)."""
    try:
        return str(WarehouseReader(warehouse).last_published()) if warehouse.exists() else "none yet"
    except Exception:
        return "not readable"


class Observers:
    """Several observers told alike."""

    def __init__(self, *observers: JobObserver) -> None:
        self.observers = observers

    def micro_batch(self, seconds: float, failed: bool) -> None:
        for observer in self.observers:
            observer.micro_batch(seconds, failed)

    def published(self, image: PublishedImage, rows_written: int) -> None:
        for observer in self.observers:
            observer.published(image, rows_written)

    def left(self) -> None:
        for observer in self.observers:
            observer.left()


class MicroBatchWriter:
    """The foreachBatch function. Runs in the driver, so the replay state survives between micro-batches;
    `spark` is the driver's session, for the reads a restart makes before the stream's first micro-batch.
    `failure` keeps the one line of what stopped it (Spark wraps the error itself in pages of traces).
    A fleet's shared topic passes its cluster's part of it: `reads`, `source` and `label` (what errors name); a
    fleet passes its `idle_budget` (`kraftlake.lake.idle_budget`)."""

    def __init__(self, config: MaterializeConfig, spark: Any, reads: TopicReads | None = None,
                 source: SourceIdentity | None = None, label: str | None = None,
                 idle_budget: IdleBudget | None = None) -> None:
        self.config = config
        self.failure: str | None = None
        self.fenced = False  # the failure is another writer's claim on the warehouse
        self.replay = TopicReplay(
            Warehouse(config.warehouse, dict(config.storage_options)),
            source or topic_source(config.bootstrap_servers, config.topic, config.cluster_id),
            label or config.topic,
            reads or SparkTopicReads(config, spark),
            idle_publish_ms=int(config.idle_publish_seconds * 1000),
            coalesce_backlog=config.coalesce_backlog,
            idle_budget=idle_budget,
        )

    def __call__(self, frame: Any, batch_id: int) -> None:
        self.write(collect_messages(frame))

    observer: JobObserver | None = None  # told each micro-batch and image (`watched_by`)

    def watched_by(self, observer: JobObserver | None) -> None:
        self.observer = observer
        self.replay.on_publish = None if observer is None else observer.published

    def write(self, messages: list[TopicMessage]) -> None:
        """Replay one micro-batch's messages, in Kafka offset order, and publish."""
        started = time.perf_counter()
        try:
            self._noting_failure(lambda: self.replay.write(messages))
        finally:
            if self.observer is not None:
                self.observer.micro_batch(time.perf_counter() - started, self.failure is not None)

    def flush(self) -> None:
        """Publish an offset-only image still held (the topic is drained)."""
        self.replay.flush()

    def catch_up(self) -> None:
        """Replay and publish what the topic holds now, when this writer has read nothing yet: a writer that
        joins a running stream (a fleet's cluster added on the shared topic) is handed none of the messages
        the stream read before, and would wait for the cluster's next one (for good, for a log that has
        stopped growing) before it read them back."""
        if self.replay.pipeline is None:
            self._noting_failure(self.replay.flush)

    def _noting_failure(self, step: Callable[[], None]) -> None:
        try:
            step()
        except EXPECTED_ERRORS as error:
            self.failure = str(error)
            self.fenced = isinstance(error, WriterFencedError)
            raise
        except Exception as error:  # the store refused, is full or could not be reached: nothing past this was
            self.failure = store_failure(self.config.warehouse, error)  # published
            raise


def start_query(spark: Any, config: MaterializeConfig, writer: MicroBatchWriter) -> Any:
    options = dict(config.kafka_options)
    frame = kafka_topic.stream(spark, config.bootstrap_servers, config.topic, options, config.max_offsets_per_trigger)
    stream = frame.writeStream.foreachBatch(writer).option("checkpointLocation", str(config.spark_checkpoint))
    if config.available_now:
        stream = stream.trigger(availableNow=True)
    else:
        stream = stream.trigger(processingTime=f"{config.trigger_seconds} seconds")
    return stream.queryName("kraftlake-materialize").start()


def local_spark(
    app_name: str = "kraftlake-materialize", short_lived: bool = False, extra: dict[str, str] | None = None
) -> Any:
    """The job's SparkSession (`kraftlake.settings.spark`'s builder: Delta's reader, the project's jars), under the
    master spark-submit set (`--master`, spark-defaults.conf); run as a
    plain Python program, a local one ($KRAFTLAKE_SPARK_MASTER, default local[2]) whose Python workers run
    this interpreter (the venv's). Quiet: the job reports its own failures in one line
    ($KRAFTLAKE_SPARK_LOG_LEVEL=WARN shows Spark's log again).

    `short_lived` (a CLI query, not a streaming job): the local JVM compiles with C1 only, as a query that
    lasts seconds to a minute pays more for the C2 compiler's warm-up than it gains from its code (a cold
    `kraftlake summary under_replicated` on 1M partitions: 40 s -> 19 s, see BENCHMARKS.md, analytics).
    `extra`: more settings (the fleet's catalog)."""
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
    return session_builder(app_name, master, {**conf, **(extra or {})}).getOrCreate()


def launched_with_master() -> bool:
    """True under spark-submit (it hands its JVM to Python through PYSPARK_GATEWAY_PORT, with the master the
    user chose or its own default) or when $PYSPARK_SUBMIT_ARGS names one: then the job must not pick one."""
    return "PYSPARK_GATEWAY_PORT" in os.environ or "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def run(config: MaterializeConfig, spark: Any | None = None, stop: threading.Event | None = None,
        observer: JobObserver | None = None) -> None:
    """Run the job until `stop` is set (SIGTERM: `kraftlake.stopping`), or, with `available_now`, until the topic
    is drained; `observer` is told each micro-batch and image."""
    spark = spark or local_spark()
    require_job_jars(spark)
    check_topic_identity(spark, config)
    writer = MicroBatchWriter(config, spark)
    writer.watched_by(observer)
    query = start_query(spark, config, writer)
    try:
        while not query.awaitTermination(STOP_POLL_S):
            if stop is not None and stop.is_set():
                stop_between_batches(query)
                break
        writer.flush()  # the topic is drained (available-now) or the job stops: publish an offset-only image held
    except Exception as error:
        raise MaterializeError(writer.failure or concise_failure(str(error)), writer.fenced) from None


STOP_POLL_S = 1.0  # how often the driver looks whether it was asked to stop
STOP_WAIT_S = 30.0  # how long a stop waits for the micro-batch under way to end


def stop_between_batches(query: Any) -> None:
    """Stop the query once no trigger is under way (at most STOP_WAIT_S: the warehouse is whole either way, the
    sink's steps see to that). Stopped inside a micro-batch, Spark 4.2.0 interrupts the foreachBatch call in Py4J
    and, testing whether the failure's long text is an interruption, logs a java.lang.StackOverflowError."""
    deadline = time.monotonic() + STOP_WAIT_S
    while query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(STOP_POLL_S / 10)
    query.stop()


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
        for marker in ("KafkaTopicError: ", "RecordFormatError: ", "ReplayError: ", "CatalogError: "):
            if marker in line:
                return line.split(marker, 1)[1].strip()
    return f"the streaming query failed: {text.splitlines()[0] if text else 'no message'}"


def parse_args(argv: list[str] | None) -> MaterializeConfig:
    """`kraftlake materialize`'s flags over conf/kraftlake.toml (`kraftlake.settings.flags`); the Kafka to read
    is named by a flag or the settings (a spark-submit job has no local broker to fall back on)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_materialize_arguments(parser)
    args = parser.parse_args(argv)
    settings = load_kraftlake(args.config)
    bootstrap = args.bootstrap_servers or settings.kafka.bootstrap_servers
    if not bootstrap:
        missing = "no Kafka to read: set it, or pass --bootstrap-servers"
        raise SettingsError(args.config, "kafka.bootstrap_servers", missing)
    return materialize_config(args, settings, bootstrap)


def say(line: str) -> None:
    """A job's own line, on stderr at once."""
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    try:
        config = parse_args(argv)
        stop = stop_on_signals()
        if config.fleet is not None:
            from kraftlake.jobs.fleet import run_fleet_job

            run_fleet_job(config, stop=stop, say=say)
        else:
            run(config, stop=stop)
    except (SettingsError, MaterializeError, MissingJarsError) as error:
        print(f"materialize: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    # spark-submit runs this file as `__main__`; the fleet's code imports it as `kraftlake.jobs.materialize`. Run
    # that module's `main`, so the errors it catches are the classes the rest of the job raises.
    from kraftlake.jobs.materialize import main as package_main

    sys.exit(package_main())
