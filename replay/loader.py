"""The batch loader: Kafka's MetadataBatchLoader state machine, plus snapshot loading.

Records accumulate in a delta; images are published at the points Kafka publishes them, and only there
(`replay.visibility` answers any other offset with the last of them): at the end of a commit (`flush`),
which for kraftlake is each Raft batch (`load_commit`: the image is published at the batch's last offset
unless a transaction is open; Kafka never shows half a batch);
a BeginTransactionRecord that arrives with records pending publishes them first, at the offset before it;
a transaction is folded and published at the end of the batch holding its End. Nothing is published before
the first metadata record (Kafka's `hasSeenRecord`: a fresh cluster's log opens with control records only).

Control batches: KRaftVersion and KRaftVoters records (KIP-853) go to the `voters` sub-image, inside a
metadata transaction or not: they are the Raft layer's state, which no metadata transaction aborts (Kafka's
MetadataLoader ignores them; its Raft client applies them at their offset). Like any batch, a control batch
ends a commit, so the new voters are published at its offset (inside an open transaction: with its End).

Where this differs from Kafka, on purpose: an aborted transaction is always discarded. Kafka drops the
aborted records only when the commit ends while still aborted; if another record follows the Abort in the
same commit, Kafka's delta (still holding the aborted records) is published. Here the delta is reset to the
pre-transaction image at the Abort, so aborted records are never visible whatever follows them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kraftlake.records import Record, RecordBatch, SnapshotId
from kraftlake.records import metadata_types as mt
from kraftlake.records.control_types import SnapshotHeaderRecord
from kraftlake.replay.delta import QUORUM_CONTROL_TYPES, MetadataDelta
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import EMPTY_IMAGE, MetadataImage, Provenance


class TransactionState(enum.Enum):
    NONE = "none"
    STARTED = "started"  # BeginTransactionRecord seen, no record of the transaction yet
    CONTINUED = "continued"  # inside a transaction
    ENDED = "ended"
    ABORTED = "aborted"


@dataclass(frozen=True)
class Manifest:
    """What a published image covers: its provenance, and the batches/bytes loaded since the last one."""

    provenance: Provenance
    num_batches: int
    num_bytes: int
    snapshot: bool = False


# Called with (delta, new image, manifest) for every published image, in offset order.
Publisher = Callable[[MetadataDelta, MetadataImage, Manifest], None]


class LoaderObserver(Protocol):
    """Follows what the loader publishes, to turn each published image into row versions: which rows a record
    may change is only known record by record (`touching`); what is visible is only known at a publish."""

    def touching(self, message: Any, delta: MetadataDelta) -> None:
        """A metadata record (not a transaction marker) is about to be replayed into `delta`."""

    def published(self, delta: MetadataDelta, before: MetadataImage, after: MetadataImage) -> None:
        """`after` is published (offset `after.provenance.offset`): `delta` turned `before`, the last image
        published, into it (and any voters change since `before` is in it too)."""

    def transaction_aborted(self) -> None:
        """The records since the Begin are discarded."""

    def snapshot_loaded(self, before: MetadataImage, after: MetadataImage) -> None:
        """The image was replaced by a snapshot's (any open transaction is dropped); `before` is the last
        image published."""


_OPEN = (TransactionState.STARTED, TransactionState.CONTINUED)
_NONE = TransactionState.NONE


class BatchLoader:
    """Kafka's MetadataBatchLoader with one commit per Raft batch. `image` is the working image (the last one
    published plus any voters change since); `published` the last image published (None: none yet)."""

    def __init__(
        self,
        publish: Publisher | None = None,
        image: MetadataImage = EMPTY_IMAGE,
        observer: LoaderObserver | None = None,
    ) -> None:
        self._publish = publish
        self._observer = observer
        self.published: MetadataImage | None = None if image.metadata_is_empty() else image
        self.reset_to_image(image)

    def reset_to_image(self, image: MetadataImage) -> None:
        """Start over from `image`: an in-flight transaction is dropped (a snapshot load does this)."""
        self.image = image
        self.delta = MetadataDelta(image)
        self.transaction = TransactionState.NONE
        self.last_offset = image.provenance.offset
        self.last_epoch = image.provenance.epoch
        self.last_time_ms = image.provenance.log_time_ms
        self.num_batches = 0
        self.num_bytes = 0
        self.has_seen_record = not image.metadata_is_empty()  # control records are no metadata records

    @property
    def in_transaction(self) -> bool:
        return self.transaction in _OPEN

    def load_commit(self, batch: RecordBatch, source: str | None = None) -> None:
        """kraftlake's commit policy, the one every reader and writer uses: each Raft batch is one commit (as
        a node following the leader gets them; Kafka never shows half a batch), published at its last offset
        unless a transaction is still open."""
        self.load_batch(batch, source)
        self.flush()

    def load_batch(self, batch: RecordBatch, source: str | None = None) -> None:
        """Replay one committed Raft batch into the commit under way (Kafka's `loadBatch`: it publishes only
        before a Begin that arrives with records pending). A control batch changes at most `voters`."""
        self.last_time_ms = batch.append_time_ms
        self.last_epoch = batch.partition_leader_epoch
        if batch.is_control:
            for record in batch.records:
                if type(record.message) in QUORUM_CONTROL_TYPES:
                    self._replay_quorum_record(record.message)
        else:
            self._load_records(batch.records, source)
        self.last_offset = batch.last_offset
        self.num_bytes += batch.size_in_bytes
        self.num_batches += 1

    def flush(self, aligned: bool = True) -> None:
        """End of a commit: publish what is pending unless a transaction is still open."""
        if not self.in_transaction:
            self._publish_pending(aligned)

    def _load_records(self, records: tuple[Record, ...], source: str | None) -> None:
        """The replay hot path: outside any transaction, a record of a type the delta already handles goes
        straight to its handler (after the observer's `touching`, as `_replay` would call it); anything else
        (a marker, a first record of its type) takes `_replay` and its state machine."""
        observer = self._observer
        delta = self.delta
        handlers = delta.handlers
        for index, record in enumerate(records):
            message = record.message
            try:
                handler = handlers.get(type(message)) if self.transaction is _NONE else None
                if handler is not None:
                    self.has_seen_record = True
                    if observer is not None:
                        observer.touching(message, delta)
                    handler(message)
                    continue
                self._replay(message)
            except ReplayError as error:
                if index:
                    self.last_offset = records[index - 1].offset
                raise error.at(record.offset, source) from None
            if self.transaction is TransactionState.STARTED and (index > 0 or self.num_batches > 0):
                if index:
                    self.last_offset = records[index - 1].offset  # the pending image ends before the Begin
                self._publish_pending(aligned=index == 0)
                self.transaction = TransactionState.STARTED
            delta = self.delta
            handlers = delta.handlers

    def _replay(self, message: Any) -> None:
        kind = type(message)
        state = self.transaction
        if kind is mt.BeginTransactionRecord:
            if state in _OPEN:
                raise ReplayError("Encountered BeginTransactionRecord while already in a transaction")
            self.transaction = TransactionState.STARTED
        elif kind is mt.EndTransactionRecord:
            if state not in _OPEN:
                raise ReplayError("Encountered EndTransactionRecord without having seen a BeginTransactionRecord")
            self.transaction = TransactionState.ENDED
        elif kind is mt.AbortTransactionRecord:
            if state not in _OPEN:
                raise ReplayError("Encountered AbortTransactionRecord without having seen a BeginTransactionRecord")
            self.transaction = TransactionState.ABORTED
            self.delta = MetadataDelta(self.image)  # the aborted records are gone for good
            if self._observer is not None:
                self._observer.transaction_aborted()
        else:
            if state is TransactionState.STARTED:
                self.transaction = TransactionState.CONTINUED
            elif state in (TransactionState.ENDED, TransactionState.ABORTED):
                self.transaction = TransactionState.NONE
            self.has_seen_record = True
            if self._observer is not None:
                self._observer.touching(message, self.delta)
            self.delta.replay(message)

    def _replay_quorum_record(self, message: Any) -> None:
        """Raft state changes the working image under any open transaction (its delta then applies on top
        of the new voters, and an Abort keeps them); it is published with the next image."""
        quorum = MetadataDelta(self.image)
        quorum.replay(message)
        self.image = quorum.apply(self.image.provenance)
        self.delta.image = self.image  # the delta never holds a voters sub-delta of its own: none is lost

    def _publish_pending(self, aligned: bool) -> None:
        provenance = Provenance(self.last_offset, self.last_epoch, self.last_time_ms, aligned)
        manifest = Manifest(provenance, self.num_batches, self.num_bytes)
        delta = self.delta
        image = delta.apply(provenance)
        seen = self.has_seen_record  # as Kafka: the records just loaded count, before the reset recomputes it
        self.reset_to_image(image)
        if seen:
            before, self.published = self.published or EMPTY_IMAGE, image
            if self._observer is not None:
                self._observer.published(delta, before, image)
            if self._publish is not None:
                self._publish(delta, image, manifest)

    def load_snapshot(self, batches: Iterable[RecordBatch], snapshot_id: SnapshotId, source: str | None = None) -> None:
        """Replace the image by a snapshot's: whatever the snapshot does not re-assert is removed. A bootstrap
        checkpoint (ending at offset 0) is the image the log starts from, not a published one: Kafka's loader is
        handed it before any high watermark is known, so it holds it (`stillNeedToCatchUp`) and publishes it
        with the end of the log's first batch (`hasSeenRecord` is already true); the offsets inside that batch
        have no image."""
        delta = MetadataDelta(self.image)
        header_time = -1
        num_batches = num_bytes = 0
        for batch in batches:
            num_batches += 1
            num_bytes += batch.size_in_bytes
            for record in batch.records:
                message = record.message
                if isinstance(message, SnapshotHeaderRecord):
                    header_time = message.last_contained_log_timestamp
                elif not batch.is_control or type(message) in QUORUM_CONTROL_TYPES:
                    try:
                        delta.replay(message)
                    except ReplayError as error:
                        raise error.at(record.offset, source) from None
        delta.finish_snapshot()
        provenance = Provenance(snapshot_id.end_offset - 1, snapshot_id.epoch, header_time, True)
        image = delta.apply(provenance)
        if self._observer is not None:
            self._observer.snapshot_loaded(self.published or EMPTY_IMAGE, image)
        self.reset_to_image(image)
        if self.has_seen_record and snapshot_id.end_offset > 0:
            self.published = image
            if self._publish is not None:
                self._publish(delta, image, Manifest(provenance, num_batches, num_bytes, snapshot=True))
