"""The one path from decoded batches to published Delta images, shared by ingest and the streaming job.

A `MetadataPipeline` owns a batch loader (transactions folded), a change recorder (row history), the
Delta sink (the commit protocol) and, after it, the publishers of each commit (Kafka's loader → publishers
shape): the maintainer, which keeps the warehouse cheap to write and read (`kraftlake.lake.maintainer`).

A batch already loaded is dropped (redelivery after a restart, a duplicate after a publisher
failover). A batch beyond a gap is an error for files, which cannot fill it; from the topic it is held
until the gap fills: after a broker lost acknowledged messages the publisher re-sends from the first one
lost, so the topic can hold a batch before the ones it follows. `commit()` ends a commit cycle: pending
records are published unless a transaction is open, and everything visible is written.

An idle cluster's controller writes a NoOp every 500 ms, so a 1 s trigger would publish an image that only
moves the offset every second, a Delta commit to `batches` and `images` each time, forever. With
`idle_publish_ms` set, an image that changes no row waits (in memory, its batches with it) until one that
does comes, or until `idle_publish_ms` passed since the last write: offsets become readable at most that late
on an idle cluster, and every offset is as exact as ever once published. `flush()` writes what waits. A
fleet's pipelines also share an `IdleBudget` (`kraftlake.lake.idle_budget`): an offset-only image due by
`idle_publish_ms` waits further until the budget gives it a turn, so the fleet's idle publishes are a fixed
number a second whatever the number of clusters; an image that changes a row is never budgeted.

Catching up a backlog (`ingest` of a log, the streaming job behind its topic) is the opposite case: every
image changes rows, and an image's write into the current tables costs up to their whole size (a
bootstrap's new keys hash over most buckets), whatever the change. With `coalesce_backlog`, an image whose
last batch was appended more than `CATCH_UP_LAG_MS` before now waits, its row versions with it, until the
held versions are as many as all the history written before them (or `MAX_HELD_VERSIONS`): images at
geometric steps, so each costs about its own change and the whole catch-up about twice the final size,
however loaded the machine (a wall-clock hold was tried first: 30 s at load 20-37 meant 16 images of 1M
partitions). Every offset stays exact (the history holds each version at its own offset); what waits is
visibility, and the first image from recent batches (or `flush()`) publishes everything held.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from kraftlake.image_schema.changes import ChangeRecorder, RowVersion
from kraftlake.lake.idle_budget import IdleBudget
from kraftlake.lake.maintainer import Maintainer
from kraftlake.lake.maintenance import MaintenancePolicy
from kraftlake.lake.sink import DeltaSink
from kraftlake.lake.source import SourceIdentity
from kraftlake.lake.warehouse import Warehouse
from kraftlake.lake.writes import LoadedBatch, PublishedImage
from kraftlake.records import RecordBatch, SnapshotId
from kraftlake.records.headers import epoch_regression
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.loader import BatchLoader, Manifest
from kraftlake.replay.visibility import BatchPublishes, Gap

log = logging.getLogger(__name__)

CATCH_UP_LAG_MS = 60_000  # a batch appended longer ago than this is backlog
MAX_HELD_VERSIONS = 500_000  # row versions held back at most (memory: a few hundred bytes each)


class CommitPublisher(Protocol):
    """Told after each of the sink's commit cycles (Kafka's `MetadataPublisher`, called by the loader)."""

    def on_commit(self, image: PublishedImage | None) -> None: ...


class MetadataPipeline:
    def __init__(
        self,
        warehouse: Warehouse,
        app_id: str = "kraftlake",
        *,
        hold_gaps: bool = False,
        idle_publish_ms: int = 0,
        coalesce_backlog: bool = False,
        policy: MaintenancePolicy | None = None,
        source: SourceIdentity | None = None,
        idle_budget: IdleBudget | None = None,
    ) -> None:
        self.sink = DeltaSink(warehouse, app_id, policy, source)
        self.publishers: tuple[CommitPublisher, ...] = (Maintainer(self.sink),)  # told of every commit, in order
        self.idle_publish_ms = idle_publish_ms
        self.idle_budget = idle_budget
        self.coalesce_backlog = coalesce_backlog
        self._versions: list[RowVersion] = []  # recorded for images held back
        self._last_write = float("-inf")
        self.recorder = ChangeRecorder()
        self.loader = BatchLoader(self._published, observer=self.recorder)
        self.hold_gaps = hold_gaps
        self.held: dict[int, RecordBatch] = {}  # batches beyond a gap, by base offset
        self._latest: PublishedImage | None = None
        self._in_batch: list[int] = []  # offsets published while the current batch loads
        self._batches: list[LoadedBatch] = []
        self.gaps: list[Gap] = []  # gaps this pipeline recorded

    @property
    def loaded_offset(self) -> int:
        """The last offset replayed (-1 before anything)."""
        return self.loader.last_offset

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    def _published(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        self._latest = PublishedImage(image.provenance, manifest.snapshot, image)
        self._in_batch.append(image.provenance.offset)

    def load(self, batch: RecordBatch, source: str | None = None) -> bool:
        """Replay `batch` (and any held batch it unblocks); False when it is a duplicate or held."""
        if batch.last_offset <= self.loaded_offset:
            return False
        if batch.base_offset != self.loaded_offset + 1:
            if not self.hold_gaps or batch.base_offset <= self.loaded_offset:
                raise ReplayError(
                    f"gap in the log: expected offset {self.loaded_offset + 1}, got a batch at {batch.base_offset}",
                    offset=batch.base_offset,
                    source=source,
                )
            self.held.setdefault(batch.base_offset, batch)
            return False
        self._replay(batch, source)
        while (unblocked := self.held.pop(self.loaded_offset + 1, None)) is not None:
            self._replay(unblocked, source)
        self.held = {base: held for base, held in self.held.items() if held.last_offset > self.loaded_offset}
        return True

    def _replay(self, batch: RecordBatch, source: str | None) -> None:
        if (reason := epoch_regression(self.loader.last_epoch, batch.partition_leader_epoch)) is not None:
            raise ReplayError(reason, offset=batch.base_offset, source=source)
        before = self.loader.published
        self._in_batch = []
        self.loader.load_commit(batch, source)
        in_force = None if before is None else before.provenance.offset
        publishes = BatchPublishes(batch.base_offset, batch.last_offset, tuple(self._in_batch), in_force)
        self._batches.append(LoadedBatch(batch, publishes))

    def load_snapshot(
        self, batches: Iterable[RecordBatch], snapshot_id: SnapshotId, source: str
    ) -> PublishedImage | None:
        """Replace the image by a snapshot's and publish it as such (its `images` row says snapshot), after
        committing what the log made visible before it (its own image); a snapshot the log loaded is
        already past is skipped (None). A snapshot that ends past the next offset while history exists (loaded
        here, or in the warehouse: a source resumed) bridges offsets never read (Kafka deleted them): that gap
        is recorded with its image."""
        end = snapshot_id.end_offset - 1
        if end <= self.loaded_offset:
            return None
        self.commit()
        gap = None
        bridged = snapshot_id.bridges(max(self.loaded_offset, self.sink.history_through()))
        if bridged is not None:
            gap = Gap(*bridged, snapshot_id.end_offset, snapshot_id.epoch, int(time.time() * 1000))
            self.gaps.append(gap)
            log.warning("gap recorded in %s: %s", self.sink.warehouse.uri, gap.describe())
        self.loader.load_snapshot(batches, snapshot_id, source)
        if gap is not None and self._latest is not None:
            self._latest = replace(self._latest, gap=gap)
        return self._write()

    def commit(self) -> PublishedImage | None:
        """Write what the loader published (each batch is a commit of its own); returns the image newly
        published, if any."""
        return self._write()

    def flush(self) -> PublishedImage | None:
        """Write an image held back by `idle_publish_ms` (at the end of a run)."""
        return self._write(force=True)

    def _write(self, force: bool = False) -> PublishedImage | None:
        self._versions += self.recorder.take()
        held = not force and self._latest is not None and not self._latest.snapshot
        if held and (self._catching_up() or (not self._versions and not self._idle_due())):
            return None  # hold the image, its batches and its row versions (nothing recorded is dropped)
        if self.idle_budget is not None:
            self.idle_budget.withdraw(self)
        image, self._latest = self._latest, None
        batches, self._batches = self._batches, []
        versions, self._versions = self._versions, []
        self._last_write = time.monotonic()
        published = self.sink.write(image, versions, batches)
        for publisher in self.publishers:
            publisher.on_commit(image)
        return image if published else None

    def _idle_due(self) -> bool:
        """Whether an offset-only image may be published: `idle_publish_ms` passed, and the budget's turn."""
        if not self._since_last_write(self.idle_publish_ms):
            return False
        return self.idle_budget is None or self.idle_budget.grant(self, self._last_write)

    def _since_last_write(self, ms: int) -> bool:
        return (time.monotonic() - self._last_write) * 1000 >= ms

    def _catching_up(self) -> bool:
        """Whether the batches waiting are backlog and the row versions held are still fewer than the
        history written before them."""
        held = len(self._versions)
        if not self.coalesce_backlog or not self._batches or held >= min(MAX_HELD_VERSIONS, self.sink.history_rows):
            return False
        return self._batches[-1].batch.append_time_ms < time.time() * 1000 - CATCH_UP_LAG_MS
