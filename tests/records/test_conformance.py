"""Conformance on the real files Apache Kafka wrote: CRCs, the README's counts, byte-exact re-encoding and
decoded values that can be checked against other files of the same cluster."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from collections import Counter
from pathlib import Path

import pytest

from kraftlake.records import control_types, metadata_types
from kraftlake.records.batch import decode_batch, encode_batch, read_header, scan_batches
from kraftlake.records.files import MetadataLogDir, read_batches, snapshot_id
from tests.records.samples import LOG_SAMPLES, SAMPLES, Sample, sample_batches, sample_bytes

IDS = [s.path for s in SAMPLES]


def test_every_metadata_file_in_the_samples_is_covered(samples_dir: Path) -> None:
    on_disk = {
        str(p.relative_to(samples_dir)) for p in samples_dir.rglob("*") if p.suffix in (".log", ".checkpoint")
    }
    assert on_disk == {s.path for s in SAMPLES}


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_file_is_the_one_the_readme_describes(samples_dir: Path, sample: Sample) -> None:
    raw = sample_bytes(samples_dir, sample.path)
    assert len(raw) == sample.size
    assert hashlib.sha256(raw).hexdigest()[:16] == sample.sha256_prefix


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_every_crc_is_valid_and_batches_tile_the_file(samples_dir: Path, sample: Sample) -> None:
    raw = sample_bytes(samples_dir, sample.path)
    headers = list(scan_batches(raw, sample.path, verify_crc=True))
    assert len(headers) == sample.batches
    assert headers[0].position == 0
    for before, after in itertools.pairwise(headers):
        assert after.position == before.position + before.size_in_bytes
    assert headers[-1].position + headers[-1].size_in_bytes == len(raw)
    assert {h.magic for h in headers} == {2}


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_counts_match_the_readme(samples_dir: Path, sample: Sample) -> None:
    batches = sample_batches(samples_dir, sample.path)
    records = [r for b in batches for r in b.records]
    assert len(batches) == sample.batches
    assert len(records) == sample.records
    assert [r.offset for r in records] == list(range(sample.last_offset + 1))
    assert tuple(sorted({b.partition_leader_epoch for b in batches})) == sample.leader_epochs
    assert max(len(b.records) for b in batches) == sample.max_records_per_batch
    assert {b.compression for b in batches} == {0}
    metadata_types_seen = Counter(r.message.TYPE_NAME for b in batches if not b.is_control for r in b.records)
    assert metadata_types_seen == Counter(sample.types)
    for batch in batches:
        assert all(hasattr(r.message, "CONTROL_TYPE") == batch.is_control for r in batch.records)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_decode_then_encode_gives_the_original_bytes(samples_dir: Path, sample: Sample) -> None:
    raw = sample_bytes(samples_dir, sample.path)
    batches = sample_batches(samples_dir, sample.path)
    for batch in batches:
        original = raw[batch.position : batch.position + batch.size_in_bytes]
        assert encode_batch(batch) == original
        assert decode_batch(original) == dataclasses.replace(batch, position=0)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_read_batches_from_the_file_equals_decoding_its_bytes(samples_dir: Path, sample: Sample) -> None:
    assert tuple(read_batches(samples_dir / sample.path)) == sample_batches(samples_dir, sample.path)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_metadata_version_feature_level(samples_dir: Path, sample: Sample) -> None:
    levels = [
        r.message.feature_level
        for b in sample_batches(samples_dir, sample.path)
        for r in b.records
        if isinstance(r.message, metadata_types.FeatureLevelRecord) and r.message.name == "metadata.version"
    ]
    assert levels == [sample.metadata_version]


@pytest.mark.parametrize("sample", LOG_SAMPLES, ids=[s.path for s in LOG_SAMPLES])
def test_log_opens_with_leader_change_then_the_bootstrap_transaction(samples_dir: Path, sample: Sample) -> None:
    batches = sample_batches(samples_dir, sample.path)
    first = batches[0]
    assert first.is_control
    assert isinstance(first.records[0].message, control_types.LeaderChangeMessage)
    transaction = batches[1].records
    assert transaction[0].message == metadata_types.BeginTransactionRecord(name="Bootstrap records")
    assert isinstance(transaction[-1].message, metadata_types.EndTransactionRecord)
    inside = {type(r.message) for r in transaction[1:-1]}
    assert inside == {metadata_types.FeatureLevelRecord, metadata_types.ZkMigrationStateRecord}


SNAPSHOT_SAMPLES = [s for s in SAMPLES if s.path.endswith(".checkpoint")]


@pytest.mark.parametrize("sample", SNAPSHOT_SAMPLES, ids=[s.path for s in SNAPSHOT_SAMPLES])
def test_snapshot_layout(samples_dir: Path, sample: Sample) -> None:
    """Header control batch, data batch(es), footer control batch; the epoch is the snapshot's."""
    batches = sample_batches(samples_dir, sample.path)
    header, footer = batches[0], batches[-1]
    assert header.is_control and footer.is_control
    assert not any(b.is_control for b in batches[1:-1])
    assert isinstance(header.records[0].message, control_types.SnapshotHeaderRecord)
    assert [type(r.message) for r in footer.records] == [control_types.SnapshotFooterRecord]
    sid = snapshot_id(samples_dir / sample.path)
    if sid is not None:
        assert {b.partition_leader_epoch for b in batches} == {sid.epoch}


