"""The streaming job end to end, on the local Kafka broker and a local SparkSession (local[2]) in this process.

(1) Bootstrap: a synthetic controller log (metadata.version, 6 brokers registered and unfenced, then topics of
10 partitions with RF 3 created 20 per batch: 220 records a batch) is produced to a fresh topic, and the job
(`kraftlake.jobs.materialize`, availableNow, fresh warehouse and checkpoint) runs from `start_query` to the `images` row
covering the last offset. Beside it: the same bytes merely consumed with confluent-kafka, and the pieces of the
job's work timed on their own in this process (decode; replay with the change recorder; Arrow conversion;
Delta writes; CPU seconds, as the job's driver does them, collector paused), so the figures say where the
time goes. "Spark: start to first micro-batch" is query planning (the 100k run is the session's first query;
the 1M run follows it in the same session); "Spark: micro-batch to driver" is the Kafka read in a Spark task
(Spark's own Kafka source, a JVM reader) plus the Arrow transfer to the driver.
Goal: <= 20 s for 1M partitions (issue 21, item 4; it was 60 s).
(2) Steady state: on a warehouse holding 100k partitions, with a 1 s trigger, batches of 1-5
PartitionChangeRecords (ISR shrink/expand, leader moves) are produced one at a time at random 0.2-0.8 s
intervals; latency is from the producer's acknowledgement (the batch is appended to the topic: the stand-in
for its commit on the quorum) to the moment this process, polling the `images` table with delta-rs every
20 ms, sees an image covering it; the micro-batches' own figures follow. Goal: p50 <= 2 s.
(3) Time travel: `WarehouseReader.image_at` at an offset inside a churn batch (no image is published
there) on that warehouse, checked once against an in-memory replay. Goal: <= 2 s, median of 5.

Wall-clock times, so they include whatever else the machine runs (the load average is noted). The broker is
one Apache Kafka node (`kraftlake.cli.broker`), on the same two cores.
"""

from __future__ import annotations

import gc
import os
import random
import shutil
import statistics
import struct
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from deltalake import DeltaTable

from bench import row
from kraftlake.cli.broker import LocalBroker
from kraftlake.image_schema.canonical import canonical_json
from kraftlake.image_schema.changes import ChangeRecorder
from kraftlake.jobs.kafka_topic import collect_messages
from kraftlake.jobs.materialize import MaterializeConfig, MicroBatchWriter, local_spark
from kraftlake.jobs.materialize import start_query as start_materialize
from kraftlake.lake.gc_pause import paused_collector
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.sink import DeltaSink
from kraftlake.lake.topic_replay import decode_messages
from kraftlake.lake.warehouse import IMAGES, Warehouse
from kraftlake.lake.writes import LoadedBatch, PublishedImage
from kraftlake.records import RecordBatch, encode_batch, make_batch, wire
from kraftlake.records import metadata_types as mt
from kraftlake.records.topic import MAX_MESSAGE_BYTES, message_value
from kraftlake.replay.loader import BatchLoader
from kraftlake.replay.visibility import BatchPublishes

NOTES = """\
**The Kafka source, chosen by measurement** (issue 19; 2026-11-25, this machine, load average 15-23 from
other work running beside it: the ratio is the figure to read). The same synthetic bootstrap log, the same
broker (Apache Kafka 4.4.0, one node), the same session, the two readers alternated so neither always pays
the first query's cold start; availableNow, fresh warehouse and checkpoint; medians:

| bootstrap | reader | start to the last image | start to first micro-batch | micro-batches to driver |
|---|---|---:|---:|---:|
| 100k partitions (1 run each) | the project's Python data source (confluent-kafka) | 56.2 s | 38.6 s | 13.8 s |
| 100k partitions (1 run each) | Spark's own Kafka source (`format("kafka")`) | 10.0 s | 2.8 s | 4.1 s |
| 1M partitions (2 runs each) | the project's Python data source | 113.5 s | 23.0 s | 18.6 s |
| 1M partitions (2 runs each) | Spark's own Kafka source | 71.7 s | 3.1 s | 13.4 s |

Spark's source is 1.6x faster end to end at 1M partitions and 5.6x at 100k (it starts no Python worker and
hands Arrow batches straight from the JVM). It also passes every `kafka.*` option to Kafka's Java client
(SASL/SSL under the names Kafka users know) and stops on offsets deleted before they were read
(`failOnDataLoss`). The Python data source (`jobs/kafka_source.py`, 372 lines) was deleted.
"""

