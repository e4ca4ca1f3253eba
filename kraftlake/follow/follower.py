"""`kraftlake follow`: a live quorum's committed metadata log into the metadata topic, exactly once by offset.

The messages and the resume rule are `kraftlake publish`'s (`kraftlake.bridge.log_dir_publisher`), through the same
producer session (`kraftlake.bridge.publisher`): one message per batch, value = the batch's bytes as the leader's
log holds them, key = its base offset, or the snapshot id for a snapshot's batches (`kraftlake.records.topic`).

Where to start is read from the topic: after its last batch (with that batch's epoch, which the leader checks
against its own log), or after a whole snapshot. A topic that ends inside a snapshot (a run stopped while
publishing one) starts over at offset 0, which the leader answers with its newest snapshot, published whole.
An empty topic starts at 0 too: the log from its first offset, or the snapshot first when the leader has one
(Kafka deleted the older log, or keeps a snapshot beside it): the warehouse then starts at that snapshot.

A producer failure ends the session; the next one resumes from the topic's tail, as the publisher does. On a
fleet's shared topic the tail is the cluster's recorded position (`kraftlake.bridge.publisher.read_position`),
recorded every `POSITION_INTERVAL_S` once what it covers is acknowledged, and when the follower stops.

The status file (`kraftlake.follow.status`) is rewritten several times per stall period, so that its reader can
tell a follower that makes progress from one that is STALLED; a snapshot that starts past the topic's last
offset (Kafka deleted offsets before they were read) is logged and kept in it as a gap.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kraftlake.bridge.publisher import (
    POSITION_INTERVAL_S,
    ProducerSession,
    PublisherConfig,
    TopicTail,
    ensure_topic,
    read_tail,
)
from kraftlake.follow.client import FollowError
from kraftlake.follow.observer import CommittedBatch, FetchedSnapshot, Observer, ObserverConfig
from kraftlake.follow.status import Status, noticed, write_status
from kraftlake.follow.tail import DirectoryTail, TailConfig
from kraftlake.records.batch import decode_batch
from kraftlake.records.topic import encode_snapshot_key, ends_snapshot, starts_snapshot
from kraftlake.replay.visibility import Gap
from kraftlake.settings import DEFAULT_STALL_SECONDS

log = logging.getLogger(__name__)


class SourcePosition(Protocol):
    next_offset: int
    high_watermark: int
    advanced_at: float
    answered_at: float

    def describe(self) -> str: ...


class Source(Protocol):
    """Where committed batches come from: a quorum's leader (`Observer`) or a node's directory (`DirectoryTail`)."""

    @property
    def position(self) -> SourcePosition: ...

    @property
    def leader_changes(self) -> int: ...

    @property
    def reconnects(self) -> int: ...

    def poll(self) -> list[CommittedBatch | FetchedSnapshot]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class FollowConfig:
    source: ObserverConfig | TailConfig
    publisher: PublisherConfig
    log_interval_s: float = 10.0  # how often the position is logged (and on every leader change)
    status_file: Path | None = None  # for `kraftlake follow --status`
    stall_after_s: float = DEFAULT_STALL_SECONDS  # the STALLED threshold, written into the status file

    @property
    def status_interval_s(self) -> float:
        """How often the status file is rewritten: several times a stall period, so a reader never takes a
        follower that moves for one that stalled."""
        return min(self.log_interval_s, self.stall_after_s / 3)


def open_source(config: ObserverConfig | TailConfig, tail: TopicTail) -> Source:
    """The source, positioned after what the topic holds."""
    if isinstance(config, TailConfig):
        # the directory's snapshot replaces one the topic ends inside; the log then follows from its end
        return DirectoryTail(config, tail.next_offset, snapshot_first=tail.cut_snapshot is not None)
    # a topic that ends inside a snapshot starts over at 0, which the leader answers with its newest snapshot
    start, epoch = (0, 0) if tail.cut_snapshot is not None else (tail.next_offset, tail.last_epoch)
    return Observer(config, start, epoch)


class Follower:
    """Runs until `stop` is set or following cannot go on (FollowError); a topic broker that fails once it was
    reached is waited out (one never reached raises its own error)."""

    def __init__(self, config: FollowConfig, stop: threading.Event | None = None) -> None:
        self.config = config
        self.stop = stop or threading.Event()
        self.published_offset = -1  # the topic holds the log up to here, as acknowledged
        self.snapshots = 0  # snapshots published
        self.messages = 0  # batches copied, a snapshot's included
        self.copied_bytes = 0
        self.last_batch_time = -1.0  # the newest copied batch's append time, epoch seconds
        self.gaps: list[Gap] = []  # offsets Kafka deleted before they were read, bridged by a snapshot
        self._reached_topic = False  # until the topic's tail was read once, a failing broker is an error
        self._source: Source | None = None  # the session's; the last one's position stays the facts after it
        self._reconnects_before = 0  # by the sources of sessions that ended
        self._last_epoch = 0  # the leader epoch of the last batch published (a shared topic's position has it)
        self._recorded = -1  # a shared topic: the offset the recorded position covers

    def run(self) -> None:
        backoff = self.config.publisher.retry_backoff_ms / 1000
        while not self.stop.is_set():
            try:
                self._session()
                return
            except FollowError:
                raise
            except Exception as error:  # the topic's broker failed: resume from its tail, as the publisher does
                if not self._reached_topic:
                    raise
                log.warning("follow: publishing to %s failed: %s; resuming from the topic's tail in %.1f s",
                            self.config.publisher.topic, error, backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, self.config.publisher.retry_backoff_max_ms / 1000)

    def _session(self) -> None:
        publisher = self.config.publisher
        ensure_topic(publisher)
        tail = read_tail(publisher)
        self._reached_topic = True
        if self._source is not None:
            self._reconnects_before += self._source.reconnects
        self._source = source = open_source(self.config.source, tail)
        start = source.position.next_offset
        log.info("follow: topic %s holds the log up to offset %d; fetching from offset %d",
                 publisher.topic, tail.next_offset - 1, start)
        self.published_offset = tail.next_offset - 1 if tail.cut_snapshot is None else -1
        self._last_epoch, self._recorded = tail.last_epoch, self.published_offset
        session = ProducerSession(publisher)
        next_log = next_status = next_position = time.monotonic()
        written = source.position.answered_at  # the answer time the status file holds
        changes = source.leader_changes
        try:
            while not self.stop.is_set():
                handed = source.poll()
                for item in handed:
                    self._produce(session, item)
                if handed:
                    session.flush()
                    while not session.caught_up():
                        session.flush()
                    self.published_offset = max(self.published_offset, source.position.next_offset - 1)
                now = time.monotonic()
                if now >= next_position:
                    self._record_position(session)
                    next_position = now + POSITION_INTERVAL_S
                if now >= next_log or source.leader_changes != changes:
                    log.info("follow: %s", self._line(source))
                    next_log = now + self.config.log_interval_s
                    changes = source.leader_changes
                # due, or the source answers again after a silence the file still shows (it would read as STALLED)
                if now >= next_status or source.position.answered_at > written + self.config.status_interval_s:
                    self._write_status()
                    next_status, written = now + self.config.status_interval_s, source.position.answered_at
            self._record_position(session)  # stopped: the next start resumes here
        finally:
            source.close()
            session.close()

    def _record_position(self, session: ProducerSession) -> None:
        """A shared topic: the cluster's resume point, once everything before it is acknowledged (the loop
        flushes after each poll) and when it moved."""
        if self.config.publisher.cluster is not None and self.published_offset > self._recorded:
            session.record_position(self.published_offset + 1, self._last_epoch)
            self._recorded = self.published_offset

    def holds(self) -> str:
        """Where the topic stands, as the stop and failure lines say it (a fleet's: one per cluster)."""
        return f"topic {self.config.publisher.topic} holds the log up to offset {self.published_offset}"

    def _line(self, source: Source) -> str:
        return f"{source.position.describe()}; {self.messages} messages published"

    def status(self) -> Status | None:
        """Where following stands now (None before the first session): what the status file holds and the
        metrics show (`kraftlake.metrics.follow`), from one place."""
        source = self._source
        if source is None:
            return None
        position = source.position
        return Status(
            self._line(source), self.published_offset, position.next_offset, position.high_watermark,
            position.advanced_at, position.answered_at, self.config.stall_after_s, time.time(), os.getpid(),
            tuple(self.gaps), reconnects=self._reconnects_before + source.reconnects, copied_batches=self.messages,
            copied_bytes=self.copied_bytes, last_batch_time=self.last_batch_time,
        )

    def _write_status(self) -> None:
        status = self.status()
        if self.config.status_file is not None and status is not None:
            write_status(self.config.status_file, status)

    def _produce(self, session: ProducerSession, item: CommittedBatch | FetchedSnapshot) -> None:
        if isinstance(item, CommittedBatch):
            session.produce(item.header.base_offset, item.header.last_offset, item.raw)
            self._copied((item,))
            self._last_epoch = item.header.partition_leader_epoch
            return
        batches = item.batches
        source = f"snapshot {item.snapshot_id.file_name()}"
        if (bridged := item.snapshot_id.bridges(self.published_offset)) is not None:
            gap = Gap(*bridged, item.snapshot_id.end_offset, item.snapshot_id.epoch, int(time.time() * 1000))
            self.gaps.append(gap)
            log.warning("follow: %s", noticed(gap))
        if not batches or not starts_snapshot(decode_batch(batches[0].raw, source)) or not ends_snapshot(
            decode_batch(batches[-1].raw, source)
        ):
            raise FollowError(f"{source} from the leader is not a whole snapshot (no header or footer record)")
        key_offset = item.snapshot_id.end_offset - 1
        for batch in batches:
            session.produce(key_offset, key_offset, batch.raw, key=encode_snapshot_key(item.snapshot_id))
        self._copied(batches)
        self._last_epoch = item.snapshot_id.epoch
        self.snapshots += 1
        log.info("follow: published %s (%d batches); the log follows from offset %d",
                 source, len(batches), item.snapshot_id.end_offset)

    def _copied(self, batches: tuple[CommittedBatch, ...]) -> None:
        self.messages += len(batches)
        self.copied_bytes += sum(len(batch.raw) for batch in batches)
        newest = max((batch.header.max_timestamp for batch in batches), default=-1)
        self.last_batch_time = max(self.last_batch_time, newest / 1000)
