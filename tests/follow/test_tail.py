"""`kraftlake.follow.tail.DirectoryTail` on a real Kafka segment (../shared/kafka-samples) cut into two segments and
written the way a live node writes them: a batch cut off at the tail is waited for and then handed on whole, a
new segment is taken once the previous one is read to its end, and a damaged or shrunk segment stops the tail
with the file and byte named. (The live node, retention and snapshots: tests/follow/test_follow.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.follow.client import FollowError
from kraftlake.follow.observer import CommittedBatch
from kraftlake.follow.tail import DirectoryTail, TailConfig
from kraftlake.records.batch import read_header
from kraftlake.records.files import MetadataLogDir

SAMPLE = Path("Niloufar1171_LDI-POC/__cluster_metadata-0/00000000000000000000.log")


def sample_batches(samples_dir: Path) -> list[bytes]:
    data = (samples_dir / SAMPLE).read_bytes()
    batches, pos = [], 0
    while pos < len(data):
        size = read_header(data, pos, "sample").size_in_bytes
        batches.append(data[pos : pos + size])
        pos += size
    return batches


def segment_name(raw: bytes) -> str:
    return f"{read_header(raw, 0, 'batch').base_offset:020d}.log"


def handed_raw(tail: DirectoryTail) -> list[bytes]:
    items = tail.poll()
    assert all(isinstance(item, CommittedBatch) for item in items)
    return [item.raw for item in items if isinstance(item, CommittedBatch)]


def test_a_growing_directory_is_tailed_batch_by_batch(samples_dir: Path, tmp_path: Path) -> None:
    batches = sample_batches(samples_dir)
    assert len(batches) > 6
    split = len(batches) // 2
    first, second = tmp_path / segment_name(batches[0]), tmp_path / segment_name(batches[split])
    cut = len(batches[2]) // 2
    first.write_bytes(b"".join(batches[:2]) + batches[2][:cut])  # Kafka is writing the third batch
    tail = DirectoryTail(TailConfig(MetadataLogDir(tmp_path), poll_interval_s=0), 0)

    assert handed_raw(tail) == batches[:2]
    assert handed_raw(tail) == []  # still being written: waited for, not an error
    with first.open("ab") as handle:
        handle.write(batches[2][cut:] + b"".join(batches[3:split]))
    assert handed_raw(tail) == batches[2:split]
    second.write_bytes(batches[split][:5])  # the new segment's first batch, not even its length yet
    assert handed_raw(tail) == []
    second.write_bytes(b"".join(batches[split:]))
    assert handed_raw(tail) == batches[split:]
    assert tail.position.next_offset == read_header(batches[-1], 0, "").last_offset + 1

    # a restart from the middle of the first segment (what the topic holds) reads on from there
    again = DirectoryTail(TailConfig(MetadataLogDir(tmp_path), poll_interval_s=0), tail_offset(batches[3]))
    assert handed_raw(again) == batches[3:split] and handed_raw(again) == batches[split:]


def tail_offset(raw: bytes) -> int:
    return read_header(raw, 0, "").base_offset


def test_a_damaged_or_shrunk_segment_stops_the_tail(samples_dir: Path, tmp_path: Path) -> None:
    batches = sample_batches(samples_dir)
    first, second = tmp_path / segment_name(batches[0]), tmp_path / segment_name(batches[3])
    first.write_bytes(b"".join(batches[:2]) + batches[2][:-1])  # cut short for good: Kafka writes a newer one
    second.write_bytes(b"".join(batches[3:]))
    tail = DirectoryTail(TailConfig(MetadataLogDir(tmp_path), poll_interval_s=0), 0)
    assert handed_raw(tail) == batches[:2]
    with pytest.raises(FollowError, match=f"{first}, byte position {len(batches[0]) + len(batches[1])}: the "
                                          "segment ends inside a batch, and Kafka writes to a newer one"):
        tail.poll()

    first.write_bytes(b"".join(batches[:3]))
    tail = DirectoryTail(TailConfig(MetadataLogDir(tmp_path), poll_interval_s=0), 0)
    assert handed_raw(tail) == batches[:3] and handed_raw(tail) == batches[3:]
    second.write_bytes(batches[3][:10])  # Kafka truncated its log below what was read
    with pytest.raises(FollowError, match=f"{second}: the segment is 10 bytes, shorter than"):
        tail.poll()


def test_a_directory_holding_only_a_snapshot_hands_it_once(samples_dir: Path, tmp_path: Path) -> None:
    """A node's directory with a snapshot and no segment (yet): the snapshot once, then nothing until the log
    comes, rather than the same snapshot at every poll; a topic ending inside it gets it whole again."""
    snapshot = next((samples_dir / "kckoh_xflow/kafka-data/__cluster_metadata-0").glob("*.checkpoint"))
    (tmp_path / snapshot.name).write_bytes(snapshot.read_bytes())
    tail = DirectoryTail(TailConfig(MetadataLogDir(tmp_path), poll_interval_s=0), 0)
    handed = tail.poll()
    assert [type(item).__name__ for item in handed] == ["FetchedSnapshot"]
    assert tail.poll() == [] and tail.poll() == []
    end = tail.position.next_offset
    cut = DirectoryTail(TailConfig(MetadataLogDir(tmp_path), poll_interval_s=0), end, snapshot_first=True)
    assert [type(item).__name__ for item in cut.poll()] == ["FetchedSnapshot"]
