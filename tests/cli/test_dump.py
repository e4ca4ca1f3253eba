"""`kraftlake dump` run as a real process on real and damaged Kafka files."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kraftlake.cli.main import main
from kraftlake.records import metadata_types as mt
from kraftlake.records.batch import encode_batch, make_batch
from tests.records.samples import header_flipped_copies

KRAFTLAKE = Path(sys.executable).parent / "kraftlake"
NILOUFAR = "Niloufar1171_LDI-POC"
NILOUFAR_LOG = f"{NILOUFAR}/__cluster_metadata-0/00000000000000000000.log"
RJM = "rjmfernandes_flink-on-prem/data"


def dump(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KRAFTLAKE), "dump", *map(str, args)], capture_output=True, text=True, timeout=120)


def assert_one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    return lines[0]


def test_json_lines_for_a_data_dir(samples_dir: Path) -> None:
    result = dump(samples_dir / NILOUFAR)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 3 + 4929  # bootstrap.checkpoint, then the segment (README counts)
    assert {"offset", "baseOffset", "leaderEpoch", "timestamp", "control", "type", "version", "data"} <= set(lines[0])
    assert [line["file"].endswith("bootstrap.checkpoint") for line in lines[:3]] == [True] * 3
    log = lines[3:]
    assert [line["offset"] for line in log] == list(range(4929))
    assert log[0]["type"] == "LEADER_CHANGE" and log[0]["control"] is True and log[0]["leaderEpoch"] == 1
    assert log[1] | {"file": None} == {
        "file": None, "offset": 1, "baseOffset": 1, "leaderEpoch": 1, "timestamp": log[1]["timestamp"],
        "control": False, "type": "BEGIN_TRANSACTION_RECORD", "version": 0, "data": {"name": "Bootstrap records"},
    }
    assert log[2]["baseOffset"] == 1 and log[2]["data"] == {"name": "metadata.version", "featureLevel": 19}
    assert sum(line["type"] == "NO_OP_RECORD" for line in log) == 4801
    assert all(isinstance(line["timestamp"], int) and line["timestamp"] > 1_600_000_000_000 for line in log)


def test_directory_order_is_bootstrap_snapshots_segments(samples_dir: Path) -> None:
    result = dump(samples_dir / RJM)
    assert result.returncode == 0, result.stderr
    files: list[str] = []
    for line in result.stdout.splitlines():
        name = Path(json.loads(line)["file"]).name
        if not files or files[-1] != name:
            files.append(name)
    assert files == [
        "bootstrap.checkpoint",
        "00000000000000007752-0000000001.checkpoint",
        "00000000000000014926-0000000001.checkpoint",
        "00000000000000000000.log",
    ]


def test_summary(samples_dir: Path) -> None:
    result = dump("--summary", samples_dir / NILOUFAR_LOG)
    assert result.returncode == 0, result.stderr
    first, *rest = result.stdout.splitlines()
    assert first == f"{samples_dir / NILOUFAR_LOG}: 4814 batches, 4929 records, offsets 0..4928"
    counts = {name: int(count) for name, count in (line.split() for line in rest)}
    assert counts == {
        "NO_OP_RECORD": 4801, "PARTITION_RECORD": 54, "PARTITION_CHANGE_RECORD": 54, "TOPIC_RECORD": 5,
        "BROKER_REGISTRATION_CHANGE_RECORD": 3, "CONFIG_RECORD": 3, "REGISTER_BROKER_RECORD": 2,
        "BEGIN_TRANSACTION_RECORD": 1, "FEATURE_LEVEL_RECORD": 1, "ZK_MIGRATION_STATE_RECORD": 1,
        "END_TRANSACTION_RECORD": 1, "REGISTER_CONTROLLER_RECORD": 1, "PRODUCER_IDS_RECORD": 1, "LEADER_CHANGE": 1,
    }


def test_summary_of_several_files_adds_a_total(samples_dir: Path) -> None:
    result = dump("--summary", samples_dir / RJM)
    assert result.returncode == 0, result.stderr
    assert "all files: 18204 records" in result.stdout.splitlines()  # 3 + 585 + 589 + 17027


def test_truncated_file(samples_dir: Path, tmp_path: Path) -> None:
    raw = (samples_dir / NILOUFAR_LOG).read_bytes()
    cut = 10_000
    broken = tmp_path / "00000000000000000000.log"
    broken.write_bytes(raw[:cut])
    result = dump(broken)
    message = assert_one_line_error(result)
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert printed, "records before the damage stay printed"
    assert [p["offset"] for p in printed] == list(range(len(printed)))
    where = rf"kraftlake dump: {re.escape(str(broken))}, byte position (\d+), offset (\d+)"
    match = re.fullmatch(rf"{where}: truncated.*", message)
    assert match, message
    position, offset = map(int, match.groups())
    assert position < cut < position + 200
    assert offset == len(printed)  # offsets are contiguous: the cut batch starts after the last printed record


def test_crc_corrupted_file(samples_dir: Path, tmp_path: Path) -> None:
    raw = bytearray((samples_dir / NILOUFAR_LOG).read_bytes())
    raw[20_000] ^= 0x01
    broken = tmp_path / "00000000000000000000.log"
    broken.write_bytes(bytes(raw))
    result = dump(broken)
    message = assert_one_line_error(result)
    where = rf"kraftlake dump: {re.escape(str(broken))}, byte position (\d+), offset (\d+)"
    match = re.fullmatch(rf"{where}: CRC mismatch.*", message)
    assert match, message
    position, offset = map(int, match.groups())
    assert position <= 20_000
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert printed[-1]["offset"] == offset - 1


def test_missing_path() -> None:
    message = assert_one_line_error(dump("/nonexistent/kraftlake/dir"))
    assert "/nonexistent/kraftlake/dir" in message


def test_secrets_never_reach_the_output(tmp_path: Path) -> None:
    salt, stored, server = b"NaCl-salt-1234", b"stored-key-5678", b"server-key-9012"
    messages = [
        mt.UserScramCredentialRecord(name="alice", mechanism=1, salt=salt, stored_key=stored, server_key=server,
                                     iterations=8192),
        mt.ConfigRecord(resource_type=4, resource_name="1", name="listener.name.sasl.plain.sasl.jaas.config",
                        value="org.apache.kafka.common.security.plain.PlainLoginModule password=\"hunter2\";"),
        mt.ConfigRecord(resource_type=4, resource_name="1", name="ssl.keystore.password", value="s3cr3t-pw"),
        mt.ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="86400000"),
    ]
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(encode_batch(make_batch(0, 1, 1_700_000_000_000, messages)))
    result = dump(log)
    assert result.returncode == 0, result.stderr
    for secret in ("hunter2", "s3cr3t-pw", "NaCl", "stored-key", "server-key"):
        assert secret not in result.stdout
    for raw in (salt, stored, server):
        assert base64.b64encode(raw).decode() not in result.stdout
    data = [json.loads(line)["data"] for line in result.stdout.splitlines()]
    assert data[0]["iterations"] == 8192 and data[0]["salt"] == "[redacted]"
    assert data[3]["value"] == "86400000"


def test_every_flipped_base_offset_or_epoch_bit_is_exit_2_naming_file_position_offset(
    samples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's repro: base-offset (bytes 0-7) and leader-epoch (bytes 12-15) flips were printed silently."""
    for segment, position, byte in header_flipped_copies(samples_dir, tmp_path, NILOUFAR_LOG, range(16)):
        if 8 <= byte < 12:
            continue  # batchLength: framing errors, covered above
        for args in (["dump", str(segment)], ["dump", "--summary", str(segment.parent.parent)]):
            assert main(args) == 2, (args, byte)
            err = capsys.readouterr().err
            assert err.startswith(f"kraftlake dump: {segment}, byte position {position}, offset "), err
    real = dump(segment)  # the last copy, as a real process
    assert assert_one_line_error(real).startswith(f"kraftlake dump: {segment}, byte position {position}, offset ")
