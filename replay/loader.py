"""The batch loader: Kafka's MetadataBatchLoader state machine, plus snapshot loading.

Records accumulate in a delta; images are published at the points Kafka publishes them: at the end of a
commit (`flush`), and when a BeginTransactionRecord arrives with records already pending. A transaction
is folded: its records become visible together at EndTransactionRecord.

Control batches: KRaftVersion and KRaftVoters records (KIP-853) go to the `voters` sub-image at their own
offset, inside a metadata transaction or not: they are the Raft layer's state, which no metadata transaction
holds back or aborts (Kafka's MetadataLoader ignores them; its Raft client applies them at their offset).

Where this differs from Kafka, on purpose: an aborted transaction is always discarded. Kafka drops the
aborted records only when the commit ends while still aborted; if another record follows the Abort in the
same commit, Kafka's delta (still holding the aborted records) is published. Here the delta is reset to the
pre-transaction image at the Abort, so aborted records are never visible whatever follows them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
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
    """Follows visibility record by record, finer than publishing: what exact any-offset history needs."""

    def before_replay(self, offset: int, message: Any, delta: MetadataDelta) -> None:
        """A metadata record (not a transaction marker) is about to be replayed into `delta`."""

    def became_visible(self, offset: int, delta: MetadataDelta) -> None:
        """Every record replayed so far is visible from `offset` on (a plain record, or an End)."""

    def transaction_aborted(self, offset: int) -> None:
        """The records since the Begin are discarded."""

    def snapshot_loaded(self, before: MetadataImage, after: MetadataImage) -> None:
        """The image was replaced by a snapshot's (any open transaction is dropped)."""

    def quorum_changed(self, offset: int, before: MetadataImage, after: MetadataImage) -> None:
        """A KRaftVersion / Voters record changed the `voters` sub-image at `offset` (nothing else differs)."""

_OPEN = (TransactionState.STARTED, TransactionState.CONTINUED)
_NONE = TransactionState.NONE


class BatchLoader:
    def __init__(
        self,
        publish: Publisher | None = None,
        image: MetadataImage = EMPTY_IMAGE,
        observer: LoaderObserver | None = None,
    ) -> None:
        self._publish = publish
        self._observer = observer
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

    def load_batch(self, batch: RecordBatch, source: str | None = None) -> None:
        """Replay one committed batch. A control batch changes at most the `voters` sub-image."""
        self.last_time_ms = batch.append_time_ms
        self.last_epoch = batch.partition_leader_epoch
        if batch.is_control:
            for record in batch.records:
                if type(record.message) in QUORUM_CONTROL_TYPES:
                    self._replay_quorum_record(record.offset, record.message)
        else:
            self._load_records(batch.records, source)
        self.last_offset = batch.last_offset
        self.num_bytes += batch.size_in_bytes
        self.num_batches += 1

    def _load_records(self, records: tuple[Record, ...], source: str | None) -> None:
        """The replay hot path: outside any transaction, a record of a type the delta already handles goes
        straight to its handler (with the observer's two calls around it, as `_replay` would make them);
        anything else (a marker, a first record of its type) takes `_replay` and its state machine."""
        observer = self._observer
        delta = self.delta
        handlers = delta.handlers
        for index, record in enumerate(records):
            message = record.message
            try:
                handler = handlers.get(type(message)) if self.transaction is _NONE else None
                if handler is not None:
                    self.has_seen_record = True
                    if observer is None:
                        handler(message)
                    else:
                        observer.before_replay(record.offset, message, delta)
                        handler(message)
                        observer.became_visible(record.offset, delta)
                    continue
                self._replay(record.offset, message)
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

    def _replay(self, offset: int, message: Any) -> None:
        kind = type(message)
        state = self.transaction
        observer = self._observer
        if kind is mt.BeginTransactionRecord:
            if state in _OPEN:
                raise ReplayError("Encountered BeginTransactionRecord while already in a transaction")
            self.transaction = TransactionState.STARTED
        elif kind is mt.EndTransactionRecord:
            if state not in _OPEN:
                raise ReplayError("Encountered EndTransactionRecord without having seen a BeginTransactionRecord")
            self.transaction = TransactionState.ENDED
            if observer is not None:
                observer.became_visible(offset, self.delta)
        elif kind is mt.AbortTransactionRecord:
            if state not in _OPEN:
                raise ReplayError("Encountered AbortTransactionRecord without having seen a BeginTransactionRecord")
            self.transaction = TransactionState.ABORTED
            self.delta = MetadataDelta(self.image)  # the aborted records are gone for good
            if observer is not None:
                observer.transaction_aborted(offset)
        else:
            if state is TransactionState.STARTED:
                self.transaction = TransactionState.CONTINUED
            elif state in (TransactionState.ENDED, TransactionState.ABORTED):
                self.transaction = TransactionState.NONE
            self.has_seen_record = True
            if observer is not None:
                observer.before_replay(offset, message, self.delta)
            self.delta.replay(message)
            if observer is not None and self.transaction is not TransactionState.CONTINUED:
                observer.became_visible(offset, self.delta)

    def _replay_quorum_record(self, offset: int, message: Any) -> None:
        """Raft state is in force from its offset on: the base image changes under any open transaction (its
        delta then applies on top of the new voters, and an Abort keeps them)."""
        before = self.image
        quorum = MetadataDelta(before)
        quorum.replay(message)
        self.image = quorum.apply(before.provenance)
        self.delta.image = self.image  # the delta never holds a voters sub-delta of its own: none is lost
        if self._observer is not None:
            self._observer.quorum_changed(offset, before, self.image)

    def flush(self, aligned: bool = True) -> None:
        """End of a commit: publish what is pending unless a transaction is still open."""
        if not self.in_transaction:
            self._publish_pending(aligned)

    def _publish_pending(self, aligned: bool) -> None:
        provenance = Provenance(self.last_offset, self.last_epoch, self.last_time_ms, aligned)
        manifest = Manifest(provenance, self.num_batches, self.num_bytes)
        delta = self.delta
        image = delta.apply(provenance)
        seen = self.has_seen_record  # as Kafka: the records just loaded count, before the reset recomputes it
        self.reset_to_image(image)
        if self._publish is not None and seen:
            self._publish(delta, image, manifest)

    def load_snapshot(self, batches: Iterable[RecordBatch], snapshot_id: SnapshotId, source: str | None = None) -> None:
        """Replace the image by a snapshot's: whatever the snapshot does not re-assert is removed."""
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
            self._observer.snapshot_loaded(self.image, image)
        self.reset_to_image(image)
        if self._publish is not None and self.has_seen_record:
            self._publish(delta, image, Manifest(provenance, num_batches, num_bytes, snapshot=True))

    def visible_image(self) -> MetadataImage:
        """The image as of the last loaded offset: pending records included unless a transaction is open."""
        provenance = Provenance(self.last_offset, self.last_epoch, self.last_time_ms, False)
        if self.in_transaction:
            return replace(self.image, provenance=provenance)
        return self.delta.apply(provenance)
