"""The batch loader: Kafka's MetadataBatchLoaderTest (BL1-BL9) and the MetadataLoaderTest cases that apply
to a loader without the publishers' catch-up gate (ML6, ML8, ML11, ML12, ML14), restated from
../shared/reference/loader-test-cases.md. Snapshot loading has its own file, test_snapshots.py."""

from __future__ import annotations

import pytest

from kraftlake.records import RecordBatch, SnapshotId
from kraftlake.records.control_types import KRaftVersionRecord, LeaderChangeMessage, SnapshotHeaderRecord
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import EMPTY_IMAGE, MetadataImage, Provenance
from kraftlake.replay.loader import BatchLoader
from tests.replay.builders import MV, A, B, E, N, P, Recorder, T, change, control, data, remove


def has_topic(image: MetadataImage, name: str) -> bool:
    return name in image.topics.by_name


def loaded(*batches: RecordBatch, flush: bool = False) -> tuple[BatchLoader, Recorder]:
    recorder = Recorder()
    loader = BatchLoader(recorder, EMPTY_IMAGE)
    for batch in batches:
        loader.load_batch(batch)
    if flush:
        loader.flush()
    return loader, recorder


# -- MetadataBatchLoaderTest ------------------------------------------------------------------------


def test_bl1_aligned_transaction_batches() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(data(10, 1, 10, [B(), T("foo"), P("foo", 0)]))
    assert len(recorder) == 0
    loader.load_batch(data(13, 2, 10, [N(), N(), N()]))
    assert len(recorder) == 0, "NoOps inside a transaction do not end it"
    loader.load_batch(data(16, 2, 30, [P("foo", 1), P("foo", 2), E()]))
    assert len(recorder) == 0
    loader.flush(aligned=True)
    assert len(recorder) == 1
    update = recorder.latest
    assert has_topic(update.image, "foo")
    assert set(update.image.topics.by_name["foo"].partitions) == {0, 1, 2}
    assert update.manifest.provenance == Provenance(18, 2, 0, True)
    assert (update.manifest.num_batches, update.manifest.num_bytes) == (3, 50)
    assert update.image.provenance == update.manifest.provenance


def test_bl2a_singleton_begin_and_end_in_one_commit() -> None:
    """The NoOps pending when B arrives in a later batch are published first, with the epoch of B's batch."""
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(data(13, 1, 30, [N(), N(), N()]))
    loader.load_batch(data(16, 2, 30, [B()]))
    assert len(recorder) == 1
    first = recorder.latest
    assert not has_topic(first.image, "bar")
    assert first.manifest.provenance == Provenance(15, 2, 0, True)
    assert (first.manifest.num_batches, first.manifest.num_bytes) == (1, 30)
    loader.load_batch(data(17, 3, 10, [T("bar"), P("bar", 0), P("bar", 1)]))
    assert len(recorder) == 1
    loader.load_batch(data(20, 4, 10, [E()]))
    assert len(recorder) == 1
    loader.flush()
    assert len(recorder) == 2
    assert has_topic(recorder.latest.image, "bar")
    assert recorder.latest.manifest.provenance == Provenance(20, 4, 0, True)
    assert (recorder.latest.manifest.num_batches, recorder.latest.manifest.num_bytes) == (3, 50)


def test_bl2b_singleton_begin_and_end_one_commit_per_batch() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    counts = []
    for batch in (
        data(13, 1, 30, [N(), N(), N()]),
        data(16, 2, 30, [B()]),
        data(17, 3, 10, [T("bar"), P("bar", 0), P("bar", 1)]),
        data(20, 4, 10, [E()]),
    ):
        loader.load_batch(batch)
        loader.flush()
        counts.append(len(recorder))
    assert counts == [1, 1, 1, 2]
    assert has_topic(recorder.latest.image, "bar")
    assert recorder.latest.manifest.provenance.offset == 20


