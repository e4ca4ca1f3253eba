"""The real Kafka files of ../shared/kafka-samples and the figures its README gives for each of them.

The figures are copied from the README's tables (written by an independent decoder), not computed here.
`types` counts metadata records only: the README leaves control records (LeaderChange, SnapshotHeader/Footer)
out of its per-type counts, and `kraftlake.records` includes them.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import cache
from itertools import islice
from pathlib import Path

from kraftlake.records.batch import RecordBatch, decode_batches, scan_batches


@dataclass(frozen=True)
class Sample:
    path: str  # relative to the samples folder
    size: int
    sha256_prefix: str
    batches: int
    records: int
    last_offset: int
    leader_epochs: tuple[int, ...]
    max_records_per_batch: int
    metadata_version: int
    types: dict[str, int]


SAMPLES: tuple[Sample, ...] = (
    Sample(
        "Niloufar1171_LDI-POC/__cluster_metadata-0/00000000000000000000.log", 353439, "c26a1c8bfd22816d",
        4814, 4929, 4928, (1,), 55, 19,
        {"NO_OP_RECORD": 4801, "PARTITION_RECORD": 54, "PARTITION_CHANGE_RECORD": 54, "TOPIC_RECORD": 5,
         "BROKER_REGISTRATION_CHANGE_RECORD": 3, "CONFIG_RECORD": 3, "REGISTER_BROKER_RECORD": 2,
         "BEGIN_TRANSACTION_RECORD": 1, "FEATURE_LEVEL_RECORD": 1, "ZK_MIGRATION_STATE_RECORD": 1,
         "END_TRANSACTION_RECORD": 1, "REGISTER_CONTROLLER_RECORD": 1, "PRODUCER_IDS_RECORD": 1},
    ),
    Sample(
        "Niloufar1171_LDI-POC/bootstrap.checkpoint", 249, "822188638d57d1ae",
        3, 3, 2, (0,), 1, 19, {"FEATURE_LEVEL_RECORD": 1},
    ),
    Sample(
        "rjmfernandes_flink-on-prem/data/__cluster_metadata-0/00000000000000000000.log", 1237901, "c536cc29fa59844a",
        16340, 17027, 17026, (1,), 152, 14,
        {"NO_OP_RECORD": 16277, "CONFIG_RECORD": 375, "PARTITION_RECORD": 151, "PARTITION_CHANGE_RECORD": 151,
         "TOPIC_RECORD": 63, "BROKER_REGISTRATION_CHANGE_RECORD": 3, "BEGIN_TRANSACTION_RECORD": 1,
         "FEATURE_LEVEL_RECORD": 1, "ZK_MIGRATION_STATE_RECORD": 1, "END_TRANSACTION_RECORD": 1,
         "REGISTER_BROKER_RECORD": 1, "PRODUCER_IDS_RECORD": 1},
    ),
    Sample(
        "rjmfernandes_flink-on-prem/data/__cluster_metadata-0/00000000000000007752-0000000001.checkpoint",
        56537, "e40bf0c6f53d4e34", 3, 585, 584, (1,), 583, 14,
        {"CONFIG_RECORD": 375, "PARTITION_RECORD": 146, "TOPIC_RECORD": 58, "FEATURE_LEVEL_RECORD": 1,
         "ZK_MIGRATION_STATE_RECORD": 1, "REGISTER_BROKER_RECORD": 1, "PRODUCER_IDS_RECORD": 1},
    ),
    Sample(
        "rjmfernandes_flink-on-prem/data/__cluster_metadata-0/00000000000000014926-0000000001.checkpoint",
        56736, "35b83611cc9768fb", 3, 589, 588, (1,), 587, 14,
        {"CONFIG_RECORD": 375, "PARTITION_RECORD": 148, "TOPIC_RECORD": 60, "FEATURE_LEVEL_RECORD": 1,
         "ZK_MIGRATION_STATE_RECORD": 1, "REGISTER_BROKER_RECORD": 1, "PRODUCER_IDS_RECORD": 1},
    ),
    Sample(
        "rjmfernandes_flink-on-prem/data/bootstrap.checkpoint", 249, "90c829b92af0a11b",
        3, 3, 2, (0,), 1, 14, {"FEATURE_LEVEL_RECORD": 1},
    ),
    Sample(
        "Jeong-Rae_KafkaDemo/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log", 221482,
        "fff48177e889c705", 3068, 3072, 3071, (1, 2, 3, 5, 6), 4, 14,
        {"NO_OP_RECORD": 3054, "BROKER_REGISTRATION_CHANGE_RECORD": 5, "REGISTER_BROKER_RECORD": 4,
         "BEGIN_TRANSACTION_RECORD": 1, "FEATURE_LEVEL_RECORD": 1, "ZK_MIGRATION_STATE_RECORD": 1,
         "END_TRANSACTION_RECORD": 1},
    ),
    Sample(
        "Jeong-Rae_KafkaDemo/kraft-combined-logs/bootstrap.checkpoint", 249, "7cd87a33ccef20bf",
        3, 3, 2, (0,), 1, 14, {"FEATURE_LEVEL_RECORD": 1},
    ),
    Sample(
        "kckoh_xflow/kafka-data/__cluster_metadata-0/00000000000000007605-0000000001.checkpoint", 5496,
        "31e8a076c21bdb3d", 3, 99, 98, (1,), 97, 11,
        {"PARTITION_RECORD": 82, "CONFIG_RECORD": 7, "TOPIC_RECORD": 5, "FEATURE_LEVEL_RECORD": 1,
         "ZK_MIGRATION_STATE_RECORD": 1, "REGISTER_BROKER_RECORD": 1},
    ),
    Sample(
        "kckoh_xflow/kafka-data/bootstrap.checkpoint", 249, "85abf414d970ba98",
        3, 3, 2, (0,), 1, 11, {"FEATURE_LEVEL_RECORD": 1},
    ),
)

LOG_SAMPLES = tuple(s for s in SAMPLES if s.path.endswith(".log"))


@cache
def sample_bytes(samples_dir: Path, relative: str) -> bytes:
    return (samples_dir / relative).read_bytes()


@cache
def sample_batches(samples_dir: Path, relative: str) -> tuple[RecordBatch, ...]:
    return tuple(decode_batches(sample_bytes(samples_dir, relative), relative))


def header_flipped_copies(
    samples_dir: Path, tmp_path: Path, relative: str, relative_bytes: range
) -> list[tuple[Path, int, int]]:
    """A real segment (with its leader-epoch-checkpoint) copied once per bit of `relative_bytes` of the header
    of its 11th batch, that bit flipped: (segment, batch position, byte flipped)."""
    source = samples_dir / relative
    raw = source.read_bytes()
    position = next(islice(scan_batches(raw), 10, None)).position
    copies = []
    for byte in relative_bytes:
        for bit in range(8):
            directory = tmp_path / f"flip-{byte}-{bit}" / "__cluster_metadata-0"
            directory.mkdir(parents=True)
            shutil.copy(source.parent / "leader-epoch-checkpoint", directory)
            corrupted = bytearray(raw)
            corrupted[position + byte] ^= 1 << bit
            (directory / source.name).write_bytes(corrupted)
            copies.append((directory / source.name, position, byte))
    return copies
