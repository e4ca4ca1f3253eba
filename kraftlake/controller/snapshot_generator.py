"""Kafka's SnapshotGenerator on a controller node: once enough bytes were committed since the last snapshot
(or enough time passed with something new), the controller's committed image is written as a snapshot of the
quorum's log. Records keep the versions the image's metadata.version allows.

A snapshot costs as much as the image is big, so the next one waits for at least as many new bytes as the
last snapshot held (Kafka only has the fixed threshold): at a million partitions, a snapshot every 20 MiB
would keep a core busy and starve the quorum's own thread of the GIL.

Only the snapshot is taken here. The log prefix it covers is deleted later, by the quorum client, and only
as far as the publisher has copied it to Kafka (`RaftClient.hold_log_prefix`): the topic must never miss a
batch because a snapshot made it unreadable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from kraftlake.controller.controller import QuorumController
from kraftlake.controller.metadata_log import LeaderAndEpoch
from kraftlake.controller.raft_log import RaftMetadataLog
from kraftlake.records import RecordBatch, SnapshotId

log = logging.getLogger(__name__)
_POLL_S = 1.0


class SnapshotGenerator:
    """A MetadataListener that watches the log's committed bytes; a thread of its own writes the snapshots."""

    def __init__(
        self, controller: QuorumController, metadata_log: RaftMetadataLog, max_new_bytes: int, max_interval_ms: int
    ) -> None:
        self._controller = controller
        self._log = metadata_log
        self._max_new_bytes = max_new_bytes
        self._max_interval_s = max_interval_ms / 1000.0
        self._bytes_at_snapshot = 0  # the log's committed bytes when the latest snapshot was taken or loaded
        self._threshold = max_new_bytes  # new bytes before the next snapshot
        self._since = time.monotonic()
        self._wakeup = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="snapshot-generator", daemon=True)
        self.latest: SnapshotId | None = None

    def start(self) -> SnapshotGenerator:
        self._log.register(self)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()
        self._thread.join(timeout=30)

    # -- MetadataListener (on the quorum's loop) -----------------------------------------------------------

    def handle_commit(self, batches: Sequence[RecordBatch]) -> None:
        """Only looks at the byte count: decoding the batches is the controller's business, on its thread."""
        if self._new_bytes() >= self._threshold:
            self._wakeup.set()

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None:
        self._bytes_at_snapshot = self._log.committed_bytes
        self._since = time.monotonic()
        self.latest = snapshot_id

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        """Every voter snapshots its own log, leader or not."""

    # -- the thread ------------------------------------------------------------------------------------------

    def _new_bytes(self) -> int:
        return self._log.committed_bytes - self._bytes_at_snapshot

    def _due(self) -> bool:
        new_bytes = self._new_bytes()
        if new_bytes >= self._threshold:
            return True
        return new_bytes > 0 and time.monotonic() - self._since >= self._max_interval_s

    def _run(self) -> None:
        while not self._closed:
            self._wakeup.wait(_POLL_S)
            self._wakeup.clear()
            if not self._closed and self._due():
                self.write_snapshot()

    def write_snapshot(self) -> SnapshotId | None:
        """Snapshot the controller's committed image now; None when there is nothing new to snapshot."""
        committed_bytes = self._log.committed_bytes
        try:
            end_offset, records, log_time_ms = self._controller.snapshot_records()
            if self.latest is not None and end_offset <= self.latest.end_offset:
                return None
            snapshot, size = self._log.write_snapshot(end_offset, records, log_time_ms)
        except ValueError as error:  # nothing committed yet, or not a snapshot point (the log moved on)
            log.info("snapshot skipped: %s", error)
            return None
        self._bytes_at_snapshot = committed_bytes
        self._threshold = max(self._max_new_bytes, size)
        self._since = time.monotonic()
        self.latest = snapshot
        log.info("snapshot %s written (%d records)", snapshot.file_name(), len(records))
        return snapshot
