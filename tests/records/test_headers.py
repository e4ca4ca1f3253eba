"""Every bit of a batch header, flipped in real Kafka files, gives a located error or the same batches.

The CRC leaves baseOffset and partitionLeaderEpoch uncovered (test_corruption shows the raw decoder
accepts flips there); the readers of `kraftlake.records.files` check them against the batch before, the file name and
leader-epoch-checkpoint. Each case reads a window of a real file: a few consecutive batches, saved as a
segment named after its first offset (or a whole small snapshot), next to the directory's real
leader-epoch-checkpoint, so every one of the 488 flips of a header is read quickly.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kraftlake.records import RecordBatch
from kraftlake.records.batch import HEADER_SIZE, encode_batch, make_batch
from kraftlake.records.control_types import LeaderChangeMessage
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.files import LogReader, MetadataLogDir, SnapshotId, read_snapshot
from kraftlake.records.headers import LEADER_EPOCH_CHECKPOINT, HeaderCheckError, read_leader_epochs
from tests.records.samples import sample_batches, sample_bytes

NILOUFAR = "Niloufar1171_LDI-POC/__cluster_metadata-0/00000000000000000000.log"
JEONG_RAE = "Jeong-Rae_KafkaDemo/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log"
KCKOH = "kckoh_xflow/kafka-data/__cluster_metadata-0/00000000000000007605-0000000001.checkpoint"
BOOTSTRAP = "Niloufar1171_LDI-POC/bootstrap.checkpoint"
LEADER = LeaderChangeMessage(version=0, leader_id=1)

Reader = Callable[[Path], Iterator[RecordBatch]]


def log_window(samples_dir: Path, relative: str, first: int, count: int, target: Path) -> Path:
    """Batches first..first+count-1 of a real segment, saved as a segment of their own in `target` (with the
    directory's leader-epoch-checkpoint)."""
    batches = sample_batches(samples_dir, relative)[first : first + count]
    raw = sample_bytes(samples_dir, relative)
    start, end = batches[0].position, batches[-1].position + batches[-1].size_in_bytes
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(samples_dir / relative.rsplit("/", 1)[0] / LEADER_EPOCH_CHECKPOINT, target)
    segment = target / f"{batches[0].base_offset:020d}.log"
    segment.write_bytes(raw[start:end])
    return segment


def read_log(path: Path) -> Iterator[RecordBatch]:
    return LogReader().batches(path)


def assert_every_header_bit_is_checked(file: Path, batch_position: int, read: Reader) -> None:
    original = file.read_bytes()
    expected = list(read(file))
    for byte in range(batch_position, batch_position + HEADER_SIZE):
        for bit in range(8):
            corrupted = bytearray(original)
            corrupted[byte] ^= 1 << bit
            file.write_bytes(corrupted)
            try:
                decoded = list(read(file))
            except RecordFormatError as error:
                where = f"bit {bit} of header byte {byte - batch_position}"
                assert (error.source, error.position) == (str(file), batch_position), where
                assert error.offset is not None, where
                assert str(error).startswith(f"{file}, byte position {batch_position}, offset "), where
                continue
            assert decoded == expected, f"bit {bit} of header byte {byte - batch_position} accepted silently"
    file.write_bytes(original)


@pytest.mark.parametrize(
    ("relative", "first", "flipped"),
    [
        (NILOUFAR, 0, 0),  # the first batch: its offset is the segment's name
        (NILOUFAR, 2000, 1),  # a batch in the middle
        (NILOUFAR, 4812, 1),  # the last batch: only leader-epoch-checkpoint says its epoch
        (JEONG_RAE, 297, 1),  # the first batch of epoch 2, right after an epoch change
        (JEONG_RAE, 3066, 1),  # the last batch, epoch 6
    ],
)
def test_every_header_bit_of_a_log_batch(
    samples_dir: Path, tmp_path: Path, relative: str, first: int, flipped: int
) -> None:
    segment = log_window(samples_dir, relative, first, 3, tmp_path / "__cluster_metadata-0")
    batches = list(read_log(segment))
    assert_every_header_bit_is_checked(segment, batches[flipped].position, read_log)


@pytest.mark.parametrize("relative", [KCKOH, BOOTSTRAP])
def test_every_header_bit_of_every_snapshot_batch(samples_dir: Path, tmp_path: Path, relative: str) -> None:
    source = samples_dir / relative
    target = tmp_path / source.parent.name
    shutil.copytree(source.parent, target, ignore=shutil.ignore_patterns("*.log"))
    snapshot = target / source.name
    for batch in list(read_snapshot(snapshot)):
        assert_every_header_bit_is_checked(snapshot, batch.position, read_snapshot)


def test_real_directories_pass_every_check(samples_dir: Path) -> None:
    """The legitimate cases the checks must accept: epoch changes, snapshots, bootstrap files."""
    epochs = [b.partition_leader_epoch for b in MetadataLogDir((samples_dir / JEONG_RAE).parent).log_batches()]
    assert sorted(set(epochs)) == [1, 2, 3, 5, 6]
    for folder in ("rjmfernandes_flink-on-prem/data", "kckoh_xflow/kafka-data", "Niloufar1171_LDI-POC"):
        log_dir = MetadataLogDir(samples_dir / folder / "__cluster_metadata-0")
        for _, path in log_dir.snapshots():
            assert list(read_snapshot(path))
        assert list(read_snapshot(samples_dir / folder / "bootstrap.checkpoint"))
        assert not log_dir.segments() or list(log_dir.log_batches())


def write_segment(path: Path, batches: list[RecordBatch]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_batch(batch) for batch in batches))
    return path


