"""The one path from decoded batches to published Delta images, shared by ingest and the streaming job.

A `MetadataPipeline` owns a batch loader (transactions folded), a change recorder (row history) and the
Delta sink. A batch already loaded is dropped (redelivery after a restart, a duplicate after a publisher
failover). A batch beyond a gap is an error for files, which cannot fill it; from the topic it is held
until the gap fills: after a broker lost acknowledged messages the publisher re-sends from the first one
lost, so the topic can hold a batch before the ones it follows. `commit()` ends a commit cycle: pending
records are published unless a transaction is open, and everything visible is written.

An idle cluster's controller writes a NoOp every 500 ms, so a 1 s trigger would publish an image that only
moves the offset every second, a Delta commit to `batches` and `images` each time, forever. With
`idle_publish_ms` set, an image that changes no row waits (in memory, its batches with it) until one that
does comes, or until `idle_publish_ms` passed since the last write: offsets become readable at most that late
on an idle cluster, and every offset is as exact as ever once published. `flush()` writes what waits.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from image_schema.changes import ChangeRecorder
from lake.maintenance import MaintenancePolicy
from lake.sink import DeltaSink, PublishedImage
from lake.warehouse import Warehouse
from records import RecordBatch, SnapshotId
from records.headers import epoch_regression
from replay.delta import MetadataDelta
from replay.errors import ReplayError
from replay.image import MetadataImage
from replay.loader import BatchLoader, Manifest


class MetadataPipeline:
    def __init__(
        self,
        warehouse: Warehouse,
        app_id: str = "kraftlake",
        *,
        hold_gaps: bool = False,
        idle_publish_ms: int = 0,
        policy: MaintenancePolicy | None = None,
    ) -> None:
        self.sink = DeltaSink(warehouse, app_id, policy)
        self.idle_publish_ms = idle_publish_ms
        self._last_write = float("-inf")
        self.recorder = ChangeRecorder()
        self.loader = BatchLoader(self._published, observer=self.recorder)
        self.hold_gaps = hold_gaps
        self.held: dict[int, RecordBatch] = {}  # batches beyond a gap, by base offset
        self._latest: PublishedImage | None = None
        self._batches: list[RecordBatch] = []

    @property
    def loaded_offset(self) -> int:
        """The last offset replayed (-1 before anything)."""
        return self.loader.last_offset

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    def _published(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        self._latest = PublishedImage(image.provenance, manifest.snapshot, image)

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
        self.loader.load_batch(batch, source)
        self._batches.append(batch)

    def load_snapshot(
        self, batches: Iterable[RecordBatch], snapshot_id: SnapshotId, source: str
    ) -> PublishedImage | None:
        """Replace the image by a snapshot's and publish it as such (its `images` row says snapshot)."""
        self.loader.load_snapshot(batches, snapshot_id, source)
        return self._write()

    def commit(self) -> PublishedImage | None:
        """Publish what is visible and write it; returns the image newly published, if any."""
        self.loader.flush()
        return self._write()

    def flush(self) -> PublishedImage | None:
        """Write an image held back by `idle_publish_ms` (at the end of a run)."""
        return self._write(force=True)

    def _write(self, force: bool = False) -> PublishedImage | None:
        versions = self.recorder.take()
        if not (force or versions or self._latest is None or self._latest.snapshot or self._idle_due()):
            return None  # only offsets moved: hold the image and its batches (nothing recorded is dropped)
        image, self._latest = self._latest, None
        batches, self._batches = self._batches, []
        self._last_write = time.monotonic()
        return image if self.sink.write(image, versions, batches) else None

    def _idle_due(self) -> bool:
        return (time.monotonic() - self._last_write) * 1000 >= self.idle_publish_ms