BOOTSTRAP_SIZES = (100_000, 1_000_000)
STEADY_PARTITIONS = 100_000
PARTITIONS_PER_TOPIC = 10
TOPICS_PER_BATCH = 20
REPLICATION = 3
BROKERS = 6
METADATA_VERSION = 21
STEADY_SECONDS = 45.0
STEADY_WARMUP_SECONDS = 5.0
POLL_SECONDS = 0.02
TIME_TRAVEL_REPEAT = 5
GOAL_BOOTSTRAP_S = 20.0  # issue 21, item 4 (was 60 s)
GOAL_STEADY_P50_S = 2.0
GOAL_TIME_TRAVEL_S = 2.0
START_MS = 1_750_000_000_000


# -- the synthetic log -----------------------------------------------------------------------------


@dataclass
class ControllerLog:
    """Encoded batches as a controller writes them, and the partitions it created (for churn)."""

    batches: list[bytes] = field(default_factory=list)
    partitions: list[tuple[str, int, tuple[int, ...]]] = field(default_factory=list)
    next_offset: int = 0
    time_ms: int = START_MS

    def append(self, messages: list[Any]) -> RecordBatch:
        batch = make_batch(self.next_offset, 1, self.time_ms, messages)
        self.batches.append(encode_batch(batch))
        self.next_offset += len(messages)
        self.time_ms += 5
        return batch

    @property
    def last_offset(self) -> int:
        return self.next_offset - 1

    @property
    def size(self) -> int:
        return sum(len(raw) for raw in self.batches)


def controller_log(partitions: int, seed: int = 6, start_ms: int = START_MS) -> ControllerLog:
    """Bootstrap of a cluster with `partitions` partitions, appended from `start_ms` on; the same seed gives the
    same log, and a smaller log is a prefix of a bigger one."""
    rng = random.Random(seed)
    log = ControllerLog(time_ms=start_ms)
    directories = [wire.uuid_to_text(rng.randbytes(16)) for _ in range(BROKERS)]
    log.append([mt.FeatureLevelRecord(name="metadata.version", feature_level=METADATA_VERSION)])
    for broker in range(BROKERS):
        log.append([mt.RegisterBrokerRecord(
            broker_id=broker, incarnation_id=wire.uuid_to_text(rng.randbytes(16)), broker_epoch=log.next_offset,
            rack=f"rack-{broker % 3}", log_dirs=(directories[broker],),
        )])
    log.append([mt.UnfenceBrokerRecord(id=broker, epoch=1 + broker) for broker in range(BROKERS)])
    topics = partitions // PARTITIONS_PER_TOPIC
    for first in range(0, topics, TOPICS_PER_BATCH):
        messages: list[Any] = []
        for number in range(first, min(topics, first + TOPICS_PER_BATCH)):
            topic_id = wire.uuid_to_text(rng.randbytes(16))
            messages.append(mt.TopicRecord(name=f"topic-{number:07d}", topic_id=topic_id))
            for partition in range(PARTITIONS_PER_TOPIC):
                replicas = tuple(rng.sample(range(BROKERS), REPLICATION))
                messages.append(mt.PartitionRecord(
                    partition_id=partition, topic_id=topic_id, replicas=replicas, isr=replicas, leader=replicas[0],
                    leader_epoch=0, partition_epoch=0, directories=tuple(directories[r] for r in replicas),
                ))
                log.partitions.append((topic_id, partition, replicas))
        log.append(messages)
    return log


