"""Replaying files to any offset: which files a path means, cutting batches at an offset, the image at
offset N (mid-batch, inside a transaction, past the end), snapshot then log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.records import RecordBatch, SnapshotId, encode_batch, make_batch
from kraftlake.records.control_types import LeaderChangeMessage
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import Provenance
from kraftlake.replay.loader import BatchLoader, TransactionState
from kraftlake.replay.log_replay import Source, cut_batches, replay_paths, replay_sources, resolve_sources
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
    assert replay_paths([bootstrap]).image.features.metadata_version == 14


def test_a_log_starting_after_zero_needs_a_snapshot(tmp_path: Path) -> None:
    write(tmp_path / "00000000000000000010.log", [make_batch(10, 1, 0, [N()])])
    with pytest.raises(ReplayError, match="the log starts at offset 10 and no snapshot covers the offsets before it"):
        resolve_sources([tmp_path])


# -- cut_batches -------------------------------------------------------------------------------------


def test_cut_batches_keeps_offsets_start_to_n_and_stops_reading() -> None:
    batches = [make_batch(base, 1, 0, [N()] * 5) for base in (0, 5, 10)]

    def source() -> Iterator[RecordBatch]:
        yield from batches
        raise AssertionError("read past the batch that starts after N")

    cut = list(cut_batches(source(), 3, 6))
    assert [[r.offset for r in b.records] for b in cut] == [[3, 4], [5, 6]]
    assert [b.last_offset for b in cut] == [4, 6]
    assert list(cut_batches(iter(batches), 0, None)) == batches
    assert [b.base_offset for b in cut_batches(iter(batches), 5, 9)] == [5]


# -- the image at offset N ---------------------------------------------------------------------------


def test_the_image_at_every_offset_of_a_small_log(log: Path) -> None:
    expected = {0: set(), 1: set(), 2: set(), 3: set(), 4: {"foo"}, 5: {"foo"}, 6: {"foo"}, 7: {"foo"},
                8: {"foo"}, 9: {"foo"}, 10: {"foo"}, 11: {"foo", "bar"}}
    assert {offset: topics_at(log, offset) for offset in expected} == expected
    versions = {offset: replay_paths([log], offset).image.features.metadata_version for offset in range(12)}
    assert versions == {0: None, 1: None, 2: None, 3: 14, **{offset: 14 for offset in range(4, 12)}}


def test_provenance_says_whether_the_image_ends_on_a_batch_boundary(log: Path) -> None:
    assert replay_paths([log], 6).image.provenance == Provenance(6, 1, 102, True)
    assert replay_paths([log], 5).image.provenance == Provenance(5, 1, 102, False)
    assert replay_paths([log], 3).image.provenance == Provenance(3, 1, 101, True)
    assert replay_paths([log]).image.provenance == Provenance(11, 2, 103, True)
    assert replay_paths([log], 500).image.provenance == Provenance(11, 2, 103, True), "past the end: the end"


def test_an_open_transaction_at_n_is_invisible_and_reported(log: Path) -> None:
    result = replay_paths([log], 9)
    assert result.transaction is TransactionState.CONTINUED
    assert set(result.image.topics.by_name) == {"foo"}
    assert result.image.provenance.offset == 9
    assert replay_paths([log], 11).transaction is TransactionState.NONE


def test_counts_of_replayed_batches_and_records(log: Path) -> None:
    assert (replay_paths([log]).batches, replay_paths([log]).records) == (4, 12)
    assert (replay_paths([log], 5).batches, replay_paths([log], 5).records) == (3, 6)


def test_snapshot_then_log_starts_after_the_snapshot(log: Path) -> None:
    """The snapshot at 5 (offsets 0..4) holds a topic the log never created: the log from 5 on builds on it."""
    snapshot_image = apply_records([MV(14), T("foo"), P("foo", 0), T("only-in-snapshot")], offset=4)
    snapshot = write(log.parent / SnapshotId(5, 1).file_name(), snapshot_batches(snapshot_image, 102))
    result = replay_sources([Source(snapshot, SnapshotId(5, 1)), Source(log, None)], 11)
    assert set(result.image.topics.by_name) == {"foo", "bar", "only-in-snapshot"}
    assert set(result.image.topics.by_name["foo"].partitions) == {0, 1}
    assert (result.batches, result.records) == (2, 7), "offsets 5..11: the batch 4..6 is cut at its front"
    assert replay_paths([log.parent]).image.topics.by_name.keys() == result.image.topics.by_name.keys()


def test_a_snapshot_past_the_requested_offset_is_refused(log: Path) -> None:
    image = apply_records([MV(14), T("foo")], offset=6)
    snapshot = write(log.parent / SnapshotId(7, 1).file_name(), snapshot_batches(image, 0))
    with pytest.raises(ReplayError, match="ends at offset 6, after the requested offset 5"):
        replay_paths([snapshot], 5)
    assert replay_paths([snapshot], 6).image.provenance.offset == 6


def test_one_commit_per_batch_gives_the_image_of_one_commit(log: Path) -> None:
    loader = BatchLoader()
    for batch in log_batches():
        loader.load_batch(batch)
        loader.flush()
    assert canonical_json(loader.image) == canonical_json(replay_paths([log]).image)