def test_offsets_run_on_across_segments(tmp_path: Path) -> None:
    write_segment(tmp_path / f"{0:020d}.log", [make_batch(0, 1, 0, [LEADER], control=True)])
    second = write_segment(tmp_path / f"{1:020d}.log", [make_batch(1, 1, 0, [LEADER], control=True)])
    assert [b.base_offset for b in MetadataLogDir(tmp_path).log_batches()] == [0, 1]
    second.rename(tmp_path / f"{2:020d}.log")
    with pytest.raises(HeaderCheckError, match="the segment starts at offset 2, the previous one ended at 0"):
        list(MetadataLogDir(tmp_path).log_batches())


def test_a_segment_named_after_another_offset(tmp_path: Path) -> None:
    segment = write_segment(tmp_path / f"{5:020d}.log", [make_batch(0, 1, 0, [LEADER], control=True)])
    with pytest.raises(HeaderCheckError) as caught:
        list(read_log(segment))
    assert str(caught.value) == f"{segment}, byte position 0, offset 0: base offset 0 where offset 5 comes next " \
        "(the metadata log is contiguous)"


def test_an_epoch_change_must_be_where_leader_epoch_checkpoint_says(tmp_path: Path) -> None:
    batches = [make_batch(0, 1, 0, [LEADER], control=True), make_batch(1, 2, 0, [LEADER], control=True)]
    segment = write_segment(tmp_path / f"{0:020d}.log", batches)
    assert len(list(read_log(segment))) == 2, "no checkpoint: an increase is fine"
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n1 0\n2 1\n")
    assert len(list(read_log(segment))) == 2
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("0\n1\n1 0\n")
    with pytest.raises(HeaderCheckError, match=r"offset 1: leader epoch 2, but .* gives epoch 1 for this offset"):
        list(read_log(segment))


def test_a_malformed_leader_epoch_checkpoint_is_named(tmp_path: Path) -> None:
    checkpoint = tmp_path / LEADER_EPOCH_CHECKPOINT
    for text in ("0\n2\n1 0\n", "0\nx\n", "1\n1\n1 0\n", "0\n2\n2 0\n1 5\n"):
        checkpoint.write_text(text)
        with pytest.raises(HeaderCheckError, match=f"^{checkpoint}: "):
            read_leader_epochs(tmp_path)


def test_a_snapshot_name_must_match_its_epoch_and_framing(samples_dir: Path, tmp_path: Path) -> None:
    raw = sample_bytes(samples_dir, KCKOH)
    wrong_epoch = tmp_path / SnapshotId(7605, 2).file_name()
    wrong_epoch.write_bytes(raw)
    with pytest.raises(HeaderCheckError, match="byte position 0, offset 0: leader epoch 1 in a snapshot of epoch 2"):
        list(read_snapshot(wrong_epoch))
    batches = sample_batches(samples_dir, KCKOH)
    no_footer = tmp_path / SnapshotId(7605, 1).file_name()
    no_footer.write_bytes(raw[: batches[-1].position])
    with pytest.raises(HeaderCheckError, match=f"byte position {batches[1].position}, offset 1: the last batch"):
        list(read_snapshot(no_footer))
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n1 0\n3 7000\n")
    with pytest.raises(HeaderCheckError, match=r"the file name says epoch 1, .* gives epoch 3 for offset 7604"):
        list(read_snapshot(no_footer))