def test_bl3_unexpected_begin_is_an_error_naming_its_offset() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(data(10, 2, 30, [B(), T("foo"), P("foo", 0)]))
    with pytest.raises(ReplayError, match="Encountered BeginTransactionRecord while already in a transaction") as info:
        loader.load_batch(data(13, 2, 30, [B()]))
    assert info.value.offset == 13
    loader.flush()
    assert len(recorder) == 0, "the first transaction is still open"
    assert loader.in_transaction


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (E(), "Encountered EndTransactionRecord without having seen a BeginTransactionRecord"),
        (A(), "Encountered AbortTransactionRecord without having seen a BeginTransactionRecord"),
    ],
    ids=["bl4_end", "bl5_abort"],
)
def test_bl4_bl5_end_or_abort_without_begin(marker: object, message: str) -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(data(10, 2, 30, [T("bar"), P("bar", 0), P("bar", 1)]))
    with pytest.raises(ReplayError, match=message) as info:
        loader.load_batch(data(13, 2, 30, [marker]), source="seg.log")
    assert (info.value.offset, info.value.source) == (13, "seg.log")
    assert "offset 13" in str(info.value)
    loader.flush()
    assert len(recorder) == 1
    assert has_topic(recorder.latest.image, "bar"), "records before the bad marker are not affected"


def test_bl6_multiple_transactions_in_one_batch() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(
        data(10, 42, 100, [B(), T("foo"), P("foo", 0), P("foo", 1), P("foo", 2), E(), B(), T("bar"), P("bar", 0),
                           P("bar", 1), E()])
    )
    assert len(recorder) == 1
    first = recorder.latest
    assert (first.manifest.num_batches, first.manifest.num_bytes) == (0, 0)
    assert first.manifest.provenance == Provenance(15, 42, 0, False)
    assert has_topic(first.image, "foo") and not has_topic(first.image, "bar")
    loader.flush()
    assert len(recorder) == 2
    last = recorder.latest
    assert (last.manifest.num_batches, last.manifest.num_bytes) == (1, 100)
    assert last.manifest.provenance == Provenance(20, 42, 0, True)
    assert has_topic(last.image, "foo") and has_topic(last.image, "bar")


def test_bl7_multiple_transactions_in_one_batch_with_noops() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(
        data(10, 42, 100, [N(), B(), T("foo"), P("foo", 0), N(), P("foo", 1), P("foo", 2), E(), N(), B(), N(),
                           T("bar"), P("bar", 0), P("bar", 1), N(), E(), N()])
    )
    assert len(recorder) == 2
    assert recorder.updates[0].manifest.provenance == Provenance(10, 42, 0, False)
    latest = recorder.latest
    assert latest.manifest.num_bytes == 0
    assert latest.manifest.provenance == Provenance(18, 42, 0, False)
    assert has_topic(latest.image, "foo") and not has_topic(latest.image, "bar")
    loader.flush()
    assert len(recorder) == 3
    assert recorder.latest.manifest.num_bytes == 100
    assert recorder.latest.manifest.provenance == Provenance(26, 42, 0, True)
    assert has_topic(recorder.latest.image, "foo") and has_topic(recorder.latest.image, "bar")


@pytest.mark.parametrize("abort", [False, True], ids=["end", "abort"])
def test_bl8_one_transaction_in_multiple_batches(abort: bool) -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(data(16, 2, 10, [B()]))
    loader.load_batch(data(17, 3, 30, [T("bar"), P("bar", 0), P("bar", 1)]))
    loader.load_batch(data(20, 4, 10, [A() if abort else E()]))
    assert len(recorder) == 0
    loader.flush()
    assert len(recorder) == 1, "an aborted transaction still publishes: the offset advances"
    update = recorder.latest
    assert (update.manifest.num_batches, update.manifest.num_bytes) == (3, 50)
    assert update.manifest.provenance == Provenance(20, 4, 0, True)
    assert has_topic(update.image, "bar") is not abort
    if abort:
        assert not update.delta.has_changes()


def test_bl9_transaction_alignment_on_batch_boundary() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(
        data(10, 42, 100, [N(), N(), N(), B(), T("foo"), P("foo", 0), P("foo", 1), P("foo", 2), E(), N(), N(), N()])
    )
    assert len(recorder) == 1
    assert recorder.latest.manifest.num_bytes == 0
    assert recorder.latest.manifest.provenance == Provenance(12, 42, 0, False)
    loader.load_batch(data(22, 42, 10, [B()]))
    assert len(recorder) == 2
    assert recorder.latest.manifest.num_bytes == 100
    assert recorder.latest.manifest.provenance == Provenance(21, 42, 0, True)
    assert has_topic(recorder.latest.image, "foo")


def test_begin_flush_uses_the_epoch_and_time_of_the_batch_holding_begin() -> None:
    """BLx2: the flushed records were written in epoch 1 at time 100, the provenance names B's batch."""
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(data(0, 1, 10, [T("foo")], append_time_ms=100))
    loader.load_batch(data(1, 2, 10, [B(), T("bar")], append_time_ms=200))
    assert recorder.latest.manifest.provenance == Provenance(0, 2, 200, True)


