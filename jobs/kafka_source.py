"""`kraftlake-kafka`: a PySpark streaming data source over Kafka, built on confluent-kafka.

Spark's own Kafka connector is a jar that cannot be downloaded here, and the metadata topic needs little of
it: this source reads one topic (one partition in this project, any number supported) into rows
`partition int, offset long, key binary, value binary, timestamp long` (timestamp in ms, null when the
broker has none).

    spark.dataSource.register(KafkaSource)
    spark.readStream.format("kraftlake-kafka").option("bootstrap.servers", "host:9092")
        .option("topic", "metadata").option("maxOffsetsPerTrigger", "10000").load()

Options: `bootstrap.servers` and `topic` (required); `startingOffsets` = `earliest` (default: the metadata
log is only useful from its start, unlike Spark's Kafka source whose default is `latest`) or `latest`,
for a query without a checkpoint;
`maxOffsetsPerTrigger` (per micro-batch, split over partitions by their backlog); `timeoutMs` (default
30000: the longest any single Kafka request or read may go without progress before the query fails with
an error naming the bootstrap servers, instead of hanging on a broker that is down); and any `kafka.X`
option, passed to the consumer as `X` (e.g. `kafka.security.protocol`).

Offsets are `{"topic": T, "partitions": {"0": next offset to read, ...}}`, kept by Spark in the
checkpoint: a restarted query resumes from there. `commit(end)` is deliberately not overridden: the
checkpoint is the only record of progress (no consumer group offsets; Spark calls commit at the start of
the next batch, so they would lag one batch behind anyway).

Transactions: `isolation.level` is librdkafka's default, read_committed, under which the watermark the
broker reports is the last stable offset, so a batch never waits on an open transaction. Aborted
records and transaction markers take offsets that no row has: offsets in the output are increasing but
not always consecutive.

The reader is rebuilt from the pickled DataSource on Spark's Python workers: Kafka clients are opened
lazily inside methods, never in constructors.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

SOURCE_NAME = "kraftlake-kafka"
SCHEMA = "partition int, offset long, key binary, value binary, timestamp long"
ARROW_SCHEMA = pa.schema(
    [
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("timestamp", pa.int64()),
    ]
)
# Yield an Arrow batch at whichever comes first, so that big values do not pile up in a worker's memory.
BATCH_ROWS = 10_000
BATCH_BYTES = 64 << 20
STARTING_OFFSETS = ("earliest", "latest")
# Connection trouble that librdkafka reports but also retries by itself.
_TRANSIENT = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT})

Offsets = dict[str, Any]


class KafkaSourceError(Exception):
    """The source cannot go on: the message names the bootstrap servers, the topic and the offsets."""


@dataclass(frozen=True)
class KafkaSourceOptions:
    """The parsed, validated options: plain data, so it pickles to the workers."""

    bootstrap_servers: str
    topic: str
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    timeout_s: float = 30.0
    kafka_config: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> KafkaSourceOptions:
        """Spark hands options over lower-cased; validate them here so a typo fails before any I/O."""
        lowered = {key.lower(): value for key, value in options.items()}
        missing = [name for name in ("bootstrap.servers", "topic") if not lowered.get(name)]
        if missing:
            raise KafkaSourceError(f"{SOURCE_NAME}: missing option(s) {', '.join(missing)}")
        starting = lowered.get("startingoffsets", "earliest").lower()
        if starting not in STARTING_OFFSETS:
            raise KafkaSourceError(f"{SOURCE_NAME}: startingOffsets must be earliest or latest, not {starting!r}")
        limit = _positive_int(lowered, "maxoffsetspertrigger")
        timeout_ms = _positive_int(lowered, "timeoutms")
        return cls(
            bootstrap_servers=lowered["bootstrap.servers"],
            topic=lowered["topic"],
            starting_offsets=starting,
            max_offsets_per_trigger=limit,
            timeout_s=30.0 if timeout_ms is None else timeout_ms / 1000,
            kafka_config={key[len("kafka."):]: value for key, value in lowered.items() if key.startswith("kafka.")},
        )

    def consumer(self) -> Consumer:
        """An assign-only consumer: it never joins a group or commits, so any group.id will do."""
        config: dict[str, Any] = {
            "group.id": f"{SOURCE_NAME}-{uuid.uuid4().hex[:8]}",
            "socket.timeout.ms": int(self.timeout_s * 1000),
            **self.kafka_config,
            "bootstrap.servers": self.bootstrap_servers,
            # What the reading loop relies on; a kafka.* option must not change these.
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
        }
        return Consumer(config)

    def where(self) -> str:
        return f"topic {self.topic!r} on Kafka at {self.bootstrap_servers}"


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise KafkaSourceError(f"{SOURCE_NAME}: option {name} must be a positive integer, not {raw!r}")
    return value


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """One Spark task: offsets [start, end) of one Kafka partition."""

    partition: int
    start: int
    end: int


class KafkaSource(DataSource):
    """Registered under the name `kraftlake-kafka`; streaming reads only."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(KafkaSourceOptions.parse(self.options))


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches from watermarks on the driver and reads offset ranges on the workers."""

    def __init__(self, options: KafkaSourceOptions) -> None:
        self.options = options
        self._driver_consumer: Consumer | None = None
        self._available_now_target: dict[str, int] | None = None

    def initialOffset(self) -> Offsets:
        watermarks = self._watermarks()
        pick = 0 if self.options.starting_offsets == "earliest" else 1
        return {"topic": self.options.topic, "partitions": {p: marks[pick] for p, marks in watermarks.items()}}

    def prepareForTriggerAvailableNow(self) -> None:
        """Freeze the end of an availableNow run at what the topic holds now."""
        self._available_now_target = self._ends()

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return super().getDefaultReadLimit() if limit is None else ReadMaxRows(limit)

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        if start.get("topic") != self.options.topic:
            raise KafkaSourceError(
                f"the checkpoint holds offsets of topic {start.get('topic')!r}, not {self.options.topic!r}: "
                "use a new checkpoint location for another topic"
            )
        begin: dict[str, int] = start["partitions"]
        ends = self._available_now_target if self._available_now_target is not None else self._ends()
        gone = sorted(set(begin) - set(ends), key=int)
        if gone:
            raise KafkaSourceError(f"partition(s) {', '.join(gone)} of {self.options.where()} disappeared")
        for partition, end in ends.items():
            if end < begin.get(partition, 0):
                raise KafkaSourceError(
                    f"{self.options.where()}, partition {partition} ends at offset {end} but the checkpoint "
                    f"already read up to {begin[partition]}: was the topic deleted and re-created?"
                )
        if isinstance(limit, ReadMaxRows):
            ends = _cap(begin, ends, limit.max_rows)
        return {"topic": self.options.topic, "partitions": ends}

    def partitions(self, start: Offsets, end: Offsets) -> list[KafkaRange]:
        """One task per Kafka partition with new data; a partition new since `start` is read from 0."""
        begin: dict[str, int] = start["partitions"]
        return [
            KafkaRange(int(partition), begin.get(partition, 0), stop)
            for partition, stop in sorted(end["partitions"].items(), key=lambda item: int(item[0]))
            if stop > begin.get(partition, 0)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaRange)
        return _read_range(self.options, partition)

    def stop(self) -> None:
        if self._driver_consumer is not None:
            self._driver_consumer.close()
            self._driver_consumer = None

    def _ends(self) -> dict[str, int]:
        """Where each partition ends now: the last stable offset under read_committed."""
        return {partition: marks[1] for partition, marks in self._watermarks().items()}

    def _watermarks(self) -> dict[str, tuple[int, int]]:
        """(low, high) per partition, keyed by the partition number as a string (offsets go through JSON)."""
        if self._driver_consumer is None:
            self._driver_consumer = self.options.consumer()
        consumer, options = self._driver_consumer, self.options
        try:
            metadata = consumer.list_topics(options.topic, timeout=options.timeout_s)
            topic = metadata.topics.get(options.topic)
            if topic is None or topic.error is not None:
                reason = "no such topic" if topic is None else topic.error.str()
                raise KafkaSourceError(f"cannot read {options.where()}: {reason}")
            return {
                str(partition): consumer.get_watermark_offsets(
                    TopicPartition(options.topic, partition), timeout=options.timeout_s, cached=False
                )
                for partition in sorted(topic.partitions)
            }
        except KafkaException as error:
            raise KafkaSourceError(
                f"Kafka at {options.bootstrap_servers} did not answer within {options.timeout_s:g} s "
                f"(topic {options.topic!r}): {error.args[0].str()}"
            ) from error


def _cap(begin: dict[str, int], ends: dict[str, int], budget: int) -> dict[str, int]:
    """At most `budget` offsets in all, shared in proportion to each partition's backlog."""
    backlog = {partition: end - begin.get(partition, 0) for partition, end in ends.items()}
    total = sum(backlog.values())
    if total <= budget:
        return ends
    shares = {partition: lag * budget // total for partition, lag in backlog.items()}
    # Rounding down leaves fewer than len(ends) offsets unassigned: give them to the biggest leftovers.
    unassigned = budget - sum(shares.values())
    for partition in sorted(backlog, key=lambda p: backlog[p] - shares[p], reverse=True)[:unassigned]:
        shares[partition] += 1
    return {partition: begin.get(partition, 0) + shares[partition] for partition in ends}


def _read_range(options: KafkaSourceOptions, task: KafkaRange) -> Iterator[pa.RecordBatch]:
    """Every visible record of [start, end) of one partition, in offset order, as Arrow batches.

    Done when a record or the end-of-partition event reaches `end`: under read_committed the last offsets
    of a range may be transaction markers or aborted records that never arrive as messages.
    """
    consumer = options.consumer()
    where = f"{options.where()}, partition {task.partition}"
    try:
        consumer.assign([TopicPartition(options.topic, task.partition, task.start)])
        position = task.start
        rows = _Rows(task.partition)
        last_progress = time.monotonic()
        while position < task.end:
            before = position
            for message in consumer.consume(num_messages=min(BATCH_ROWS, task.end - position), timeout=0.5):
                position = _take(message, task, rows, position, where)
                if position >= task.end:
                    break
            if position > before:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > options.timeout_s:
                raise KafkaSourceError(
                    f"{where}: no progress for {options.timeout_s:g} s at offset {position} while reading "
                    f"[{task.start}, {task.end}): is the broker down, or was the topic truncated?"
                )
            if rows.full():
                yield rows.flush()
        if rows.count:
            yield rows.flush()
    finally:
        consumer.close()


def message_offset(message: Message) -> int:
    """The offset of a consumed message or partition-EOF event (librdkafka leaves it unset on neither)."""
    offset = message.offset()
    if offset is None:
        raise KafkaSourceError(f"a consumed message of {message.topic()} has no offset")
    return offset


def message_value(message: Message) -> bytes:
    """The value of a consumed metadata message: a record batch, never empty (a tombstone is corruption)."""
    value = message.value()
    if value is None:
        raise KafkaSourceError(f"{message.topic()} offset {message.offset()}: a message without a value")
    return value


def _take(message: Message, task: KafkaRange, rows: _Rows, position: int, where: str) -> int:
    """Add a message to `rows` if it is in range; return the next position to read from."""
    error = message.error()
    if error is not None:
        if error.code() == KafkaError._PARTITION_EOF:
            return max(position, message_offset(message))
        if error.code() in _TRANSIENT or error.retriable():  # librdkafka retries; the timeout bounds it
            return position
        raise KafkaSourceError(f"{where}: reading from offset {position} failed: {error.str()}")
    offset = message_offset(message)
    if offset >= task.end:
        return offset
    rows.add(message)
    return offset + 1


class _Rows:
    """Column builders for one Arrow batch."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self._reset()

    def _reset(self) -> None:
        self.offsets: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.timestamps: list[int | None] = []
        self.count = 0
        self.size = 0

    def add(self, message: Message) -> None:
        key, value = message.key(), message.value()
        timestamp = message.timestamp()[1]
        self.offsets.append(message_offset(message))
        self.keys.append(key)
        self.values.append(value)
        self.timestamps.append(None if timestamp < 0 else timestamp)
        self.count += 1
        self.size += len(key or b"") + len(value or b"")

    def full(self) -> bool:
        return self.count >= BATCH_ROWS or self.size >= BATCH_BYTES

    def flush(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array([self.partition] * self.count, pa.int32()),
                pa.array(self.offsets, pa.int64()),
                pa.array(self.keys, pa.binary()),
                pa.array(self.values, pa.binary()),
                pa.array(self.timestamps, pa.int64()),
            ],
            schema=ARROW_SCHEMA,
        )
        self._reset()
        return batch
