"""The topic producer (`TopicProducer`): on the active controller, every committed Raft batch goes to a Kafka
topic, in order. (Not a publisher in Kafka's sense, the loader's callback: that is `kraftlake.replay.loader.Publisher`.)

One Kafka message per batch: value = the batch's RecordBatch v2 bytes exactly as the log holds them, key =
its base offset as an 8-byte big-endian int64 (`kraftlake.records.topic` defines the format, snapshots included). The
topic has one partition and unlimited retention.

Guarantees, and how they are kept:
- Only committed batches: the publisher reads `read_committed` of the log, never the controller's writes.
- No gap: batches are produced in offset order by an idempotent producer (no reordering or loss inside a
  producer session). Whenever anything fails (broker down, producer fenced, delivery error), the session is
  dropped and the resume point is read back from the topic itself: the batch after the last message there.
- Duplicates are whole batches only: a resume may re-send batches an earlier session (or the previous
  active controller) already wrote; their keys are base offsets seen before, so consumers drop them.
- A broker that is down does not stop the quorum: the publisher retries with exponential backoff and
  catches up from the topic's tail when the broker is back.

If a broker loses acknowledged messages (unflushed writes after a machine crash, an unclean leader
election) while a session goes on, the next message lands where a lost one was: the delivered Kafka offsets
go backwards. The publisher notices, ends the session and re-sends from the first batch lost, so a consumer
that ignores batches beyond a gap in base offsets (and drops those seen before) still sees every batch, in
order.

On a fleet's shared topic (`PublisherConfig.cluster` set) many clusters' publishers write one topic: each
cluster's messages carry its name in the key and go to the one partition the name hashes to
(`kraftlake.records.topic`), so its order holds there. The partition's tail is then another cluster's, so the
resume point is the cluster's own position instead, as Kafka Connect keeps a source's offsets: a compacted
`<topic>-positions` topic, key = the cluster, value = the next offset and its epoch, written only after every
batch before it was acknowledged (`ProducerSession.record_position`). A position may lag the topic (written
every few seconds), never lead it: a restart re-sends whole batches at most. Lost deliveries show as a Kafka
offset that goes backwards for the cluster's own messages (others' messages come in between).

`published_offset` says how far the topic holds the log, as acknowledged. A broker that crashes may still
lose what it acknowledged last (what it had not flushed to disk), so the quorum keeps its log prefix from
`durable_offset()` on, even once a snapshot covers it: the offset acknowledged at least `durable_after_ms`
ago. A standby learns how far the topic goes from its tail now and then, so its own log does not grow
without end while another node publishes.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kraftlake.bridge.source import CommittedLog, Leadership
from kraftlake.records import RecordBatch, SnapshotId, decode_batch
from kraftlake.records.batch import read_header
from kraftlake.records.topic import (
    LOG_KEY,
    MAX_MESSAGE_BYTES,
    cluster_key,
    cluster_partition,
    decode_key,
    encode_key,
    ends_snapshot,
    snapshot_of,
)
from kraftlake.settings import DEFAULT_TOPIC

log = logging.getLogger(__name__)

_REMEMBERED_DELIVERIES = 100_000  # far more than a broker can lose in its last second
STANDBY_READ_TIMEOUT_S = 5.0
POSITION_INTERVAL_S = 5.0  # a shared topic's cluster records its position at most this often (and at a stop)


class PublishError(Exception):
    """The current producer session cannot go on; the publisher starts a new one from the topic's tail."""


@dataclass(frozen=True)
class PublisherConfig:
    bootstrap_servers: str
    topic: str = DEFAULT_TOPIC
    replication_factor: int = -1  # -1: the cluster's default.replication.factor
    retry_backoff_ms: int = 200
    retry_backoff_max_ms: int = 5_000
    delivery_timeout_ms: int = 30_000  # a batch not acknowledged by then ends the session (and is re-sent)
    max_in_flight_batches: int = 10_000
    standby_refresh_ms: int = 10_000  # how often a standby reads how far the topic goes
    durable_after_ms: int = 10_000  # an acknowledged batch counts as safe in the topic this long after
    extra_producer_config: tuple[tuple[str, str], ...] = ()
    cluster: str | None = None  # on a fleet's shared topic: whose batches these are (None: a topic of its own)
    partitions: int = 1  # the topic's partition count (a shared topic's: the fleet file's `topic_partitions`)

    @property
    def partition(self) -> int:
        return 0 if self.cluster is None else cluster_partition(self.cluster, self.partitions)

    @property
    def positions_topic(self) -> str:
        """Where a shared topic's clusters keep their positions (compacted, key = cluster)."""
        return f"{self.topic}-positions"

    def key(self, key: bytes) -> bytes:
        return key if self.cluster is None else cluster_key(self.cluster, key)


