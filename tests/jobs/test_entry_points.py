"""The spark-submit entry points take the CLI's flags and settings: `jobs/materialize.py` builds the same
`MaterializeConfig` as `kraftlake materialize` from the same file and flags (every default the settings'), and
`jobs/ingest.py` is `kraftlake ingest`: storage options, the config file and one-line errors (exit code 2,
nothing created for a wrong path)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kraftlake.cli.commands.materialize import config_from
from kraftlake.cli.main import build_parser
from kraftlake.jobs.materialize import parse_args
from kraftlake.settings import MaterializeSettings, SettingsError

CONFIG = """
[kafka]
bootstrap_servers = "127.0.0.1:1"
topic = "from-file"
options = { "security.protocol" = "SASL_SSL" }
[materialize]
warehouse = "s3://lake/w"
idle_publish_seconds = 2.5
[warehouse]
storage_options = { AWS_REGION = "eu-west-1" }
"""


def test_the_streaming_job_takes_the_cli_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no conf/kraftlake.toml here: the settings' defaults
    path = tmp_path / "kraftlake.toml"
    path.write_text(CONFIG)
    flags = ["--config", str(path), "--storage-option", "AWS_ALLOW_HTTP=true", "--no-coalesce-backlog",
             "--kafka-option", "sasl.mechanism=PLAIN", "--max-offsets-per-trigger", "9"]
    job = parse_args(flags)
    assert job == config_from(build_parser().parse_args(["materialize", *flags]))
    assert (job.bootstrap_servers, job.topic, job.warehouse, job.idle_publish_seconds) == (
        "127.0.0.1:1", "from-file", "s3://lake/w", 2.5)
    assert dict(job.storage_options) == {"AWS_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "true"}
    assert dict(job.kafka_options) == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}
    assert (job.coalesce_backlog, job.max_offsets_per_trigger) == (False, 9)

    defaults, settings = parse_args(["--bootstrap-servers", "127.0.0.1:2"]), MaterializeSettings()
    assert (defaults.idle_publish_seconds, defaults.coalesce_backlog, defaults.trigger_seconds) == (
        settings.idle_publish_seconds, settings.coalesce_backlog, settings.trigger_seconds)
    assert (defaults.warehouse, defaults.spark_checkpoint) == (settings.warehouse, settings.checkpoint)
    with pytest.raises(SettingsError, match=r"kafka\.bootstrap_servers.*--bootstrap-servers"):
        parse_args([])
    with pytest.raises(SettingsError, match="trigger_seconds must be positive"):
        parse_args(["--bootstrap-servers", "127.0.0.1:2", "--trigger-seconds", "0"])


def _ingest(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kraftlake.jobs.ingest", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_the_ingest_job_is_kraftlake_ingest(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    wrong = tmp_path / "not-a-log"
    wrong.mkdir()
    for args, named in [
        ((str(wrong), "--warehouse", str(warehouse)), str(wrong)),
        ((str(wrong), "--warehouse", str(warehouse), "--storage-option", "AWS_REGION"), "--storage-option"),
        ((str(wrong), "--config", str(tmp_path / "missing.toml")), "missing.toml"),
    ]:
        result = _ingest(*args)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1, result.stderr
        assert lines[0].startswith("ingest: ") and named in lines[0], lines
        assert not warehouse.exists(), "nothing created"
