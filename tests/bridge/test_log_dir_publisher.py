"""`kraftlake publish`: real Kafka metadata directories into a topic on the real local broker, exactly once
by offset, a snapshot first where the log no longer starts at 0; the streaming job's driver loads what it
published and every checked offset equals the replay of the directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraftlake.bridge.publisher import PublisherConfig, PublishError, resume_offset
from kraftlake.cli.main import main
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import decode_batch, read_batches
from kraftlake.records.files import SnapshotId
from kraftlake.records.topic import decode_key, encode_snapshot_key, snapshot_of
from tests.fixtures.broker import create_topic, produce
from tests.harness.answers import assert_warehouse_equals_replay
from tests.jobs.metadata_topic import drain, topic_messages

RJM = "rjmfernandes_flink-on-prem/data/__cluster_metadata-0"
KCKOH = "kckoh_xflow/kafka-data/__cluster_metadata-0"
SEGMENT = "00000000000000000000.log"


def file_batches(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return [data[b.position : b.position + b.size_in_bytes] for b in read_batches(path)]


def publish(directory: Path, bootstrap: str, topic: str) -> int:
    return main(["publish", str(directory), "--topic", topic, "--bootstrap-servers", bootstrap])


def log_copy(source: Path, target: Path, *, batches: slice) -> Path:
    """A `__cluster_metadata-0` copy whose one segment holds `batches` of the source log (real bytes), named
    by its first offset, with the source's snapshots."""
    target.mkdir(parents=True)
    chosen = file_batches(source / SEGMENT)[batches]
    first = decode_batch(chosen[0]).base_offset
    (target / f"{first:020d}.log").write_bytes(b"".join(chosen))
    for snapshot in source.glob("*.checkpoint"):
        shutil.copy(snapshot, target)
    return target


def test_exactly_once_by_offset_across_reruns_and_a_longer_copy(
    kafka_broker, samples_dir: Path, tmp_path: Path
) -> None:
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    source = samples_dir / RJM
    everything = file_batches(source / SEGMENT)
    shorter = log_copy(source, tmp_path / "short", batches=slice(0, 5000))
    assert publish(shorter, bootstrap, topic) == 0
    assert [m.value for m in topic_messages(bootstrap, topic)] == everything[:5000]
    assert publish(source, bootstrap, topic) == 0  # the longer copy: only what the topic lacks
    assert publish(source, bootstrap, topic) == 0  # a rerun: nothing
    messages = topic_messages(bootstrap, topic)
    assert [m.value for m in messages] == everything
    assert [decode_key(m.key) for m in messages] == [decode_batch(v).base_offset for v in everything]


def test_a_log_past_zero_goes_in_after_its_newest_usable_snapshot(
    kafka_broker, samples_dir: Path, tmp_path: Path
) -> None:
    """Segments from offset ~10000 on: the 14926 snapshot is the newest the log continues from (7752 is
    older than the log's start and not usable), so it goes first; the job loads it as a snapshot."""
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    source = samples_dir / RJM
    everything = file_batches(source / SEGMENT)
    cut = next(i for i, raw in enumerate(everything) if decode_batch(raw).base_offset >= 10_000)
    directory = log_copy(source, tmp_path / "trimmed", batches=slice(cut, None))
    assert publish(directory, bootstrap, topic) == 0
    messages = topic_messages(bootstrap, topic)
    snapshot = SnapshotId(14926, 1)
    assert [m.value for m in messages[:3]] == file_batches(source / snapshot.file_name())
    assert {snapshot_of(m.key) for m in messages[:3]} == {snapshot}
    assert decode_key(messages[3].key) == 14926
    assert [m.value for m in messages[3:]] == [v for v in everything if decode_batch(v).base_offset >= 14926]

    drain(bootstrap, topic, tmp_path / "warehouse", micro_batch=400, single_first=5)  # the snapshot spans 3
    warehouse = Warehouse(tmp_path / "warehouse")
    images = WarehouseReader(warehouse).images()
    assert (images[0].offset, images[0].snapshot) == (14925, True)
    assert_warehouse_equals_replay(warehouse, directory, [14925, *range(14926, 17027, 97), 17026])


def test_a_snapshot_only_directory_and_a_snapshot_cut_short(kafka_broker, samples_dir: Path, tmp_path: Path) -> None:
    """An earlier run stopped inside the snapshot: the rerun publishes it again, whole, and the job drops
    the part that never got its footer."""
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    directory = samples_dir / KCKOH
    snapshot_file = next(directory.glob("*.checkpoint"))
    snapshot = SnapshotId(7605, 1)
    parts = file_batches(snapshot_file)
    produce(bootstrap, topic, [(encode_snapshot_key(snapshot), raw) for raw in parts[:2]], partition=0)
    with pytest.raises(PublishError, match="ends inside snapshot"):  # the controllers' publisher cannot go on
        resume_offset(PublisherConfig(bootstrap, topic))
    assert publish(directory, bootstrap, topic) == 0
    assert publish(directory, bootstrap, topic) == 0  # the snapshot is whole in the topic now: nothing
    assert resume_offset(PublisherConfig(bootstrap, topic)) == 7605  # both publishers read the tail alike
    assert [m.value for m in topic_messages(bootstrap, topic)] == parts[:2] + parts

    drain(bootstrap, topic, tmp_path / "warehouse", micro_batch=400, single_first=5)
    warehouse = Warehouse(tmp_path / "warehouse")
    assert [(image.offset, image.snapshot) for image in WarehouseReader(warehouse).images()] == [(7604, True)]
    assert_warehouse_equals_replay(warehouse, directory, [7604])


def test_corrupt_or_truncated_input_stops_at_the_bad_batch(
    kafka_broker, samples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    source = samples_dir / RJM / SEGMENT
    good = file_batches(source)
    bad_at = 1234
    bad_position = sum(len(raw) for raw in good[:bad_at])
    bad_offset = decode_batch(good[bad_at]).base_offset
    data = source.read_bytes()
    cases = {"corrupt": bytearray(data), "truncated": bytearray(data[: bad_position + 30])}
    cases["corrupt"][bad_position + 65] ^= 0x40  # inside the records: the CRC no longer matches
    for name, case in cases.items():
        directory = tmp_path / name / "__cluster_metadata-0"
        directory.mkdir(parents=True)
        (directory / SEGMENT).write_bytes(bytes(case))
        topic = create_topic(bootstrap)
        assert publish(directory, bootstrap, topic) == 2
        error = capsys.readouterr().err
        assert str(directory / SEGMENT) in error and f"offset {bad_offset}" in error, error
        assert [m.value for m in topic_messages(bootstrap, topic)] == good[:bad_at], name


def test_another_clusters_log_is_refused(kafka_broker, samples_dir: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    assert publish(samples_dir / "Niloufar1171_LDI-POC", bootstrap, topic) == 0
    before = topic_messages(bootstrap, topic)
    assert publish(samples_dir / RJM, bootstrap, topic) == 2
    error = capsys.readouterr().err
    assert "another cluster's log" in error or "not the same log" in error, error
    assert topic_messages(bootstrap, topic) == before