class TopicProducer:
    """Produces the committed Raft log into the metadata topic; a `CommitListener`: register it on the node's
    log next to the controller (the controller's `MetadataLog` is a `CommittedLog`)."""

    def __init__(self, source: CommittedLog, node_id: int, config: PublisherConfig) -> None:
        self._source = source
        self._node_id = node_id
        self.config = config
        self._wakeup = threading.Event()
        self._closing = threading.Event()
        self._active = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"topic-producer-{node_id}", daemon=True)
        self._lock = threading.Lock()
        self.published_offset = -1  # the topic holds every batch up to this offset, as far as this node knows
        self._durable_lock = threading.Lock()  # `durable_offset` is asked from the quorum's loop
        self._durable_offset = -1
        self._observed: deque[tuple[float, int]] = deque()  # (monotonic s, published offset then), ageing
        self.sessions = 0  # producer sessions started (each one resumed from the topic's tail)
        self._resend_from: int | None = None  # set when a broker lost acknowledged batches

    # -- listener ------------------------------------------------------------------------------------------

    def handle_commit(self, batches: Sequence[RecordBatch]) -> None:
        self._wakeup.set()

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None:
        self._wakeup.set()

    def handle_leader_change(self, leader: Leadership) -> None:
        self._active = leader.leader_id == self._node_id
        self._wakeup.set()

    # -- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> TopicProducer:
        self._source.register(self)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed = True
        self._closing.set()
        self._wakeup.set()
        self._thread.join(timeout=30)

    # -- the loop ------------------------------------------------------------------------------------------

    def _run(self) -> None:
        backoff = self.config.retry_backoff_ms
        next_refresh = 0.0
        while not self._closed:
            self._wakeup.wait(timeout=0.5)
            if self._closed:
                return
            if not self._active:
                if time.monotonic() >= next_refresh:
                    next_refresh = time.monotonic() + self.config.standby_refresh_ms / 1000
                    self._refresh_from_topic()
                continue
            try:
                self._session()
                backoff = self.config.retry_backoff_ms
            except Exception as error:  # the thread must outlive any producer failure
                # librdkafka reports fatal producer errors (e.g. a broker that forgot our sequence numbers) as
                # KafkaException, sometimes wrapped in SystemError: every one ends the session alike.
                log.warning("publisher: %s; retrying in %d ms", error, backoff)
                self._closing.wait(backoff / 1000)
                backoff = min(backoff * 2, self.config.retry_backoff_max_ms)

    def _advance(self, offset: int) -> None:
        if offset > self.published_offset:
            self.published_offset = offset
            with self._durable_lock:
                self._observed.append((time.monotonic(), offset))

    def _lost_after(self, offset: int) -> None:
        """The broker lost batches it had acknowledged, from `offset + 1` on."""
        self.published_offset = min(self.published_offset, offset)
        with self._durable_lock:
            self._durable_offset = min(self._durable_offset, offset)
            self._observed = deque((when, min(seen, offset)) for when, seen in self._observed)

    def durable_offset(self) -> int:
        """The offset the topic held `durable_after_ms` ago already: what the quorum may stop keeping."""
        horizon = time.monotonic() - self.config.durable_after_ms / 1000
        with self._durable_lock:
            while self._observed and self._observed[0][0] <= horizon:
                self._durable_offset = max(self._durable_offset, self._observed.popleft()[1])
            return self._durable_offset

    def _refresh_from_topic(self) -> None:
        """On a standby: the topic's tail is as far as the active node's publisher has got."""
        try:
            tail = resume_offset(self.config, timeout_s=STANDBY_READ_TIMEOUT_S)
        except Exception as error:  # an unreachable broker only delays the standby's log cleanup
            log.debug("publisher: cannot read the topic's tail: %s", error)
            return
        self._advance(tail - 1)

    def _session(self) -> None:
        """One producer session: resume after the topic's last batch, then follow the committed log."""
        ensure_topic(self.config)
        next_offset = resume_offset(self.config)
        self._advance(next_offset - 1)
        if self._resend_from is not None:
            next_offset = min(next_offset, self._resend_from)
            self._resend_from = None
        self.sessions += 1
        log.info("publisher: session %d resumes at offset %d", self.sessions, next_offset)
        session = ProducerSession(self.config)
        try:
            while self._active and not self._closed:
                self._wakeup.clear()
                for base_offset, raw in self._read(next_offset):
                    if not self._active or self._closed:
                        break
                    last_offset = read_header(raw, 0, "<batch>", verify_crc=False).last_offset
                    session.produce(base_offset, last_offset, raw)
                    next_offset = last_offset + 1
                session.flush()
                self._advance(session.acknowledged_last_offset)
                if not session.caught_up():
                    continue
                self._wakeup.wait(timeout=0.5)
        finally:
            session.close()
            self._resend_from = session.resend_from
            if session.resend_from is not None:
                self._lost_after(session.resend_from - 1)

    def _read(self, start_offset: int) -> Any:
        try:
            yield from self._source.read_committed(start_offset)
        except LookupError as error:
            raise PublishError(
                f"offset {start_offset} is no longer in the log (it was snapshotted away): the topic cannot be "
                f"completed without a gap ({error})"
            ) from None


