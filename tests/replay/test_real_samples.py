"""Real Kafka metadata logs (../shared/kafka-samples): a log replayed to O-1 equals the snapshot O-E beside it,
the bootstrap transaction is folded atomically, and every offset of every log replays without error."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.records import RecordBatch, read_batches, read_snapshot, snapshot_id
from kraftlake.records import metadata_types as mt
from kraftlake.replay.delta import QUORUM_CONTROL_TYPES
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.loader import BatchLoader
from kraftlake.replay.log_replay import replay_paths
from tests.replay.builders import Recorder

LOGS = (
    "Jeong-Rae_KafkaDemo/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log",
    "Niloufar1171_LDI-POC/__cluster_metadata-0/00000000000000000000.log",
    "rjmfernandes_flink-on-prem/data/__cluster_metadata-0/00000000000000000000.log",
)
SNAPSHOTS_BESIDE_LOGS = (
    "rjmfernandes_flink-on-prem/data/__cluster_metadata-0/00000000000000007752-0000000001.checkpoint",
    "rjmfernandes_flink-on-prem/data/__cluster_metadata-0/00000000000000014926-0000000001.checkpoint",
)


@cache
def batches_of(path: Path) -> tuple[RecordBatch, ...]:
    return tuple(read_batches(path))


def test_the_samples_are_the_ones_listed(samples_dir: Path) -> None:
    """Guards the parametrizations below against a samples folder that changed under them."""
    logs = sorted(str(p.relative_to(samples_dir)) for p in samples_dir.rglob("*.log"))
    beside = sorted(str(s.relative_to(samples_dir)) for log in logs
                    for s in (samples_dir / log).parent.glob("*.checkpoint") if snapshot_id(s) is not None)
    assert (tuple(logs), tuple(beside)) == (LOGS, SNAPSHOTS_BESIDE_LOGS)


def snapshot_end(path: Path) -> int:
    found = snapshot_id(path)
    assert found is not None, f"{path} is not named as a snapshot"
    return found.end_offset


@pytest.mark.parametrize("snapshot", SNAPSHOTS_BESIDE_LOGS, ids=lambda s: Path(s).name.split(".")[0])
def test_log_up_to_the_snapshot_equals_the_snapshot(samples_dir: Path, snapshot: str) -> None:
    path = samples_dir / snapshot
    end = snapshot_end(path)
    log = path.parent / "00000000000000000000.log"
    from_log = replay_paths([log], end - 1).image
    from_snapshot = replay_paths([path]).image
    assert canonical_json(from_log, provenance=False) == canonical_json(from_snapshot, provenance=False)
    assert from_log.topics.partition_count() > 100, "a snapshot of substance, not two empty images"
    assert from_log.provenance.offset == from_snapshot.provenance.offset == end - 1


def bootstrap_transaction(batches: tuple[RecordBatch, ...]) -> tuple[int, int, int]:
    """(Begin offset, End offset, metadata.version inside) of the log's bootstrap transaction, read directly."""
    records = [record for batch in batches if not batch.is_control for record in batch.records]
    begin = next(r for r in records if isinstance(r.message, mt.BeginTransactionRecord))
    assert begin.message.name == "Bootstrap records"
    end = next(r for r in records if r.offset > begin.offset and isinstance(r.message, mt.EndTransactionRecord))
    level = next(r.message.feature_level for r in records
                 if begin.offset < r.offset < end.offset and isinstance(r.message, mt.FeatureLevelRecord)
                 and r.message.name == "metadata.version")
    return begin.offset, end.offset, level


@pytest.mark.parametrize("log", LOGS, ids=lambda s: s.split("/")[0])
def test_the_bootstrap_transaction_is_folded_atomically(samples_dir: Path, log: str) -> None:
    path = samples_dir / log
    begin, end, level = bootstrap_transaction(batches_of(path))
    assert begin < end
    for n in range(0, end):
        with pytest.raises(ReplayError, match=f"offset {n} is before the first published image \\(offset {end}\\)"):
            replay_paths([path], n)
    versions = {n: replay_paths([path], n).image.features.metadata_version for n in (end, end + 1)}
    assert versions == {end: level, end + 1: level}


