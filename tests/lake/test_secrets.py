"""`kraftlake maintain` scrubs what an older kraftlake kept in clear: afterwards no file of the warehouse and no
Delta version of any table holds the value, and the history still shows that the secret changed, and when."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from deltalake import DeltaTable

from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.secrets import CONFIG_TABLES
from kraftlake.lake.warehouse import Warehouse, all_tables
from kraftlake.records import metadata_types as mt
from kraftlake.replay.canonical import REDACTED
from tests.replay.builders import rich_records
from tests.replay.test_kafka_oracle import write_log

SECRET = "-----BEGIN CERTIFICATE-----MIIBszCCAVmgAwIBAgIUQ"
KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]


def _config(name: str, value: str, resource_type: int = 4, resource: str = "1") -> mt.ConfigRecord:
    return mt.ConfigRecord(resource_type=resource_type, resource_name=resource, name=name, value=value)


def _old_warehouse(root: Path) -> Warehouse:
    """A warehouse as kraftlake before Kafka's rule left it: the name rule kept `ssl.truststore.certificates`
    (Kafka: PASSWORD) and an unknown plugin config in clear, in every configs table and in older versions."""
    log = write_log(root / "log", [
        *([record] for record in rich_records()),
        [_config("ssl.truststore.certificates", "first"), _config("log.retention.ms", "1000")],
        [_config("ssl.truststore.certificates", "second"), _config("acme.plugin.token", "third", 2, "orders")],
    ])
    warehouse = Warehouse(root / "warehouse")
    ingest(log, warehouse, image_every=1)
    for name in CONFIG_TABLES:  # what the old writer wrote: the values themselves, one Delta version each
        table = warehouse.table(name)
        for config in ("ssl.truststore.certificates", "acme.plugin.token"):
            table.update(new_values={"value": SECRET}, predicate=f"\"name\" = '{config}' AND \"value\" IS NOT NULL")
    return warehouse


def _every_file_text(root: Path) -> str:
    """Each file's bytes as text, and each Parquet file's values (compressed pages hide them from the bytes)."""
    texts = []
    for path in root.rglob("*"):
        if path.is_file():
            texts.append(path.read_bytes().decode("latin-1"))
            if path.suffix == ".parquet":
                texts.append(str(pq.read_table(path).to_pylist()))
    return "\n".join(texts)


def _every_version_text(warehouse: Warehouse) -> str:
    texts = []
    for name in all_tables():
        latest = warehouse.table(name).version()
        for version in range(latest + 1):
            try:
                texts.append(str(DeltaTable(warehouse.table_uri(name), version=version).to_pyarrow_table().to_pylist()))
            except Exception as error:  # a version whose log or files are gone cannot bring a value back
                texts.append(type(error).__name__)
    return "\n".join(texts)


def test_maintain_scrubs_an_older_warehouse(tmp_path: Path) -> None:
    warehouse = _old_warehouse(tmp_path)
    assert SECRET in _every_file_text(tmp_path / "warehouse") and SECRET in _every_version_text(warehouse)

    done = subprocess.run([*KRAFTLAKE, "maintain", "--warehouse", str(warehouse.uri)], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    scrubbed = ("configs_history: 3 secret value(s) redacted "
                "(broker ssl.truststore.certificates, topic acme.plugin.token);")
    assert scrubbed in done.stdout, done.stdout
    assert SECRET not in _every_file_text(tmp_path / "warehouse")
    assert SECRET not in _every_version_text(warehouse)

    reader = WarehouseReader(warehouse)
    history = reader.history_rows("configs").sort_by("from_offset").to_pylist()
    secret_versions = [row for row in history if row["name"] == "ssl.truststore.certificates"]
    assert [row["value"] for row in secret_versions] == [REDACTED, REDACTED]  # both changes stay, with when
    assert len({row["from_offset"] for row in secret_versions}) == 2
    assert "1000" in {row["value"] for row in history if row["name"] == "log.retention.ms"}  # others stay

    again = subprocess.run([*KRAFTLAKE, "maintain", "--warehouse", str(warehouse.uri)], capture_output=True,
                           text=True, timeout=600, check=True)
    assert "redacted" not in again.stdout  # nothing left to scrub


def test_new_rows_never_hold_the_value(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log", [
        *([record] for record in rich_records()),
        [_config("ssl.truststore.certificates", SECRET), _config("acme.plugin.token", SECRET, 2, "orders"),
         _config("listener.name.external.ssl.keystore.certificate.chain", SECRET, 4, "")],
    ])
    ingest(log, Warehouse(tmp_path / "warehouse"), image_every=1)
    assert SECRET not in _every_file_text(tmp_path / "warehouse")
