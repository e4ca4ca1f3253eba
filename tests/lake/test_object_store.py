"""A warehouse on a real S3 server (SeaweedFS): ingest equals replay there, and a store that refuses or
cannot be reached stops the command with one line naming the warehouse URI, having published nothing."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

from kraftlake.lake.ingest import ingest
from kraftlake.lake.maintenance import MaintenancePolicy
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.fixtures.s3 import S3Store
from tests.harness.answers import from_warehouse, replayed

SAMPLE = "Niloufar1171_LDI-POC"
KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]
SMALL_POLICY = MaintenancePolicy(checkpoint_min_rows=10, compact_above_files=3)


def _flags(options: dict[str, str]) -> list[str]:
    return [flag for key, value in options.items() for flag in ("--storage-option", f"{key}={value}")]


def _ingest_cli(directory: Path, uri: str, options: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [*KRAFTLAKE, "ingest", str(directory), "--warehouse", uri, *_flags(options), "--image-every", "500"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_ingest_on_s3_equals_replay(s3_store: S3Store, samples_dir: Path) -> None:
    """With image checkpoints and compactions (small policy numbers), as a long run on S3 has them."""
    directory = samples_dir / SAMPLE
    warehouse = Warehouse(s3_store.uri(f"ingest-{uuid.uuid4().hex[:8]}"), s3_store.storage_options())
    ingest(directory, warehouse, image_every=200, policy=SMALL_POLICY)
    last = WarehouseReader(warehouse).last_published()
    for offset in sorted({0, 4, 5, 100, 1000, last // 2, last - 1, last}):
        from_lake = from_warehouse(warehouse, offset, provenance=False)
        assert from_lake == replayed([directory], offset, provenance=False), offset


def test_bad_credentials_name_the_uri_and_write_nothing(s3_store: S3Store, samples_dir: Path) -> None:
    uri = s3_store.uri(f"refused-{uuid.uuid4().hex[:8]}")
    wrong = {**s3_store.storage_options(), "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    result = _ingest_cli(samples_dir / SAMPLE, uri, wrong)
    assert result.returncode == 2, result.stderr
    assert uri in result.stderr
    assert not Warehouse(uri, s3_store.storage_options()).exists()


def test_a_missing_bucket_names_the_uri(s3_store: S3Store, samples_dir: Path) -> None:
    uri = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/warehouse"
    result = _ingest_cli(samples_dir / SAMPLE, uri, s3_store.storage_options())
    assert result.returncode == 2, result.stderr
    assert uri in result.stderr


def test_an_unreachable_store_names_the_uri(s3_store: S3Store, samples_dir: Path) -> None:
    uri = s3_store.uri("unreachable")
    closed = {**s3_store.storage_options(), "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "max_retries": "1",
              "retry_timeout": "5s"}
    result = _ingest_cli(samples_dir / SAMPLE, uri, closed)
    assert result.returncode == 2, result.stderr
    assert uri in result.stderr
