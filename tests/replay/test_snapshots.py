"""Snapshot loading: MetadataLoaderTest ML5, ML10, ML13 and finishSnapshot (whatever a snapshot does not
re-assert is removed, except metadata.version and the producer-id block); snapshots written by
`snapshot_batches` load back to the same image, in memory and through a `.checkpoint` file."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.records import RecordBatch, SnapshotId, encode_batch
from kraftlake.records import metadata_types as mt
from kraftlake.records.control_types import SnapshotFooterRecord, SnapshotHeaderRecord
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import MetadataImage, Provenance
from kraftlake.replay.loader import BatchLoader, TransactionState
from kraftlake.replay.log_replay import replay_paths
from kraftlake.replay.writer import snapshot_batches
from tests.replay.builders import MV, B, E, Recorder, T, apply_records, control, data, rich_records


def header(time_ms: int) -> RecordBatch:
    return control(0, 100, 0, [SnapshotHeaderRecord(version=0, last_contained_log_timestamp=time_ms)])


def test_ml5_empty_snapshots() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_snapshot([header(4000)], SnapshotId(201, 100))
    assert len(recorder) == 0, "an empty image from an empty snapshot: no record seen yet"
    loader.load_batch(data(250, 50, 0, [MV(7)]))
    loader.flush()
    assert len(recorder) == 1 and recorder.latest.manifest.provenance.offset == 250
    loader.load_snapshot([header(4000)], SnapshotId(301, 100))
    assert len(recorder) == 2
    update = recorder.latest
    assert update.manifest.snapshot
    assert update.manifest.provenance == Provenance(300, 100, 4000, True)
    image = update.image
    assert not image.is_empty()
    assert image.features.metadata_version == 7
    assert dict(image.features.finalized) == {}
    for name in ("cluster", "topics", "configs", "client_quotas", "producer_ids", "acls", "scram",
                 "delegation_tokens"):
        assert getattr(image, name).is_empty(), name


def test_an_empty_snapshot_removes_all_but_metadata_version_and_the_producer_id_block() -> None:
    before = apply_records(rich_records())
    loader = BatchLoader(image=before)
    loader.load_snapshot([header(5)], SnapshotId(1000, 3))
    after = loader.image
    assert after.features.metadata_version == before.features.metadata_version
    assert after.producer_ids == before.producer_ids and not after.producer_ids.is_empty()
    assert dict(after.features.finalized) == {}
    assert after == MetadataImage(provenance=Provenance(999, 3, 5, True), features=after.features,
                                  producer_ids=before.producer_ids)


def test_ml10_reloading_snapshots() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_snapshot([data(0, 100, 0, [MV(7)]), data(1, 100, 0, [T("foo")])], SnapshotId(101, 100))
    assert recorder.latest.image.provenance.offset == 100
    assert recorder.latest.delta.image.is_empty()
    loader.load_snapshot([data(0, 100, 0, [MV(7)]), data(1, 100, 0, [T("foo")])], SnapshotId(201, 100))
    assert recorder.latest.image.provenance.offset == 200
    assert not recorder.latest.delta.image.is_empty()
    assert recorder.latest.image.topics == recorder.updates[0].image.topics
    loader.load_snapshot([data(0, 100, 0, [MV(29)]), data(1, 100, 0, [T("bar")])], SnapshotId(401, 100))
    image = recorder.latest.image
    assert (image.provenance.offset, image.features.metadata_version) == (400, 29)
    assert set(image.topics.by_name) == {"bar"}
    loader.load_batch(data(500, 100, 0, [MV(9)]))
    loader.flush()
    assert recorder.latest.image.features.metadata_version == 9


def test_ml13_a_snapshot_during_a_transaction_drops_the_transaction() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_batch(data(400, 1, 0, [MV(7)]))
    loader.flush()
    loader.load_batch(data(500, 1, 0, [B(), T("foo", "HQSM3ccPQISrHqYK_C8GpA")]))
    loader.flush()
    assert "foo" not in recorder.latest.image.topics.by_name
    loader.load_snapshot([data(0, 101, 0, [T("foo", "Uum7sfhHQP-obSvfywmNUA")])], SnapshotId(601, 101))
    assert recorder.latest.image.topics.by_name["foo"].topic_id == "Uum7sfhHQP-obSvfywmNUA"
    assert loader.transaction is TransactionState.NONE
    with pytest.raises(ReplayError, match="EndTransactionRecord without having seen a BeginTransactionRecord"):
        loader.load_batch(data(602, 101, 0, [E()]))


def test_a_snapshot_record_that_cannot_apply_names_its_place_in_the_file() -> None:
    loader = BatchLoader()
    with pytest.raises(ReplayError, match="Unable to find topic") as info:
        loader.load_snapshot(
            [header(0), data(1, 1, 0, [MV(), mt.PartitionRecord(partition_id=0, topic_id="AAAAAAAAAAAAAAAAAAAAZA")])],
            SnapshotId(10, 1), source="10-1.checkpoint",
        )
    assert (info.value.offset, info.value.source) == (2, "10-1.checkpoint")


def test_snapshot_batches_are_header_data_footer_at_the_snapshot_epoch() -> None:
    image = apply_records(rich_records(), offset=41)
    batches = snapshot_batches(image, 1234, max_records_per_batch=10)
    assert isinstance(batches[0].records[0].message, SnapshotHeaderRecord)
    assert isinstance(batches[-1].records[0].message, SnapshotFooterRecord)
    assert batches[0].is_control and batches[-1].is_control
    assert not any(batch.is_control for batch in batches[1:-1])
    assert all(len(batch.records) <= 10 for batch in batches)
    offsets = [record.offset for batch in batches for record in batch.records]
    assert offsets == list(range(len(offsets)))
    assert {batch.partition_leader_epoch for batch in batches} == {image.provenance.epoch}
    assert {batch.append_time_ms for batch in batches} == {1234}


def test_a_written_snapshot_loads_back_to_the_same_image_over_another_image() -> None:
    original = apply_records(rich_records(), offset=41)
    unrelated = apply_records([MV(14), T("stale"), mt.ProducerIdsRecord(broker_id=1, next_producer_id=5)])
    loader = BatchLoader(image=unrelated)
    loader.load_snapshot(snapshot_batches(original, 99), SnapshotId(42, original.provenance.epoch))
    assert loader.image == original


def test_a_written_snapshot_file_replays_to_the_same_canonical_image(tmp_path: Path) -> None:
    original = apply_records(rich_records(), offset=41)
    path = tmp_path / SnapshotId(42, 1).file_name()
    path.write_bytes(b"".join(encode_batch(batch) for batch in snapshot_batches(original, 77)))
    result = replay_paths([path])
    assert canonical_json(result.image) == canonical_json(original)
    assert result.image == original


def test_loading_a_snapshot_of_the_empty_image_keeps_the_loader_quiet() -> None:
    recorder = Recorder()
    loader = BatchLoader(recorder)
    loader.load_snapshot([], SnapshotId(0, 0))
    assert len(recorder) == 0
    assert loader.image.is_empty()
    assert loader.image.provenance == Provenance(-1, 0, -1, True)
