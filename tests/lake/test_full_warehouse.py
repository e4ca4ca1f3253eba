"""A warehouse on a disk that fills up mid-run, then made read-only: `kraftlake ingest` stops with one line
naming the warehouse, readers see the last whole image throughout, and once the disk is writable with room
again a rerun finishes the warehouse exactly as an uninterrupted run writes it. The disk is a real tmpfs of
2 MiB mounted under the test's directory (the tests run as root)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftlake.lake.ingest import ingest
from kraftlake.lake.warehouse import Warehouse
from tests.lake.reader_loop import published
from tests.lake.reader_loop import run as cli
from tests.lake.warehouse_state import warehouse_contents

SAMPLE = "Niloufar1171_LDI-POC"  # 4,929 offsets, about 0.8 MiB of warehouse at an image per 400
IMAGE_EVERY = 400
FREE_BYTES = 600 * 1024  # what the ballast leaves of the disk: the run stops after a few images
KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _remount(mount: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(mount)], check=True)


def _kraftlake(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*KRAFTLAKE, *args], capture_output=True, text=True)


def _stopped_with_one_line(run: subprocess.CompletedProcess, line: str) -> None:
    """Exit code 2 and one kraftlake line naming the warehouse and the cause (delta-rs's own worker threads
    may print a Rust panic note above it: Rust's panic hook writes it to the process's stderr, out of
    Python's reach), no Python traceback."""
    lines = [line for line in run.stderr.splitlines() if line.startswith("kraftlake")]
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert len(lines) == 1 and lines[0].startswith(f"kraftlake ingest: {line}"), run.stderr


def _reads_as_replay(uri: str, directory: Path, offset: int) -> None:
    """The image at `offset` read through the CLI (in this process) equals `kraftlake replay`'s."""
    code, image, error = cli(["image", "--warehouse", uri, "--at-offset", str(offset), "--json"])
    assert code == 0, error
    assert json.loads(image) == json.loads(cli(["replay", str(directory), "--to-offset", str(offset), "--json"])[1])


def test_a_full_then_read_only_disk_stops_cleanly_and_a_rerun_resumes(
    small_disk: Path, samples_dir: Path, tmp_path: Path
) -> None:
    directory = samples_dir / SAMPLE
    reference = Warehouse(tmp_path / "reference")
    ingest(directory, reference, image_every=IMAGE_EVERY)
    expected = warehouse_contents(reference)
    uri = str(small_disk / "warehouse")
    command = ["ingest", str(directory), "--warehouse", uri, "--image-every", str(IMAGE_EVERY)]

    ballast = small_disk / "ballast"
    ballast.write_bytes(bytes(2 * 1024 * 1024 - FREE_BYTES))
    full = _kraftlake(*command)
    _stopped_with_one_line(full, f"no space left on device writing warehouse {uri}")  # not "Failed to parse…"
    known = published(uri)
    assert known is not None
    last = known[1]
    assert 0 <= last < max(expected["image_offsets"])  # some images were published, not all
    _reads_as_replay(uri, directory, last)

    ballast.unlink()
    _remount(small_disk, "ro")
    read_only = _kraftlake(*command)
    _stopped_with_one_line(read_only, f"warehouse {uri}: ")
    assert "Read-only file system" in read_only.stderr
    assert published(uri) == known
    _reads_as_replay(uri, directory, last)  # a read-only warehouse still answers

    _remount(small_disk, "rw")
    resumed = _kraftlake(*command)
    assert resumed.returncode == 0, resumed.stderr
    assert warehouse_contents(Warehouse(uri)) == expected