# -- aborted transactions: always discarded (BLx1 differs from Kafka on purpose) ---------------------


def test_blx1_abort_followed_by_a_record_in_the_same_commit_stays_discarded() -> None:
    """Kafka publishes the aborted T(foo) here (the NoOp after the Abort moves the state to NO while the
    delta still holds it). This project always discards aborted records: foo never becomes visible."""
    loader, recorder = loaded(data(0, 1, 10, [MV()]), data(1, 1, 10, [B(), T("foo")]), data(3, 1, 10, [A()]),
                              data(4, 1, 10, [N()]), flush=True)
    assert not has_topic(recorder.latest.image, "foo")
    assert recorder.latest.image.features.metadata_version == 7
    assert recorder.latest.manifest.provenance.offset == 4
    assert loader.published is recorder.latest.image


def test_blx1_abort_then_begin_publishes_nothing_of_the_aborted_transaction() -> None:
    """The controller's failover pattern [A, B, ...]: Kafka emits the aborted records at the B; we do not."""
    _loader, recorder = loaded(
        data(0, 1, 10, [MV()]),
        data(1, 1, 10, [B("Bootstrap records"), T("foo")]),
        data(3, 2, 10, [A("Controller failover"), B("Bootstrap records"), T("bar"), E()]),
        flush=True,
    )
    assert all(not has_topic(update.image, "foo") for update in recorder.updates)
    assert has_topic(recorder.latest.image, "bar")


def test_abort_keeps_the_records_published_before_the_transaction() -> None:
    _loader, recorder = loaded(data(0, 1, 10, [MV(), T("foo")]), data(2, 1, 10, [B(), T("bar"), A()]),
                              data(5, 1, 10, [N()]), flush=True)
    assert has_topic(recorder.latest.image, "foo")
    assert not has_topic(recorder.latest.image, "bar")


def test_a_begin_after_abort_in_the_same_batch_starts_a_fresh_transaction() -> None:
    _loader, recorder = loaded(data(0, 1, 10, [MV(), B(), T("foo"), A(), B(), T("bar"), E()]), flush=True)
    assert has_topic(recorder.latest.image, "bar") and not has_topic(recorder.latest.image, "foo")


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "reason"),
    [(change("ghost", 0, leader=1), "Unable to find topic"), (change("foo", 7, leader=1), "Unable to find partition")],
    ids=["unknown_topic", "unknown_partition"],
)
def test_a_record_that_cannot_apply_names_its_offset_and_source(record: object, reason: str) -> None:
    loader = BatchLoader()
    loader.load_batch(data(0, 1, 10, [MV(), T("foo"), P("foo", 0)]))
    with pytest.raises(ReplayError, match=reason) as info:
        loader.load_batch(data(10, 1, 10, [N(), N(), record]), source="x.log")
    assert (info.value.offset, info.value.source) == (12, "x.log")
    assert str(info.value).startswith("x.log, offset 12: ")
    assert loader.last_offset == 11, "the records before the bad one were loaded"


def test_an_error_inside_a_transaction_names_the_record_not_the_begin() -> None:
    loader = BatchLoader()
    with pytest.raises(ReplayError) as info:
        loader.load_batch(data(5, 1, 10, [B(), T("foo"), remove("ghost")]))
    assert info.value.offset == 7


# -- MetadataLoaderTest cases without the catch-up gate ----------------------------------------------


def test_ml6_an_empty_control_batch_advances_the_offset() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_snapshot([data(0, 100, 0, [MV()]), data(1, 100, 0, [T("foo")])], SnapshotId(201, 100))
    loader.load_batch(control(300, 100, 10, [SnapshotHeaderRecord(version=0, last_contained_log_timestamp=0)],
                              append_time_ms=4000))
    loader.flush()
    update = recorder.latest
    assert update.manifest.provenance == Provenance(300, 100, 4000, True)
    assert (update.manifest.num_batches, update.manifest.num_bytes, update.manifest.snapshot) == (1, 10, False)
    assert update.image.features.metadata_version == 7
    assert has_topic(update.image, "foo")
    assert not update.delta.has_changes()