class ProducerSession:
    """An idempotent producer and the checks that its deliveries left no hole in the topic."""

    def __init__(self, config: PublisherConfig) -> None:
        self.config = config
        settings = {
            "bootstrap.servers": config.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": config.delivery_timeout_ms,
            "queue.buffering.max.messages": config.max_in_flight_batches,
            "linger.ms": 5,
            "compression.type": "none",
            "message.max.bytes": MAX_MESSAGE_BYTES,  # one message per Raft batch: up to 8 MiB
            **dict(config.extra_producer_config),
        }
        self.producer = Producer(settings)
        self.in_flight = 0
        self.error: str | None = None
        self.acknowledged_last_offset = -1
        self.resend_from: int | None = None  # first base offset the broker lost after acknowledging it
        self._acknowledged: dict[int, int] = {}  # Kafka offset -> base offset, this session
        self._last_kafka_offset: int | None = None

    def produce(self, base_offset: int, last_offset: int, raw: bytes, key: bytes | None = None) -> None:
        """Send one batch; `key` defaults to the log batch key (a snapshot's batches pass theirs)."""
        self._raise_if_failed()
        while True:
            try:
                self.producer.produce(
                    self.config.topic, key=self.config.key(encode_key(base_offset) if key is None else key), value=raw,
                    partition=self.config.partition,
                    on_delivery=functools.partial(self._delivered, base_offset=base_offset, last_offset=last_offset),
                )
                break
            except BufferError:
                self.producer.poll(0.1)  # the local queue is full: wait for acknowledgements
                self._raise_if_failed()
        self.in_flight += 1
        self.producer.poll(0)

    def _delivered(self, error: KafkaError | None, message: Message, *, base_offset: int, last_offset: int) -> None:
        self.in_flight -= 1
        if error is not None:
            self.error = self.error or f"delivery failed: {error.str()}"
            return
        kafka_offset = message.offset()
        assert kafka_offset is not None  # set on every message delivered without error
        previous = self._last_kafka_offset
        # a topic of its own is contiguous; on a shared partition other clusters' messages come in between
        interleaved = self.config.cluster is not None and previous is not None and kafka_offset > previous
        if previous is not None and kafka_offset != previous + 1 and not interleaved:
            self.error = self.error or (
                f"the topic's offsets jumped from {previous} to {kafka_offset}: the broker lost or interleaved "
                f"messages"
            )
            if kafka_offset <= previous:  # lost: our first batch at or after this Kafka offset must go out again
                self.resend_from = self._first_at_or_after(kafka_offset)
        self._last_kafka_offset = kafka_offset
        self._acknowledged[kafka_offset] = base_offset
        if len(self._acknowledged) > _REMEMBERED_DELIVERIES:
            del self._acknowledged[next(iter(self._acknowledged))]
        if self.error is None:
            self.acknowledged_last_offset = last_offset

    def _first_at_or_after(self, kafka_offset: int) -> int:
        """The base offset of this session's first batch delivered at or after `kafka_offset`; 0 (send all
        again) when deliveries that old are no longer remembered."""
        oldest = next(iter(self._acknowledged), None)
        if oldest is None or oldest > kafka_offset:
            return 0
        return min(base for at, base in self._acknowledged.items() if at >= kafka_offset)

    def record_position(self, next_offset: int, last_epoch: int) -> None:
        """A shared topic: the cluster's resume point, to be called once every batch before `next_offset` was
        acknowledged (a position never runs ahead of the topic)."""
        assert self.config.cluster is not None
        value = json.dumps({"next_offset": next_offset, "last_epoch": last_epoch}).encode()
        self.producer.produce(self.config.positions_topic, key=self.config.cluster.encode(), value=value,
                              partition=0, on_delivery=self._position_delivered)
        self.producer.poll(0)

    def _position_delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.error = self.error or f"delivery of the position failed: {error.str()}"

    def _raise_if_failed(self) -> None:
        if self.error is not None:
            raise PublishError(self.error)

    def flush(self) -> None:
        self.producer.flush(1.0)
        self._raise_if_failed()

    def caught_up(self) -> bool:
        return self.in_flight == 0

    def close(self) -> None:
        """Deliver what the broker takes within a second, drop the rest (the next session resumes from the
        topic's tail) and destroy the producer now: its delivery callbacks hold this session, a cycle the
        garbage collector cannot see into, so a dropped producer would live on and keep reconnecting."""
        self.producer.flush(1.0)
        self.producer.purge()
        self.producer.close()


