"""Replaying files to any offset: which files a path means, the image that answers offset N (the last one
published at or before it: mid-batch, inside a transaction), what is refused (before the first image, past
the end), snapshot then log."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.records import RecordBatch, SnapshotId, encode_batch, make_batch
from kraftlake.records.control_types import LeaderChangeMessage
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import Provenance
from kraftlake.replay.loader import BatchLoader, TransactionState
from kraftlake.replay.log_replay import Source, replay_paths, replay_sources, resolve_sources
from kraftlake.replay.writer import snapshot_batches
from tests.replay.builders import MV, B, E, N, P, T, apply_records

LEADER = LeaderChangeMessage(version=0, leader_id=1)


def log_batches() -> list[RecordBatch]:
    """A small log: leader change, bootstrap transaction, topics in later batches (offsets 0..11)."""
    return [
        make_batch(0, 1, 100, [LEADER], control=True),
        make_batch(1, 1, 101, [B("Bootstrap records"), MV(14), E()]),
        make_batch(4, 1, 102, [T("foo"), P("foo", 0), P("foo", 1)]),
        make_batch(7, 2, 103, [N(), B(), T("bar"), P("bar", 0), E()]),
    ]


def write(path: Path, batches: list[RecordBatch]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_batch(batch) for batch in batches))
    return path


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log", log_batches())


def topics_at(log: Path, offset: int) -> set[str]:
    return set(replay_paths([log], offset).image.topics.by_name)


# -- resolve_sources ---------------------------------------------------------------------------------


def test_a_directory_means_its_latest_snapshot_ending_at_or_before_n_plus_one_then_its_log(log: Path) -> None:
    directory = log.parent
    image = apply_records([MV(14), T("foo")], offset=4)
    for end in (5, 8):
        write(directory / SnapshotId(end, 1).file_name(), snapshot_batches(image, 0))
    assert resolve_sources([directory], 3) == [Source(log, None)]
    assert resolve_sources([directory], 4) == [Source(directory / SnapshotId(5, 1).file_name(), SnapshotId(5, 1)),
                                              Source(log, None)]
    assert resolve_sources([directory], 20)[0].snapshot == SnapshotId(8, 1)
    assert resolve_sources([directory])[0].snapshot == SnapshotId(8, 1)
    assert resolve_sources([directory.parent], 4) == resolve_sources([directory], 4), "the log dir holding it"


def test_bootstrap_checkpoint_only_when_named(tmp_path: Path) -> None:
    bootstrap = write(tmp_path / "bootstrap.checkpoint", [make_batch(0, 0, 0, [MV(14)])])
    assert resolve_sources([bootstrap]) == [Source(bootstrap, SnapshotId(0, 0))]
    with pytest.raises(ReplayError, match="no image is published yet"):  # Kafka publishes none before the log
        replay_paths([bootstrap])


def bootstrap_image() -> list[RecordBatch]:
    """A bootstrap checkpoint's batches (offset 0, epoch 0, as `kafka-storage format` writes it)."""
    return snapshot_batches(replace(apply_records([MV(14)]), provenance=Provenance(-1, 0, 0, True)), 0)


def test_a_bootstrap_checkpoint_is_published_with_the_end_of_the_first_batch(tmp_path: Path) -> None:
    """A 4.x node's directory (`format --standalone`): the checkpoint at offset 0, then a control batch 0..2.
    Kafka's loader holds the checkpoint's image until that batch ends: offsets 0 and 1 have no image."""
    directory = tmp_path / "__cluster_metadata-0"
    write(directory / SnapshotId(0, 0).file_name(), bootstrap_image())
    write(directory / "00000000000000000000.log", [make_batch(0, 1, 100, [LEADER, LEADER, LEADER], control=True)])
    for offset in (0, 1):
        with pytest.raises(ReplayError, match=rf"offset {offset} is before the first published image \(offset 2\)"):
            replay_paths([directory], offset)
    image = replay_paths([directory], 2).image
    assert (image.provenance.offset, image.features.metadata_version) == (2, 14)


def test_a_log_starting_after_zero_needs_a_snapshot(tmp_path: Path) -> None:
    write(tmp_path / "00000000000000000010.log", [make_batch(10, 1, 0, [N()])])
    with pytest.raises(ReplayError, match="the log starts at offset 10 and no snapshot covers the offsets before it"):
        resolve_sources([tmp_path])


# -- the image at offset N ---------------------------------------------------------------------------