class Churn:
    """ISR shrinks and expands and leader moves on random partitions of a log, as PartitionChangeRecords."""

    def __init__(self, log: ControllerLog, seed: int = 7) -> None:
        self.log = log
        self.rng = random.Random(seed)
        self.state: dict[tuple[str, int], tuple[tuple[int, ...], int]] = {}  # (ISR, leader) of changed ones

    def batch(self) -> tuple[bytes, RecordBatch]:
        messages = []
        for _ in range(self.rng.randint(1, 5)):
            topic_id, partition, replicas = self.rng.choice(self.log.partitions)
            isr, leader = self.state.get((topic_id, partition), (replicas, replicas[0]))
            if len(isr) == len(replicas):  # a follower falls behind
                behind = self.rng.choice([r for r in replicas if r != leader])
                isr = tuple(r for r in replicas if r != behind)
            else:  # it caught up
                isr = replicas
            change = -2  # the leader stays
            if self.rng.random() < 0.3:
                change = leader = self.rng.choice([r for r in isr if r != leader])
            self.state[topic_id, partition] = isr, leader
            messages.append(mt.PartitionChangeRecord(partition_id=partition, topic_id=topic_id, isr=isr, leader=change))
        self.log.time_ms = max(self.log.time_ms, int(time.time() * 1000))
        batch = self.log.append(messages)
        return self.log.batches[-1], batch


# -- broker, topic, Spark ---------------------------------------------------------------------------


def _message_key(raw: bytes) -> bytes:
    return raw[:8]  # the batch's base offset, big-endian, as the publisher keys messages


def create_topic(bootstrap: str) -> str:
    name = f"metadata-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config={"retention.ms": "-1"})])[name].result(timeout=30)
    return name


def producer(bootstrap: str) -> Producer:
    return Producer({
        "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
        "message.max.bytes": MAX_MESSAGE_BYTES,
    })


def produce_all(bootstrap: str, topic: str, batches: list[bytes]) -> None:
    client = producer(bootstrap)
    try:
        for raw in batches:
            client.produce(topic, key=_message_key(raw), value=raw, partition=0)
            client.poll(0)
        if client.flush(120) != 0:
            raise RuntimeError("the broker did not acknowledge every message")
    finally:
        client.close()


def consume_all(bootstrap: str, topic: str, count: int) -> int:
    """Read `count` messages from the start, keeping their values: what any consumer pays. Returns bytes."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False})
    size = got = 0
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 300
        while got < count and time.monotonic() < deadline:
            for message in consumer.consume(min(10_000, count - got), 1.0):
                error = message.error()
                if error is None:
                    got += 1
                    size += len(message_value(message))
                elif error.fatal():
                    raise RuntimeError(str(error))
    finally:
        consumer.close()
    if got != count:
        raise RuntimeError(f"consumed {got} of {count} messages")
    return size


class TimedWriter(MicroBatchWriter):
    """The job's foreachBatch, noting when each micro-batch arrives and how long its driver-side steps take."""

    def __init__(self, config: MaterializeConfig, spark: Any) -> None:
        super().__init__(config, spark)
        self.micro_batches: list[tuple[float, float, float]] = []  # (arrived at, collect s, write s)

    def __call__(self, frame: Any, batch_id: int) -> None:
        start = time.monotonic()
        messages = collect_messages(frame)
        collected = time.monotonic()
        self.write(messages)
        self.micro_batches.append((start, collected - start, time.monotonic() - collected))


@contextmanager
def scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="kraftlake-bench-jobs-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def running_broker(root: Path) -> Iterator[LocalBroker]:
    broker = LocalBroker(root / "broker").start()
    try:
        yield broker
    finally:
        broker.stop()