def test_snapshot_header_time_is_the_append_time_of_its_last_log_offset(samples_dir: Path) -> None:
    """The O-E.checkpoint header's lastContainedLogTimestamp is the time of the log batch holding O-1."""
    log_dir = MetadataLogDir(samples_dir / "rjmfernandes_flink-on-prem/data/__cluster_metadata-0")
    log = list(log_dir.log_batches())
    snapshots = log_dir.snapshots()
    assert [sid.end_offset for sid, _ in snapshots] == [7752, 14926]
    for sid, path in snapshots:
        header = next(read_batches(path)).records[0].message
        containing = next(b for b in log if b.base_offset <= sid.end_offset - 1 <= b.last_offset)
        assert header.last_contained_log_timestamp == containing.append_time_ms
        assert containing.partition_leader_epoch == sid.epoch


@pytest.mark.parametrize(
    "folder",
    [
        "Niloufar1171_LDI-POC/__cluster_metadata-0",
        "rjmfernandes_flink-on-prem/data/__cluster_metadata-0",
        "Jeong-Rae_KafkaDemo/kraft-combined-logs/__cluster_metadata-0",
    ],
)
def test_leader_epochs_start_where_leader_epoch_checkpoint_says(samples_dir: Path, folder: str) -> None:
    """leader-epoch-checkpoint (text: version, count, then `epoch startOffset` lines) is written by Kafka
    independently of the batches: each epoch's first batch must start at the offset it records."""
    lines = (samples_dir / folder / "leader-epoch-checkpoint").read_text().split("\n")
    count = int(lines[1])
    expected = {int(epoch): int(start) for epoch, start in (line.split() for line in lines[2 : 2 + count])}
    first_offsets: dict[int, int] = {}
    for batch in MetadataLogDir(samples_dir / folder).log_batches():
        first_offsets.setdefault(batch.partition_leader_epoch, batch.base_offset)
    assert first_offsets == expected


def test_each_new_leader_writes_a_leader_change_first(samples_dir: Path) -> None:
    """Five epochs in the Jeong-Rae log, five LeaderChange records, each the first batch of its epoch."""
    folder = samples_dir / "Jeong-Rae_KafkaDemo/kraft-combined-logs/__cluster_metadata-0"
    previous_epoch = None
    changes = 0
    for batch in MetadataLogDir(folder).log_batches():
        if batch.partition_leader_epoch != previous_epoch:
            assert isinstance(batch.records[0].message, control_types.LeaderChangeMessage)
            assert batch.records[0].message.leader_id == 1
            previous_epoch = batch.partition_leader_epoch
        changes += sum(isinstance(r.message, control_types.LeaderChangeMessage) for r in batch.records)
    assert changes == 5


def test_header_fields_are_what_kraft_writes(samples_dir: Path) -> None:
    for sample in SAMPLES:
        raw = sample_bytes(samples_dir, sample.path)
        header = read_header(raw, 0, sample.path)
        assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
        assert header.base_timestamp == header.max_timestamp