def test_ml7_kraft_version_control_records_do_not_touch_the_image() -> None:
    loader, recorder = loaded(data(0, 1, 10, [MV(), T("foo")]))
    loader.flush()
    before = recorder.latest.image
    loader.load_batch(control(2, 1, 10, [KRaftVersionRecord(version=0, kraft_version=1)]))
    loader.flush()
    after = recorder.latest.image
    assert after.provenance.offset == 2
    assert (after.features, after.topics) == (before.features, before.topics)


def test_ml8_each_commit_publishes_its_last_offset() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_snapshot([data(0, 100, 0, [MV()]), data(1, 100, 0, [T("foo")])], SnapshotId(201, 100))
    assert recorder.latest.manifest.provenance.offset == 200
    assert recorder.latest.manifest.snapshot
    loader.load_batch(data(201, 100, 10, [remove("foo")]))
    loader.flush()
    assert [u.manifest.provenance.offset for u in recorder.updates] == [200, 201]
    assert not has_topic(recorder.latest.image, "foo")


@pytest.mark.parametrize("abort", [False, True], ids=["end", "abort"])
def test_ml11_transaction_across_commits(abort: bool) -> None:
    """Base offsets repeat on purpose (BLx3): the loader trusts the batches it is given."""
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(data(400, 1, 10, [MV()]))
    loader.flush()
    for batch in (data(500, 1, 10, [B(), T("foo")]), data(500, 1, 10, [P("foo", 0), P("foo", 1)])):
        loader.load_batch(batch)
        loader.flush()
        assert not has_topic(recorder.latest.image, "foo")
        assert loader.published is recorder.latest.image
    loader.load_batch(data(500, 1, 10, [A() if abort else E()]))
    loader.flush()
    assert has_topic(recorder.latest.image, "foo") is not abort
    assert loader.published is recorder.latest.image


def test_ml12_transaction_within_one_batch() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(data(400, 1, 10, [MV()]))
    loader.flush()
    loader.load_batch(data(500, 1, 10, [B(), T("foo"), E()]))
    loader.flush()
    assert has_topic(recorder.latest.image, "foo")


def test_ml14_no_image_is_published_before_a_record_is_seen() -> None:
    """A real log starts with a LeaderChange control batch: nothing to publish until a record arrives."""
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(control(0, 1, 10, [LeaderChangeMessage(version=0, leader_id=1, voters=(), granting_voters=())]))
    loader.flush()
    assert len(recorder) == 0
    loader.load_batch(data(1, 1, 10, [MV()]))
    loader.flush()
    assert len(recorder) == 1
    assert all(not update.image.is_empty() for update in recorder.updates)


def test_noop_records_count_as_seen_records() -> None:
    """Kafka's hasSeenRecord: a commit of NoOps publishes (an empty image, but the log was read)."""
    _loader, recorder = loaded(data(0, 1, 10, [N(), N()]), flush=True)
    assert len(recorder) == 1
    assert recorder.latest.image.provenance.offset == 1


# -- kraftlake's commits: one per Raft batch ------------------------------------------------------------


def test_load_commit_publishes_each_batch_whole_and_a_transaction_at_the_end_of_its_end_batch() -> None:
    """A batch is never shown half applied: one image at its last offset; inside an open transaction none;
    records pending before a Begin inside a batch at the offset before it."""
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_commit(data(0, 3, 10, [MV(), T("foo"), P("foo", 0)], append_time_ms=7))
    assert [u.image.provenance for u in recorder.updates] == [Provenance(2, 3, 7, True)]
    loader.load_commit(data(3, 3, 10, [T("x"), B(), T("bar")], append_time_ms=8))
    assert recorder.latest.image.provenance == Provenance(3, 3, 8, False)
    assert has_topic(recorder.latest.image, "x") and not has_topic(recorder.latest.image, "bar")
    loader.load_commit(data(6, 3, 10, [P("bar", 0), E(), N()], append_time_ms=9))
    assert recorder.latest.image.provenance == Provenance(8, 3, 9, True)
    assert has_topic(recorder.latest.image, "bar")
    assert [u.image.provenance.offset for u in recorder.updates] == [2, 3, 8]


def test_publishing_shares_untouched_sub_images() -> None:
    loader, recorder = loaded(data(0, 1, 10, [MV(), T("foo")]), flush=True)
    before = recorder.latest.image
    loader.load_batch(data(2, 1, 10, [P("foo", 0)]))
    loader.flush()
    after = recorder.latest.image
    assert after.features is before.features
    assert after.cluster is before.cluster
    assert after.topics is not before.topics
