"""One writer at a time (`kraftlake.lake.sink`): two ingests started at once as real processes, and a writer stopped
mid-run (SIGSTOP) while another takes over, then resumed: the older writer is fenced with one line naming the
warehouse, and the tables equal one uninterrupted run's, every image offset published once. On a disk and on
S3 (SeaweedFS, delta-rs conditional puts)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kraftlake.lake.ingest import ingest
from kraftlake.lake.warehouse import IMAGES, Warehouse
from tests.fixtures.s3 import S3Store
from tests.lake.warehouse_state import warehouse_contents

SAMPLE = "Niloufar1171_LDI-POC"
IMAGE_EVERY = 400
FENCED = "another writer (writer epoch 2: directory "  # its source, host and pid follow, then what to do


def _start(directory: Path, warehouse: Warehouse) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "kraftlake.jobs.ingest", str(directory), "--warehouse", warehouse.uri,
               "--image-every", str(IMAGE_EVERY)]
    env = {**os.environ, **warehouse.storage_options}  # delta-rs reads the AWS_* options from the environment
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=300)
    return process.returncode, stderr


def _published(warehouse: Warehouse) -> int:
    return warehouse.table(IMAGES).to_pyarrow_table(columns=["offset"]).num_rows if warehouse.exists() else 0


@pytest.fixture(scope="module")
def reference(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    warehouse = Warehouse(tmp_path_factory.mktemp("reference") / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse, image_every=IMAGE_EVERY)
    return warehouse_contents(warehouse)


def test_two_ingests_started_at_once(samples_dir: Path, tmp_path: Path, reference: dict) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    first, second = _start(samples_dir / SAMPLE, warehouse), _start(samples_dir / SAMPLE, warehouse)
    results = [_finish(first), _finish(second)]
    assert 0 in [code for code, _ in results], results
    for code, stderr in results:  # one finished; the other finished too (nothing left) or was fenced
        assert code == 0 or (code == 2 and len(stderr.strip().splitlines()) == 1 and warehouse.uri in stderr), stderr
        assert "None" not in stderr and "fix and rerun" not in stderr, stderr  # what is true, and what to do
    contents = warehouse_contents(warehouse)
    assert contents == reference
    assert len(contents["image_offsets"]) == len(set(contents["image_offsets"]))


def _takeover(directory: Path, warehouse: Warehouse, reference: dict, signal_first: signal.Signals) -> None:
    """Writer 1 is stopped (SIGSTOP) or killed (SIGKILL) after its first images; writer 2 runs whole; writer 1,
    if only stopped, resumes and is fenced."""
    first = _start(directory, warehouse)
    deadline = time.monotonic() + 120
    while _published(warehouse) < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    first.send_signal(signal_first)
    try:
        assert first.poll() is None or first.returncode == -signal.SIGKILL, "writer 1 ended before the signal"
        taking_over = _finish(_start(directory, warehouse))
        assert taking_over == (0, ""), taking_over
    finally:
        first.send_signal(signal.SIGCONT)
    code, stderr = _finish(first)
    if signal_first == signal.SIGSTOP:
        assert code == 2, stderr
        assert len(stderr.strip().splitlines()) == 1 and warehouse.uri in stderr and FENCED in stderr, stderr
        assert "rerunning this one would stop that one" in stderr and "None" not in stderr, stderr
    contents = warehouse_contents(warehouse)
    assert contents == reference
    assert len(contents["image_offsets"]) == len(set(contents["image_offsets"]))


@pytest.mark.parametrize("signal_first", [signal.SIGSTOP, signal.SIGKILL], ids=["stopped", "killed"])
def test_a_writer_takes_over_from_a_stopped_or_killed_one(
    samples_dir: Path, tmp_path: Path, reference: dict, signal_first: signal.Signals
) -> None:
    _takeover(samples_dir / SAMPLE, Warehouse(tmp_path / "warehouse"), reference, signal_first)


def test_a_stopped_writer_is_fenced_on_s3(s3_store: S3Store, samples_dir: Path, reference: dict) -> None:
    warehouse = Warehouse(s3_store.uri(f"writers-{uuid.uuid4().hex[:8]}"), s3_store.storage_options())
    _takeover(samples_dir / SAMPLE, warehouse, reference, signal.SIGSTOP)