def test_the_image_at_every_offset_of_a_small_log(log: Path) -> None:
    """Offsets 0..3: a control batch, then the bootstrap transaction (published at 3, its End); 4..6 one
    batch, published whole at 6; 7..11: a NoOp, then a transaction published at its End (11), the NoOp before
    its Begin at 7."""
    answers = {offset: replay_paths([log], offset).image.provenance.offset for offset in range(3, 12)}
    assert answers == {3: 3, 4: 3, 5: 3, 6: 6, 7: 7, 8: 7, 9: 7, 10: 7, 11: 11}
    assert {offset: topics_at(log, offset) for offset in (3, 5, 6, 10, 11)} == {
        3: set(), 5: set(), 6: {"foo"}, 10: {"foo"}, 11: {"foo", "bar"}}
    assert replay_paths([log], 5).asked == 5


def test_before_the_first_image_and_past_the_end_are_refused(log: Path) -> None:
    for offset in (0, 1, 2):
        with pytest.raises(ReplayError, match=rf"offset {offset} is before the first published image \(offset 3\)"):
            replay_paths([log], offset)
    with pytest.raises(ReplayError, match=r"offset 12 is past the end: images answer offsets 3..11"):
        replay_paths([log], 12)


def test_a_log_of_control_records_only_answers_nothing(tmp_path: Path) -> None:
    """A fresh cluster's first offsets: Kafka publishes nothing before a metadata record."""
    only = write(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log",
                 [make_batch(0, 1, 100, [LEADER], control=True)])
    with pytest.raises(ReplayError, match=r"no image is published yet \(offsets read through 0\)"):
        replay_paths([only])


def test_provenance_is_the_answering_images(log: Path) -> None:
    assert replay_paths([log], 6).image.provenance == Provenance(6, 1, 102, True)
    assert replay_paths([log], 5).image.provenance == Provenance(3, 1, 101, True)
    assert replay_paths([log], 8).image.provenance == Provenance(7, 2, 103, False), "before the Begin at 8"
    assert replay_paths([log]).image.provenance == Provenance(11, 2, 103, True)


def test_an_open_transaction_at_n_is_invisible_and_reported(log: Path) -> None:
    result = replay_paths([log], 9)
    assert result.transaction is TransactionState.NONE, "the batch holding 9 is read whole"
    assert set(result.image.topics.by_name) == {"foo"}
    assert (result.asked, result.image.provenance.offset) == (9, 7)


def test_counts_of_replayed_batches_and_records(log: Path) -> None:
    assert (replay_paths([log]).batches, replay_paths([log]).records) == (4, 12)
    assert (replay_paths([log], 5).batches, replay_paths([log], 5).records) == (3, 7)


def test_snapshot_then_log_starts_after_the_snapshot(log: Path) -> None:
    """The snapshot at 5 (offsets 0..4) holds a topic the log never created: the log from 5 on builds on it."""
    snapshot_image = apply_records([MV(14), T("foo"), P("foo", 0), P("foo", 1), T("only-in-snapshot")], offset=6)
    snapshot = write(log.parent / SnapshotId(7, 1).file_name(), snapshot_batches(snapshot_image, 102))
    result = replay_sources([Source(snapshot, SnapshotId(7, 1)), Source(log, None)], 11)
    assert set(result.image.topics.by_name) == {"foo", "bar", "only-in-snapshot"}
    assert set(result.image.topics.by_name["foo"].partitions) == {0, 1}
    assert (result.batches, result.records) == (1, 5), "offsets 7..11: the batch 4..6 is in the snapshot"
    assert replay_paths([log.parent]).image.topics.by_name.keys() == result.image.topics.by_name.keys()


def test_a_snapshot_past_the_requested_offset_is_refused(log: Path) -> None:
    image = apply_records([MV(14), T("foo")], offset=6)
    snapshot = write(log.parent / SnapshotId(7, 1).file_name(), snapshot_batches(image, 0))
    with pytest.raises(ReplayError, match=r"offset 5 is before the history these files hold \(from the snapshot at "
                                          r"offset 6\)"):
        replay_paths([snapshot], 5)
    assert replay_paths([snapshot], 6).image.provenance.offset == 6


def test_one_commit_per_batch_gives_the_image_of_one_commit(log: Path) -> None:
    loader = BatchLoader()
    for batch in log_batches():
        loader.load_commit(batch)
    assert canonical_json(loader.image) == canonical_json(replay_paths([log]).image)
