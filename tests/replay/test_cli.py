"""`kraftlake replay PATH... [--to-offset N] [--json]`: the canonical image, a readable summary, errors as one
line with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kraftlake.cli.main import main
from kraftlake.records import encode_batch, make_batch
from kraftlake.records.control_types import LeaderChangeMessage
from tests.records.samples import header_flipped_copies
from tests.replay.builders import MV, B, E, N, P, T

RJM = "rjmfernandes_flink-on-prem/data/__cluster_metadata-0"
NILOUFAR_LOG = "Niloufar1171_LDI-POC/__cluster_metadata-0/00000000000000000000.log"


def without_provenance(text: str) -> dict:
    document = json.loads(text)
    del document["provenance"]
    return document


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["replay", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_log_to_o_minus_1_equals_the_snapshot_as_separate_processes(samples_dir: Path) -> None:
    directory = samples_dir / RJM

    def replay(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "kraftlake.cli.main", "replay", *args, "--json"],
                              capture_output=True, text=True, check=True, timeout=300)
        return done.stdout

    from_log = replay(str(directory / "00000000000000000000.log"), "--to-offset", "7751")
    from_snapshot = replay(str(directory / "00000000000000007752-0000000001.checkpoint"))
    assert without_provenance(from_log) == without_provenance(from_snapshot)
    assert json.loads(from_log)["provenance"]["offset"] == 7751


def test_log_to_o_minus_1_equals_the_snapshot_in_process(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = samples_dir / RJM
    _, from_log, _ = run(capsys, str(directory / "00000000000000000000.log"), "--to-offset", "14925", "--json")
    _, from_snapshot, _ = run(capsys, str(directory / "00000000000000014926-0000000001.checkpoint"), "--json")
    assert without_provenance(from_log) == without_provenance(from_snapshot)


def test_a_directory_starts_from_its_latest_usable_snapshot(samples_dir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    directory = samples_dir / RJM
    _, from_directory, _ = run(capsys, str(directory), "--to-offset", "15000", "--json")
    _, from_log, _ = run(capsys, str(directory / "00000000000000000000.log"), "--to-offset", "15000", "--json")
    assert json.loads(from_directory) == json.loads(from_log)


@pytest.fixture
def small_log(tmp_path: Path) -> Path:
    path = tmp_path / "00000000000000000000.log"
    batches = [
        make_batch(0, 1, 10, [LeaderChangeMessage(version=0, leader_id=1)], control=True),
        make_batch(1, 1, 11, [B("Bootstrap records"), MV(14), E()]),
        make_batch(4, 1, 12, [T("foo"), P("foo", 0), P("foo", 1), N()]),
        make_batch(8, 1, 13, [B(), T("bar")]),
    ]
    path.write_bytes(b"".join(encode_batch(batch) for batch in batches))
    return path


def test_summary(small_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(small_log), "--to-offset", "7")
    assert code == 0
    lines = out.splitlines()
    assert "provenance: offset 7, epoch 1, logTimeMs 12, batchAligned True" in lines
    assert "replayed: 3 log batches, 8 records" in lines
    assert "transaction: none" in lines
    assert "metadata.version: 14" in lines
    assert "topics: 1, partitions: 2" in lines


def test_summary_names_an_open_transaction(small_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, str(small_log))
    assert "transaction: continued (open: its records are not visible)" in out.splitlines()
    assert "topics: 1, partitions: 2" in out.splitlines()


def test_json_is_the_canonical_form(small_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Offset 5 is inside the batch 4..7: the image published at 3 answers it (its provenance is that
    image's, as Kafka's); at 7 the whole batch is visible."""
    _, out, _ = run(capsys, str(small_log), "--to-offset", "5", "--json")
    document = json.loads(out)
    assert document["provenance"] == {"offset": 3, "epoch": 1, "logTimeMs": 11, "batchAligned": True}
    assert document["topics"] == {}
    _, out, _ = run(capsys, str(small_log), "--to-offset", "7", "--json")
    document = json.loads(out)
    assert document["provenance"] == {"offset": 7, "epoch": 1, "logTimeMs": 12, "batchAligned": True}
    assert list(document["topics"]["foo"]["partitions"]) == ["0", "1"]


def test_the_summary_names_the_offset_asked_and_the_image_answering(small_log: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, str(small_log), "--to-offset", "5")
    assert out.splitlines()[0] == "asked: offset 5, answered by the image published at offset 3"


def test_offsets_no_image_answers_are_one_line_and_exit_2(small_log: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    for offset, reason in ((2, "offset 2 is before the first published image (offset 3)"),
                           (12, "offset 12 is past the end: images answer offsets 3..9")):
        code, out, err = run(capsys, str(small_log), "--to-offset", str(offset))
        assert (code, out, err) == (2, "", f"kraftlake replay: {small_log}: {reason}\n")


def test_a_missing_path_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(tmp_path / "nope.log"))
    assert (code, out) == (2, "")
    assert err == (f"kraftlake replay: {tmp_path / 'nope.log'}: no such file or directory: expected a `*.log` "
                   "segment, a `*.checkpoint` snapshot or a `__cluster_metadata-0` directory\n")


def test_a_record_that_cannot_apply_names_file_and_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(encode_batch(make_batch(0, 1, 0, [MV(14), N(), E()])))
    code, _, err = run(capsys, str(path))
    assert code == 2
    assert err == (f"kraftlake replay: {path}, offset 2: Encountered EndTransactionRecord without having seen a "
                   "BeginTransactionRecord\n")


def test_asking_for_an_offset_before_a_snapshot_is_refused(samples_dir: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(samples_dir / RJM / "00000000000000007752-0000000001.checkpoint"),
                       "--to-offset", "100")
    assert code == 2
    assert "offset 100 is before the history these files hold (from the snapshot at offset 7751)" in err


def test_every_flipped_base_offset_or_epoch_bit_is_exit_2_naming_file_position_offset(
    samples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's repro: base-offset (bytes 0-7) and leader-epoch (bytes 12-15) flips gave a plausible image."""
    for segment, position, byte in header_flipped_copies(samples_dir, tmp_path, NILOUFAR_LOG, range(16)):
        if 8 <= byte < 12:
            continue  # batchLength: framing errors (tests/records/test_corruption.py)
        for path in (segment, segment.parent.parent):
            code, out, err = run(capsys, str(path))
            assert (code, out) == (2, ""), (path, byte)
            assert err.startswith(f"kraftlake replay: {segment}, byte position {position}, offset "), err