def ensure_topic(config: PublisherConfig) -> None:
    """Create the topic (1 partition, or a shared topic's count; unlimited retention, messages as big as a Raft
    batch) unless it exists; refuse one with another partition count (a cluster's order lives in one partition).
    A shared topic's positions topic too."""
    admin = AdminClient({"bootstrap.servers": config.bootstrap_servers})
    metadata_config = {"retention.ms": "-1", "retention.bytes": "-1", "max.message.bytes": str(MAX_MESSAGE_BYTES)}
    _ensure(admin, config, config.topic, config.partitions, metadata_config)
    if config.cluster is not None:  # compacted: the newest position per cluster stays, the rest goes
        _ensure(admin, config, config.positions_topic, 1, {"cleanup.policy": "compact", "segment.ms": "600000"})


def _ensure(admin: AdminClient, config: PublisherConfig, name: str, partitions: int, settings: dict[str, str]) -> None:
    # every topic listed: a client asking for one by name has a broker with auto.create.topics.enable create it,
    # with the broker's default partition count (seen on the shared topic)
    topic = admin.list_topics(timeout=10).topics.get(name)
    if topic is not None and topic.error is None:
        if len(topic.partitions) != partitions:
            raise PublishError(
                f"topic {name} has {len(topic.partitions)} partitions: it needs exactly {partitions}"
            )
        return
    new_topic = NewTopic(name, num_partitions=partitions, replication_factor=config.replication_factor,
                         config=settings)
    try:
        admin.create_topics([new_topic])[name].result(timeout=30)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    for partition in range(partitions):
        _wait_for_leader(admin, name, partition)


def _wait_for_leader(admin: AdminClient, topic: str, partition: int, timeout_s: float = 30.0) -> None:
    """Kafka acknowledges a new topic before its brokers know the partition: reading the topic's tail right
    away fails with an unknown partition. Wait until the metadata names the partition's leader."""
    deadline = time.monotonic() + timeout_s
    while True:
        described = admin.list_topics(topic, timeout=10).topics.get(topic)
        if described is not None and described.error is None and described.partitions.get(partition) is not None \
                and described.partitions[partition].leader >= 0:
            return
        if time.monotonic() > deadline:
            raise PublishError(f"topic {topic} was created but partition {partition} has no leader after "
                               f"{timeout_s:.0f} s")
        time.sleep(0.1)


