"""Input that looks harmless but is no metadata log: every command that reads a log refuses it with one line
naming the path and what was expected there, exit code 2, and no side effect (no empty image printed, no
warehouse created, no topic written)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftlake.cli.main import main

COMMANDS = ("replay", "dump", "ingest", "publish")
DIRECTORY_ONLY = ("ingest", "publish")  # replay and dump also take single files


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    """A loopback port the OS gave and nobody listens on: publish must refuse before it connects anywhere."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.fixture
def wrong_paths(tmp_path: Path, samples_dir: Path) -> dict[str, Path]:
    unrelated = tmp_path / "unrelated"
    unrelated.mkdir()
    (unrelated / "README.md").write_text("# notes\nnothing to see here\n")
    shutil.copy(samples_dir / "Niloufar1171_LDI-POC" / "meta.properties", unrelated)  # a Kafka file, not a log
    (unrelated / "bootstrap.checkpoint.bak").write_bytes(b"")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty-partition" / "__cluster_metadata-0").mkdir(parents=True)
    return {
        "an unrelated directory": unrelated,
        "an empty directory": tmp_path / "empty",
        "an empty __cluster_metadata-0 inside": tmp_path / "empty-partition",
        "a file that is not a segment": unrelated / "meta.properties",
        "a text file": unrelated / "README.md",
        "an empty file": unrelated / "bootstrap.checkpoint.bak",
        "a missing path": tmp_path / "missing",
    }


def _argv(command: str, path: Path, tmp_path: Path, port: int) -> list[str]:
    if command == "ingest":
        return [command, str(path), "--warehouse", str(tmp_path / "warehouse")]
    if command == "publish":
        return [command, str(path), "--bootstrap-servers", f"127.0.0.1:{port}", "--topic", "never-written"]
    return [command, str(path)]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_wrong_path_is_one_line_naming_it_and_what_was_expected(
    command: str, wrong_paths: dict[str, Path], tmp_path: Path, closed_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    for kind, path in wrong_paths.items():
        code = main(_argv(command, path, tmp_path, closed_port))
        captured = capsys.readouterr()
        assert code == 2, f"{command} {kind}: exit {code}, printed {captured.out[:200]!r}"
        assert captured.out == "", f"{command} {kind}"
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1, f"{command} {kind}: {captured.err}"
        line = lines[0]
        assert line.startswith(f"kraftlake {command}: ") and str(path) in line, f"{command} {kind}: {line}"
        expected = "`__cluster_metadata-0` directory" if command in DIRECTORY_ONLY or path.is_dir() else "segment"
        assert "expected a" in line and expected in line, f"{command} {kind}: {line}"
    assert not (tmp_path / "warehouse").exists(), "ingest created a warehouse for a wrong path"


def test_the_refusal_in_a_real_process_prints_no_traceback(wrong_paths: dict[str, Path]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kraftlake.cli.main", "replay", str(wrong_paths["an unrelated directory"])],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"kraftlake replay: {wrong_paths['an unrelated directory']}: no `*.log` segment or `*.checkpoint` snapshot "
        "in this directory: expected a copy of a `__cluster_metadata-0` directory (or the log directory holding it)"
    )


def test_real_logs_and_kafka_named_files_are_still_read(samples_dir: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The refusal must not catch what Kafka writes: a data dir, an empty segment, a bootstrap.checkpoint."""
    data_dir = samples_dir / "Niloufar1171_LDI-POC"
    assert main(["replay", str(data_dir)]) == 0
    assert "topics: 5" in capsys.readouterr().out
    empty_segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    empty_segment.parent.mkdir()
    empty_segment.write_bytes(b"")  # Kafka rolls a new, empty segment before appending to it
    assert main(["dump", str(empty_segment)]) == 0
    # read, not refused as a path: alone it is no published image (Kafka publishes it with the log's first batch)
    assert main(["replay", str(data_dir / "bootstrap.checkpoint")]) == 2
    assert "no image is published yet" in capsys.readouterr().err