def _config(broker: LocalBroker, topic: str, root: Path, available_now: bool) -> MaterializeConfig:
    return MaterializeConfig(
        bootstrap_servers=broker.bootstrap_servers, topic=topic, warehouse=str(root / "warehouse"),
        spark_checkpoint=root / "checkpoint", trigger_seconds=1.0, available_now=available_now,
        idle_publish_seconds=0.0, coalesce_backlog=False,
    )


# -- (1) bootstrap ------------------------------------------------------------------------------------


def _label(partitions: int) -> str:
    return f"{partitions // 1000}k" if partitions < 1_000_000 else f"{partitions // 1_000_000}M"


def bootstrap(spark: Any, log: ControllerLog, partitions: int) -> list[dict[str, Any]]:
    label = f"bootstrap {_label(partitions)}"
    records = log.next_offset
    rows = []
    with scratch() as root, running_broker(root) as broker:
        topic = create_topic(broker.bootstrap_servers)
        start = time.perf_counter()
        produce_all(broker.bootstrap_servers, topic, log.batches)
        produce_s = time.perf_counter() - start
        rows.append(row(f"{label}: produce to the topic", produce_s, notes=(
            f"{len(log.batches):,} messages, {records:,} records, {log.size / 1e6:.0f} MB")))
        start = time.perf_counter()
        consume_all(broker.bootstrap_servers, topic, len(log.batches))
        rows.append(row(f"{label}: consume only (confluent-kafka)", time.perf_counter() - start))
        config = _config(broker, topic, root, available_now=True)
        writer = TimedWriter(config, spark)
        start, started_at = time.monotonic(), time.time()
        query = start_materialize(spark, config, writer)
        query.awaitTermination()
        images = Warehouse(config.warehouse).table(IMAGES).to_pyarrow_table().sort_by("offset").to_pylist()
        if not images or images[-1]["offset"] != log.last_offset:
            raise RuntimeError(f"{label}: the job did not publish offset {log.last_offset}")
        total = images[-1]["published_at_ms"] / 1000 - started_at
        rows += [
            row(f"{label}: job, start to the last image", total, notes=f"{len(images)} image(s)"),
            row(f"{label}:   Spark: start to first micro-batch", writer.micro_batches[0][0] - start),
            row(f"{label}:   Spark: micro-batch to driver", sum(b[1] for b in writer.micro_batches),
                 notes="Kafka read in a Spark task + Arrow transfer"),
            row(f"{label}:   driver: decode, replay, write", sum(b[2] for b in writer.micro_batches)),
        ]
    rows += pieces(log, label)
    return rows


def pieces(log: ControllerLog, label: str) -> list[dict[str, Any]]:
    """The driver's work on the same bytes, step by step, in this process (as the job does it)."""
    messages = list(enumerate(log.batches))
    timer = _Timer()
    with scratch() as root, paused_collector():  # as the job's driver does
        with timer("decode"):
            batches = decode_messages("bench", messages)
        recorder = ChangeRecorder()
        published: list[PublishedImage] = []
        loader = BatchLoader(lambda delta, image, manifest: published.append(PublishedImage(image.provenance)),
                             observer=recorder)
        with timer("replay + change recorder"):
            for batch in batches:
                loader.load_commit(batch)
            versions = recorder.take()
        sink = DeltaSink(Warehouse(root / "warehouse"))
        with timer("Arrow conversion"):
            loaded = [LoadedBatch(b, BatchPublishes(b.base_offset, b.last_offset, (), None)) for b in batches]
            writes = sink.prepare(published[-1], versions, loaded)
        with timer("Delta writes"):
            sink.commit(published[-1], writes)
    return [row(f"{label}:   {name}", seconds, "CPU s", "in-process, alone") for name, seconds in timer.times.items()]