def last_message(config: PublisherConfig, timeout_s: float = 30.0) -> Message | None:
    """The topic's last message (None when it is empty)."""
    consumer = Consumer({
        "bootstrap.servers": config.bootstrap_servers, "group.id": "kraftlake-publisher",
        "enable.auto.commit": False, "enable.partition.eof": True,
    })
    try:
        partition = TopicPartition(config.topic, 0)
        low, high = consumer.get_watermark_offsets(partition, timeout=timeout_s, cached=False)
        if high <= low:
            return None
        consumer.assign([TopicPartition(config.topic, 0, high - 1)])
        message = consumer.poll(timeout_s)
        if message is None or message.error() is not None:
            raise PublishError(f"could not read the last message of {config.topic}: {message and message.error()}")
        return message
    finally:
        consumer.close()


@dataclass(frozen=True)
class TopicTail:
    """How far the topic holds the log: the next offset it lacks, and what its last message was."""

    next_offset: int
    last_batch: bytes | None = None  # the last message's bytes when it is a log batch
    cut_snapshot: SnapshotId | None = None  # a snapshot whose footer never reached the topic
    last_epoch: int = 0  # the leader epoch of the offset before `next_offset` (what a Raft fetch from there sends)


def read_tail(config: PublisherConfig, timeout_s: float = 30.0) -> TopicTail:
    """The topic's tail from its last message: a log batch (key = its base offset) or a snapshot's batch
    (`kraftlake.records.topic`, as `kraftlake publish` writes one first when a log no longer starts at 0). On a
    shared topic: the cluster's recorded position (`read_position`)."""
    if config.cluster is not None:
        return read_position(config, timeout_s)
    message = last_message(config, timeout_s)
    if message is None:
        return TopicTail(0)
    value = message.value()
    if not value:
        raise PublishError(f"the last message of {config.topic} has no value: is it really the metadata topic?")
    header = read_header(value, 0, config.topic, verify_crc=False)
    key = message.key() or b""
    snapshot = snapshot_of(key)
    if snapshot is not None:
        closed = ends_snapshot(decode_batch(value, config.topic))
        return TopicTail(snapshot.end_offset, cut_snapshot=None if closed else snapshot, last_epoch=snapshot.epoch)
    if len(key) != LOG_KEY.size or decode_key(key) != header.base_offset:
        raise PublishError(f"the last message of {config.topic} has a key that is not its batch's base offset")
    return TopicTail(header.last_offset + 1, last_batch=value, last_epoch=header.partition_leader_epoch)


def read_position(config: PublisherConfig, timeout_s: float = 30.0) -> TopicTail:
    """A shared topic's cluster: the newest position it recorded (the positions topic read to its end), or
    offset 0 when it has none (a cluster that published before recording one only re-sends whole batches)."""
    assert config.cluster is not None
    consumer = Consumer({
        "bootstrap.servers": config.bootstrap_servers, "group.id": "kraftlake-publisher",
        "enable.auto.commit": False,
    })
    wanted = config.cluster.encode()
    found: bytes | None = None
    try:
        partition = TopicPartition(config.positions_topic, 0)
        low, high = consumer.get_watermark_offsets(partition, timeout=timeout_s, cached=False)
        consumer.assign([TopicPartition(config.positions_topic, 0, OFFSET_BEGINNING)])
        at = low  # the consumer's position: compaction leaves holes, so no offset need be the last one
        deadline = time.monotonic() + timeout_s
        while at < high:
            if time.monotonic() > deadline:
                raise PublishError(f"could not read {config.positions_topic} to its end ({high}) within "
                                   f"{timeout_s:.0f} s: at {at}")
            for message in consumer.consume(10_000, timeout=1.0):
                if message.error() is not None:
                    raise PublishError(f"could not read {config.positions_topic}: {message.error()}")
                if message.key() == wanted:
                    found = message.value()
            at = max(at, consumer.position([partition])[0].offset)
    finally:
        consumer.close()
    if found is None:
        return TopicTail(0)
    position = json.loads(found)
    return TopicTail(int(position["next_offset"]), last_epoch=int(position["last_epoch"]))


def resume_offset(config: PublisherConfig, timeout_s: float = 30.0) -> int:
    """The first offset not in the topic: after its last batch or snapshot, or 0 for an empty topic."""
    tail = read_tail(config, timeout_s)
    if tail.cut_snapshot is not None:
        raise PublishError(
            f"{config.topic} ends inside snapshot {tail.cut_snapshot.file_name()}: only `kraftlake publish` of a "
            "directory holding it can complete it"
        )
    return tail.next_offset
