"""Arm a crash, run, resume, compare: an ingest SIGKILLed anywhere and rerun leaves exactly the warehouse
of an uninterrupted run, with no duplicate image."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftlake.lake.ingest import ingest
from kraftlake.lake.warehouse import Warehouse
from tests.lake.warehouse_state import last_published, warehouse_contents

SAMPLE = "Niloufar1171_LDI-POC"
IMAGE_EVERY = "400"
START_TIMEOUT_S = 300.0  # an ingest's first image, Python's start-up included, on a loaded machine


def _ingest_command(directory: Path, warehouse: Path) -> list[str]:
    module = [sys.executable, "-m", "kraftlake.jobs.ingest"]
    return [*module, str(directory), "--warehouse", str(warehouse), "--image-every", IMAGE_EVERY]


def _run(directory: Path, warehouse: Path, failpoint: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("KRAFTLAKE_FAILPOINT", None)
    if failpoint:
        env["KRAFTLAKE_FAILPOINT"] = failpoint
    return subprocess.run(_ingest_command(directory, warehouse), env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def reference(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    warehouse = Warehouse(tmp_path_factory.mktemp("reference") / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse, image_every=int(IMAGE_EVERY))
    return warehouse_contents(warehouse)


@pytest.mark.parametrize(
    "failpoint",
    ["sink.after_batches:2", "sink.between_history_and_current:3", "sink.after_table:4", "sink.after_image:2"],
)
def test_crash_at_a_failpoint_then_rerun(failpoint: str, samples_dir: Path, tmp_path: Path, reference: dict) -> None:
    warehouse = tmp_path / "warehouse"
    crashed = _run(samples_dir / SAMPLE, warehouse, failpoint)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert warehouse_contents(Warehouse(warehouse)) != reference  # the crash really cut the run short
    resumed = _run(samples_dir / SAMPLE, warehouse)
    assert resumed.returncode == 0, resumed.stderr
    contents = warehouse_contents(Warehouse(warehouse))
    assert contents == reference
    assert len(contents["image_offsets"]) == len(set(contents["image_offsets"]))


def _until_writing(process: subprocess.Popen, warehouse: Path, before: int | None) -> None:
    """Until the ingest has published an image past `before` (it is past Python's start-up, which takes a
    second on a quiet machine and many on a loaded one) or has ended (nothing was left to write)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while process.poll() is None and last_published(warehouse) == before:
        assert time.monotonic() < deadline, f"the ingest published nothing past {before} in {START_TIMEOUT_S:.0f} s"
        time.sleep(0.05)


def test_sigkill_at_random_moments_then_rerun(samples_dir: Path, tmp_path: Path, reference: dict) -> None:
    warehouse = tmp_path / "warehouse"
    rng = random.Random(7)
    for _ in range(3):
        before = last_published(warehouse)
        process = subprocess.Popen(
            _ingest_command(samples_dir / SAMPLE, warehouse), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _until_writing(process, warehouse, before)
        time.sleep(rng.uniform(0.0, 1.0))  # where in the run the kill lands, not a wait for something
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert _run(samples_dir / SAMPLE, warehouse).returncode == 0
    assert warehouse_contents(Warehouse(warehouse)) == reference
