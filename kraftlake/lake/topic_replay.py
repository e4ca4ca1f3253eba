"""The metadata topic into the pipeline: what the streaming job's driver does with each micro-batch's
messages, apart from Spark (which only hands them over, `jobs.materialize`).

Each Kafka message is one committed Raft batch (value: RecordBatch v2 bytes, key: base offset) or one batch
of a snapshot (`kraftlake.records.topic`: `kraftlake publish` puts one first when a real cluster's log no longer starts
at 0). The messages of a micro-batch are decoded, their log batches replayed in metadata-offset order
(batches already applied are dropped, transactions folded across micro-batches too) and the image is
committed once per micro-batch; a snapshot is gathered until its footer arrives (across micro-batches too),
then loaded as Kafka's loader loads one (`MetadataPipeline.load_snapshot`).
The replay state lives in memory between micro-batches; after a restart it is rebuilt by reading the topic
up to where the stream resumes (`TopicReads`; the sink skips everything already written), so a job SIGKILLed
at any point and restarted ends with the same tables as one that never stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple, Protocol

from kraftlake.lake.gc_pause import paused_collector
from kraftlake.lake.idle_budget import IdleBudget
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.source import SourceIdentity
from kraftlake.lake.warehouse import Warehouse
from kraftlake.lake.writes import PublishedImage
from kraftlake.records import RecordBatch, SnapshotId, decode_batch
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.topic import ends_snapshot, snapshot_of, starts_snapshot

log = logging.getLogger(__name__)

# told of each image a micro-batch (or the final flush) published, with the history rows it wrote
OnPublish = Callable[[PublishedImage, int], None]


class TopicMessage(NamedTuple):
    kafka_offset: int
    key: bytes | None
    value: bytes


class TopicFormatError(Exception):
    """A bad batch or message in the topic: names the topic and the Kafka offset; nothing past it is published."""


class TopicReads(Protocol):
    """The topic as read outside the stream, to rebuild the replay state after a restart."""

    def messages_before(self, kafka_offset: int) -> Iterable[list[TopicMessage]]:
        """The messages before `kafka_offset` (what earlier runs consumed), in chunks, in Kafka offset order."""
        ...

    def end_offset(self) -> int:
        """The Kafka offset after the topic's last message."""
        ...


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
            raise TopicFormatError(str(error)) from None
    return sorted(batches, key=lambda batch: batch.base_offset)


class TopicReplay:
    """The topic's messages, a micro-batch at a time, into a pipeline over `warehouse` (built at the first
    micro-batch, caught up with what earlier runs consumed through `reads`). A gap is held until the
    publisher re-sends what a broker lost; `idle_publish_ms`, `coalesce_backlog` and `idle_budget` are the
    pipeline's."""

    def __init__(
        self, warehouse: Warehouse, source: SourceIdentity, topic: str, reads: TopicReads, *, idle_publish_ms: int,
        coalesce_backlog: bool, on_publish: OnPublish | None = None, idle_budget: IdleBudget | None = None,
    ) -> None:
        self.topic = topic
        self.reads = reads
        self.on_publish = on_publish
        self._history_rows = 0  # history rows through the last image told
        self._open_pipeline = partial(
            MetadataPipeline, warehouse, hold_gaps=True, idle_publish_ms=idle_publish_ms,
            coalesce_backlog=coalesce_backlog, source=source, idle_budget=idle_budget,
        )
        self.pipeline: MetadataPipeline | None = None
        self.pending_snapshot: PendingSnapshot | None = None

    def write(self, messages: list[TopicMessage]) -> None:
        """Replay one micro-batch's messages, in Kafka offset order, and publish."""
        with paused_collector():
            if self.pipeline is None:
                if not messages:
                    return
                self.pipeline = self._rebuilt(before_kafka_offset=messages[0].kafka_offset)
            self._apply(self.pipeline, messages)

    def flush(self) -> None:
        """Publish an offset-only image still held. A run that found nothing new built no state, while an
        earlier run may have been stopped holding one: rebuild from the topic first, then publish."""
        with paused_collector():
            if self.pipeline is None:
                self.pipeline = self._rebuilt(before_kafka_offset=self.reads.end_offset())
            self._published(self.pipeline, self.pipeline.flush())

    def _rebuilt(self, before_kafka_offset: int) -> MetadataPipeline:
        """The replay state after the topic's messages before `before_kafka_offset` (what earlier runs
        consumed; the sink skips what the warehouse already holds)."""
        pipeline = self._open_pipeline()
        self._history_rows = pipeline.sink.history_rows
        for chunk in self.reads.messages_before(before_kafka_offset):
            self._apply(pipeline, chunk)
        return pipeline

    def _published(self, pipeline: MetadataPipeline, image: PublishedImage | None) -> None:
        """Tell `on_publish` of an image this run published, on any path: a micro-batch, a snapshot's footer, the
        read-back of a restart or of a cluster that joined (the sink returns no image it finds already written, so
        an image an earlier run published is not told again)."""
        written = max(0, pipeline.sink.history_rows - self._history_rows)
        self._history_rows = pipeline.sink.history_rows
        if image is not None and self.on_publish is not None:
            self.on_publish(image, written)

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
        self._published(pipeline, pipeline.commit())
        if pipeline.held:
            log.warning(
                "waiting for offset %d: %d later batch(es) held until the publisher re-sends it",
                pipeline.loaded_offset + 1, len(pipeline.held),
            )

    def _load_log(self, pipeline: MetadataPipeline, run: list[TopicMessage]) -> None:
        if not run:
            return
        if self.pending_snapshot is not None:  # its publisher stopped half-way, then went on with the log
            log.warning("snapshot %s: its footer never came; dropped", self.pending_snapshot.snapshot.file_name())
            self.pending_snapshot = None
        for batch in decode_messages(self.topic, [(message.kafka_offset, message.value) for message in run]):
            pipeline.load(batch, source=f"topic {self.topic}")

    def _add_snapshot_batch(self, pipeline: MetadataPipeline, snapshot: SnapshotId, message: TopicMessage) -> None:
        """Gather a snapshot's batches; at its footer, hand them to the pipeline."""
        where = f"topic {self.topic} message at Kafka offset {message.kafka_offset}"
        batch = decode_messages(self.topic, [(message.kafka_offset, message.value)])[0]
        if starts_snapshot(batch):
            self.pending_snapshot = PendingSnapshot(snapshot)  # a snapshot cut short before is dropped
        elif self.pending_snapshot is None or self.pending_snapshot.snapshot != snapshot:
            raise TopicFormatError(f"{where}: a batch of snapshot {snapshot.file_name()} without its header")
        pending = self.pending_snapshot
        pending.batches.append(batch)
        if ends_snapshot(batch):
            self.pending_snapshot = None
            self._published(pipeline, pipeline.commit())  # the log before the snapshot, as `load_snapshot` would
            self._published(pipeline, pipeline.load_snapshot(
                pending.batches, snapshot, f"topic {self.topic} snapshot {snapshot.file_name()}"))