class _Timer:
    """CPU time of this process (delta-rs threads included): on a busy machine, wall time measures the others."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.process_time()
        yield
        self.times[name] = time.process_time() - start


# -- (2) steady state and (3) time travel -----------------------------------------------------------


class ImagePoller:
    """Polls the `images` table from this process and notes when each published offset was first seen."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.seen: list[tuple[float, int]] = []  # (monotonic time, offset), offsets increasing
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="image-poller", daemon=True)

    def __enter__(self) -> ImagePoller:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        table = DeltaTable(self.uri)
        version = table.version()
        while not self._stop.wait(POLL_SECONDS):
            table.update_incremental()
            if table.version() == version:
                continue
            seen_at = time.monotonic()
            offsets = [int(c["kraftlake.offset"]) for c in table.history(table.version() - version)
                       if "kraftlake.offset" in c]
            version = table.version()
            if offsets:
                self.seen.append((seen_at, max(offsets)))

    def first_covering(self, offset: int) -> float | None:
        return next((at for at, published in self.seen if published >= offset), None)

    def covered_at(self, offset: int) -> float:
        """When an image covering `offset` was first seen (the run waited for the last one)."""
        at = self.first_covering(offset)
        if at is None:
            raise RuntimeError(f"no image covering offset {offset} was seen")
        return at


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _last_published(warehouse: Warehouse) -> int:
    images = WarehouseReader(warehouse).images() if warehouse.exists() else []
    return images[-1].offset if images else -1


def steady_state_and_time_travel(spark: Any, log: ControllerLog) -> list[dict[str, Any]]:
    label = f"steady state {_label(STEADY_PARTITIONS)}"
    rows = []
    with scratch() as root, running_broker(root) as broker:
        topic = create_topic(broker.bootstrap_servers)
        produce_all(broker.bootstrap_servers, topic, log.batches)
        config = _config(broker, topic, root, available_now=False)
        warehouse = Warehouse(config.warehouse)
        writer = TimedWriter(config, spark)
        query = start_materialize(spark, config, writer)
        try:
            wait_for(lambda: _last_published(warehouse) >= log.last_offset, 600, "the bootstrap image")
            bootstrap_batches = len(writer.micro_batches)
            appended: list[tuple[float, int]] = []  # (acknowledged at, last offset of the batch)
            churn = Churn(log)
            client = producer(broker.bootstrap_servers)
            try:
                with ImagePoller(warehouse.table_uri(IMAGES)) as poller:
                    end = time.monotonic() + STEADY_WARMUP_SECONDS + STEADY_SECONDS
                    measure_from = time.monotonic() + STEADY_WARMUP_SECONDS
                    while time.monotonic() < end:
                        raw, batch = churn.batch()
                        client.produce(topic, key=_message_key(raw), value=raw, partition=0)
                        client.flush(30)
                        if time.monotonic() >= measure_from:
                            appended.append((time.monotonic(), batch.last_offset))
                        time.sleep(churn.rng.uniform(0.2, 0.8))
                    wait_for(lambda: poller.first_covering(log.last_offset) is not None, 60, "the last churn image")
            finally:
                client.close()
        finally:
            query.stop()
        latencies = sorted(poller.covered_at(offset) - at for at, offset in appended)
        p50, p95 = statistics.median(latencies), latencies[int(0.95 * (len(latencies) - 1))]
        steady = writer.micro_batches[bootstrap_batches:]
        images = WarehouseReader(warehouse).images()
        rows += [
            row(f"{label}: commit to image, p50", p50, notes=f"{len(latencies)} batches, 1 s trigger"),
            row(f"{label}: commit to image, p95", p95),
            row(f"{label}: commit to image, max", latencies[-1]),
            row(f"{label}:   micro-batch to driver, p50", statistics.median(b[1] for b in steady),
                 notes=f"{len(steady)} micro-batches"),
            row(f"{label}:   driver: decode, replay, Delta commits, p50", statistics.median(b[2] for b in steady)),
        ]
        rows += time_travel(warehouse, log, {image.offset for image in images})
    met = "met" if p50 <= GOAL_STEADY_P50_S else "NOT met"
    rows.append(row(f"goal: steady state p50 <= {GOAL_STEADY_P50_S:g} s", met, "", f"{p50:.2f} s"))
    return rows


