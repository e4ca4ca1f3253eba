"""Maintenance: after VACUUM with zero retention and the removal of every Delta log file before the last
checkpoint (what log retention does after its 30 days), every offset still answers as replay does; a crash
in the middle of `kraftlake maintain` loses nothing; readers during maintenance see whole images."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from deltalake import DeltaTable

from kraftlake.lake.ingest import ingest
from kraftlake.lake.maintenance import MaintenancePolicy, maintain
from kraftlake.lake.warehouse import IMAGE_CHECKPOINTS, Warehouse, all_tables
from tests.harness.answers import assert_warehouse_equals_replay, from_warehouse, replayed
from tests.lake.test_ingest import SAMPLE_DIRS, _offsets_to_check

# Small numbers, so the samples get image checkpoints and compactions: the paths the long run takes.
POLICY = MaintenancePolicy(checkpoint_min_rows=10, compact_above_files=3)
KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]


def _ingested(directory: Path, root: Path) -> Warehouse:
    warehouse = Warehouse(root / "warehouse")
    ingest(directory, warehouse, image_every=150, policy=POLICY)
    return warehouse


@pytest.fixture(scope="module")
def ingested_once(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Warehouse]:
    """Every sample's log ingested once; a test that changes a warehouse works on a copy."""
    return {
        sample: _ingested(samples_dir / directory, tmp_path_factory.mktemp(sample))
        for sample, directory in SAMPLE_DIRS.items()
    }


def _copy(warehouse: Warehouse, root: Path) -> Warehouse:
    shutil.copytree(warehouse.uri, root / "warehouse")
    return Warehouse(root / "warehouse")


def _drop_log_before_last_checkpoint(warehouse: Warehouse) -> int:
    """Delete every `_delta_log` entry older than the table's last Delta checkpoint; how many went."""
    removed = 0
    for name in all_tables():
        log = Path(warehouse.table_uri(name)) / "_delta_log"
        last = json.loads((log / "_last_checkpoint").read_text())["version"]
        for entry in log.iterdir():
            stem = entry.name.split(".")[0]
            if stem.isdigit() and int(stem) < last:
                entry.unlink()
                removed += 1
    return removed


@pytest.mark.parametrize("sample", list(SAMPLE_DIRS))
def test_time_travel_survives_vacuum_and_log_cleanup(
    sample: str, samples_dir: Path, tmp_path: Path, ingested_once: dict[str, Warehouse]
) -> None:
    directory = samples_dir / SAMPLE_DIRS[sample]
    warehouse = _copy(ingested_once[sample], tmp_path)
    offsets = _offsets_to_check(warehouse, seed=len(sample))
    assert warehouse.table(IMAGE_CHECKPOINTS).to_pyarrow_table().num_rows >= 1  # the checkpoint path is exercised

    reports = maintain(warehouse, retention_hours=0)
    compacted_away = sum(report.files_before - report.files_after for report in reports)
    assert sum(report.vacuumed for report in reports) >= compacted_away  # every file compaction left is gone
    assert _drop_log_before_last_checkpoint(warehouse) > 0
    with pytest.raises(Exception):  # noqa: B017 - delta-rs raises its own error type for a missing version
        DeltaTable(warehouse.table_uri("batches"), version=1).to_pyarrow_table()

    assert_warehouse_equals_replay(warehouse, directory, offsets)
    for offset in offsets[:: max(1, len(offsets) // 3)]:
        image = subprocess.run(
            [*KRAFTLAKE, "image", "--warehouse", warehouse.uri, "--at-offset", str(offset), "--json"],
            capture_output=True, text=True, check=False,
        )
        replay = subprocess.run(
            [*KRAFTLAKE, "replay", str(directory), "--to-offset", str(offset), "--json"],
            capture_output=True, text=True, check=False,
        )
        assert image.returncode == replay.returncode, f"{sample} at {offset}: {image.stderr} / {replay.stderr}"
        if image.returncode == 0:  # else both refused it: before the first published image
            assert json.loads(image.stdout) == json.loads(replay.stdout), f"{sample} at {offset}"


def test_the_sink_keeps_file_counts_bounded(ingested_once: dict[str, Warehouse]) -> None:
    warehouse = ingested_once["rjmfernandes"]
    counts = {name: len(warehouse.table(name).file_uris()) for name in all_tables()}
    assert max(counts.values()) <= POLICY.compact_above_files + 1, counts


@pytest.mark.parametrize(
    "failpoint",
    ["compaction.after_write:2", "maintain.after_compact:5", "maintain.after_checkpoint:9", "maintain.after_vacuum:20"],
)
def test_crash_in_maintenance_then_rerun(
    failpoint: str, samples_dir: Path, tmp_path: Path, ingested_once: dict[str, Warehouse]
) -> None:
    directory = samples_dir / SAMPLE_DIRS["Niloufar1171_LDI-POC"]
    warehouse = _copy(ingested_once["Niloufar1171_LDI-POC"], tmp_path)
    offsets = _offsets_to_check(warehouse, seed=7)
    command = [*KRAFTLAKE, "maintain", "--warehouse", warehouse.uri, "--retention-hours", "0"]
    crashed = subprocess.run(command, env={**os.environ, "KRAFTLAKE_FAILPOINT": failpoint}, capture_output=True)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert_warehouse_equals_replay(warehouse, directory, offsets[::4])
    env = {key: value for key, value in os.environ.items() if key != "KRAFTLAKE_FAILPOINT"}
    resumed = subprocess.run(command, env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert all(len(warehouse.table(name).file_uris()) <= 1 for name in all_tables())
    assert_warehouse_equals_replay(warehouse, directory, offsets)


def test_readers_during_maintenance_see_whole_images(
    samples_dir: Path, tmp_path: Path, ingested_once: dict[str, Warehouse]
) -> None:
    directory = samples_dir / SAMPLE_DIRS["rjmfernandes"]
    warehouse = _copy(ingested_once["rjmfernandes"], tmp_path)
    offsets = _offsets_to_check(warehouse, seed=3)[::6]
    expected = {offset: replayed([directory], offset, provenance=False) for offset in offsets}
    reads: list[tuple[int, bool]] = []  # (offset, equal to replay) for every read made during maintenance
    done = threading.Event()

    def read_while_maintaining() -> None:
        while not done.is_set():
            for offset in offsets:
                image = from_warehouse(warehouse, offset, provenance=False)
                reads.append((offset, image == expected[offset]))

    reader = threading.Thread(target=read_while_maintaining)
    reader.start()
    try:
        maintain(warehouse)
    finally:
        done.set()
        reader.join()
    assert len(reads) >= len(offsets)
    assert [offset for offset, equal in reads if not equal] == []
