"""Bad input stops ingest with the file and offset named, publishes nothing past the last good image,
and a rerun after the fix completes the warehouse as if nothing had happened."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest

from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import scan_batches
from tests.lake.warehouse_state import warehouse_contents

SAMPLE = "Niloufar1171_LDI-POC"
LOG = "__cluster_metadata-0/00000000000000000000.log"


@pytest.fixture
def sample_copy(samples_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "cluster"
    shutil.copytree(samples_dir / SAMPLE, copy)
    return copy


def _batch_at(log: Path, index: int):
    return list(scan_batches(log.read_bytes()))[index]


def _run_ingest(directory: Path, warehouse: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kraftlake.cli.main", "ingest", str(directory), "--warehouse", str(warehouse)]
    return subprocess.run([*command, "--image-every", "300"], capture_output=True, text=True)


def _assert_stopped_cleanly(result: subprocess.CompletedProcess, log: Path, offset: int, warehouse: Path) -> None:
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert str(log) in result.stderr and f"offset {offset}" in result.stderr
    assert max(image.offset for image in WarehouseReader(Warehouse(warehouse)).images()) < offset


def _reference(samples_dir: Path, tmp_path: Path) -> dict:
    warehouse = Warehouse(tmp_path / "reference")
    ingest(samples_dir / SAMPLE, warehouse, image_every=300)
    return warehouse_contents(warehouse)


def test_crc_mismatch_then_fix_and_rerun(sample_copy: Path, samples_dir: Path, tmp_path: Path) -> None:
    log = sample_copy / LOG
    original = log.read_bytes()
    header = _batch_at(log, 3000)
    corrupted = bytearray(original)
    corrupted[header.position + header.size_in_bytes - 2] ^= 0xFF
    log.write_bytes(bytes(corrupted))
    warehouse = tmp_path / "warehouse"

    result = _run_ingest(sample_copy, warehouse)
    _assert_stopped_cleanly(result, log, header.base_offset, warehouse)
    assert "CRC mismatch" in result.stderr

    log.write_bytes(original)
    assert _run_ingest(sample_copy, warehouse).returncode == 0
    assert warehouse_contents(Warehouse(warehouse)) == _reference(samples_dir, tmp_path)


def test_unknown_record_type_names_its_offset(sample_copy: Path, tmp_path: Path) -> None:
    log = sample_copy / LOG
    data = bytearray(log.read_bytes())
    header = _batch_at(log, 2500)
    noop_value = bytes([0x01, 0x14, 0x00, 0x00])  # frame 1, apiKey 20 (NoOp), version 0, no tags
    start = header.position + 61
    value_at = data.index(noop_value, start, header.position + header.size_in_bytes)
    data[value_at + 1] = 0x3F  # apiKey 63: no such record type
    batch_end = header.position + header.size_in_bytes
    struct.pack_into(">I", data, header.position + 17, crc32c.crc32c(bytes(data[header.position + 21 : batch_end])))
    log.write_bytes(bytes(data))
    warehouse = tmp_path / "warehouse"

    result = _run_ingest(sample_copy, warehouse)
    _assert_stopped_cleanly(result, log, header.base_offset, warehouse)
    assert "unknown metadata record type (apiKey 63)" in result.stderr


def test_truncated_segment_names_its_last_batch(sample_copy: Path, tmp_path: Path) -> None:
    log = sample_copy / LOG
    header = _batch_at(log, 4000)
    log.write_bytes(log.read_bytes()[: header.position + 30])
    warehouse = tmp_path / "warehouse"

    result = _run_ingest(sample_copy, warehouse)
    _assert_stopped_cleanly(result, log, header.base_offset, warehouse)
    assert "truncated" in result.stderr


def test_a_flipped_leader_epoch_bit_names_its_batch(sample_copy: Path, tmp_path: Path) -> None:
    """The epoch sits outside the CRC: only leader-epoch-checkpoint (epoch 1 from offset 0) tells it is wrong."""
    log = sample_copy / LOG
    data = bytearray(log.read_bytes())
    header = _batch_at(log, 3500)
    data[header.position + 15] ^= 0x02  # partitionLeaderEpoch 1 -> 3
    log.write_bytes(bytes(data))
    warehouse = tmp_path / "warehouse"

    result = _run_ingest(sample_copy, warehouse)
    _assert_stopped_cleanly(result, log, header.base_offset, warehouse)
    assert f"byte position {header.position}" in result.stderr
    assert "leader epoch 3, but" in result.stderr