def time_travel(warehouse: Warehouse, log: ControllerLog, published: set[int]) -> list[dict[str, Any]]:
    churn_start = controller_log_offsets(STEADY_PARTITIONS)
    offset = next(o for o in range((churn_start + log.last_offset) // 2, log.last_offset) if o not in published)
    times = []
    for _ in range(TIME_TRAVEL_REPEAT):
        start = time.perf_counter()
        image = WarehouseReader(warehouse).image_at(offset)
        times.append(time.perf_counter() - start)
    partitions = image.tables["partitions"].num_rows
    expected = reference_image(log, offset)
    if canonical_json(image.to_image(), provenance=False) != canonical_json(expected, provenance=False):
        raise RuntimeError(f"time travel to offset {offset} differs from the in-memory replay")
    seconds = statistics.median(times)
    return [
        row(f"time travel: {partitions:,}-partition image at offset {offset:,}", seconds, notes=(
            f"not a published offset; median of {TIME_TRAVEL_REPEAT}; equals the in-memory replay")),
        row(f"goal: time travel <= {GOAL_TIME_TRAVEL_S:g} s", "met" if seconds <= GOAL_TIME_TRAVEL_S else "NOT met",
             "", f"{seconds:.2f} s"),
    ]


def controller_log_offsets(partitions: int) -> int:
    """The first offset after the bootstrap of `partitions` partitions (where churn starts)."""
    topics = partitions // PARTITIONS_PER_TOPIC
    return 1 + BROKERS + BROKERS + topics * (1 + PARTITIONS_PER_TOPIC)


def reference_image(log: ControllerLog, offset: int) -> Any:
    """The image that answers `offset`: the last one published at or before it."""
    answer = None
    loader = BatchLoader()
    for batch in decode_messages("bench", list(enumerate(log.batches))):
        if batch.base_offset > offset:
            break
        loader.load_commit(batch)
        if loader.published is not None and loader.published.provenance.offset <= offset:
            answer = loader.published
    return answer


# -- run ---------------------------------------------------------------------------------------------


def run() -> list[dict[str, Any]]:
    load = os.getloadavg()[0]
    start = time.perf_counter()
    spark = local_spark("kraftlake-bench")
    rows = [row("Spark session start", time.perf_counter() - start, notes=f"load average {load:.1f} at start")]
    largest = controller_log(max(BOOTSTRAP_SIZES))
    for partitions in BOOTSTRAP_SIZES:
        log = largest if partitions == max(BOOTSTRAP_SIZES) else prefix(largest, partitions)
        rows += bootstrap(spark, log, partitions)
        gc.collect()
    total = next(r["value"] for r in rows if r["name"] == f"bootstrap {_label(max(BOOTSTRAP_SIZES))}: "
                 "job, start to the last image")
    rows.append(row(f"goal: bootstrap {_label(max(BOOTSTRAP_SIZES))} <= {GOAL_BOOTSTRAP_S:g} s",
                     "met" if total <= GOAL_BOOTSTRAP_S else "NOT met", "", f"{total:.1f} s"))
    steady = prefix(largest, STEADY_PARTITIONS)
    del largest
    rows += steady_state_and_time_travel(spark, steady)
    rows.append(row("load average at the end", os.getloadavg()[0], ""))
    spark.stop()
    return rows


def prefix(log: ControllerLog, partitions: int) -> ControllerLog:
    """The first batches of `log`, up to `partitions` partitions (a smaller bootstrap of the same cluster)."""
    count = 1 + BROKERS + 1 + partitions // PARTITIONS_PER_TOPIC // TOPICS_PER_BATCH
    small = ControllerLog(log.batches[:count], log.partitions[:partitions])
    small.next_offset = struct.unpack_from(">q", small.batches[-1])[0] + _records_in(small.batches[-1])
    small.time_ms = log.time_ms
    return small


def _records_in(raw: bytes) -> int:
    return struct.unpack_from(">i", raw, 57)[0]