@pytest.mark.parametrize("log", LOGS, ids=lambda s: s.split("/")[0])
def test_nothing_is_published_before_the_bootstrap_transaction_ends(samples_dir: Path, log: str) -> None:
    """INV3: one commit per batch, as a broker catching up would see them; the first image is at End."""
    batches = batches_of(samples_dir / log)
    _, end, level = bootstrap_transaction(batches)
    recorder = Recorder()
    loader = BatchLoader(recorder)
    for batch in batches[:20]:
        loader.load_commit(batch)
    first = recorder.updates[0].image
    assert (first.provenance.offset, first.features.metadata_version) == (end, level)


def published_images(batches: tuple[RecordBatch, ...]) -> list[MetadataImage]:
    """Every image published walking the log one commit per batch."""
    published: list[MetadataImage] = []
    loader = BatchLoader(lambda delta, image, manifest: published.append(image))
    for batch in batches:
        loader.load_commit(batch)
    return published


@pytest.mark.parametrize("log", LOGS, ids=lambda s: s.split("/")[0])
def test_every_offset_replays(samples_dir: Path, log: str) -> None:
    """`replay --to-offset N` answers with the last image published at or before N (one pass finds them),
    at a spread of offsets; where a snapshot sits beside the log, its image is the one published there."""
    path = samples_dir / log
    batches = batches_of(path)
    last = batches[-1].last_offset
    published = {image.provenance.offset: image for image in published_images(batches)}
    points = sorted(published)
    checked = {points[0], points[0] + 1, last // 3, last // 2, last - 1, last}
    for offset in checked:
        expected = published[max(point for point in points if point <= offset)]
        assert canonical_json(expected) == canonical_json(replay_paths([path], offset).image), offset
    for snapshot in path.parent.glob("*-*.checkpoint"):
        end = snapshot_end(snapshot) - 1
        assert canonical_json(published[end], provenance=False) == canonical_json(replay_paths([snapshot]).image,
                                                                                  provenance=False)


@pytest.mark.parametrize("path", (*LOGS, *SNAPSHOTS_BESIDE_LOGS), ids=lambda p: p.split("/")[0] + "/" + Path(p).name)
def test_a_static_quorum_states_no_voters(samples_dir: Path, path: str) -> None:
    """Every sample is a kraft.version 0 cluster (3.x, or 4.x without controller.quorum.bootstrap.servers): its
    files hold no KRaftVersion / KRaftVoters record, so the quorum sub-image stays empty (the dynamic case is
    covered by this project's own logs and snapshots, tests/replay/test_voters.py and tests/jobs)."""
    batches = read_snapshot(samples_dir / path) if path.endswith(".checkpoint") else batches_of(samples_dir / path)
    kinds = {type(r.message) for batch in batches if batch.is_control for r in batch.records}
    assert not kinds & QUORUM_CONTROL_TYPES
    image = replay_paths([samples_dir / path]).image
    assert image.voters.is_empty() and not image.is_empty()


def test_a_directory_replayed_to_an_offset_before_its_last_segment(samples_dir: Path, tmp_path: Path) -> None:
    """Segments that start after the requested offset are not read (they used to look like a gap)."""
    source = samples_dir / LOGS[0]
    data = source.read_bytes()
    batches = batches_of(source)
    split = len(batches) // 2
    second = batches[split].position
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    (directory / source.name).write_bytes(data[:second])
    (directory / f"{batches[split].base_offset:020d}.log").write_bytes(data[second:])
    to_offset = batches[split - 3].last_offset  # the replay stops two batches before the first segment ends
    assert canonical_json(replay_paths([directory], to_offset).image) == canonical_json(
        replay_paths([source], to_offset).image
    )
