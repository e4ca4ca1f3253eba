"""Every secret config Kafka knows, and one it does not, set on a real Kafka 4.4 broker through the Admin API:
none of the values reaches a table file, a command's output, a page or an API answer; that each was set shows."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from kraftlake.cli.broker import LocalBroker
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.config_secrecy import config_types
from kraftlake.records.files import METADATA_PARTITION_DIR
from tests.explorer.conftest import client_for
from tests.lake.test_secrets import _every_file_text

pytestmark = pytest.mark.jvm
KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]
# Kafka refuses most of these as plain broker configs ("only per-listener", "cannot update dynamically"); as a
# listener's override each is stored, and Kafka's rule looks the override up by the config it overrides.
PASSWORDS = sorted(name for name, kind in config_types()["broker"].items() if kind == "PASSWORD")
SECRETS = {f"listener.name.external.{name}": f"S3CRET-{index}-value" for index, name in enumerate(PASSWORDS)}
SECRETS |= {"sasl.jaas.config": "S3CRET-jaas-value", "acme.plugin.token": "S3CRET-unknown-value"}


@pytest.fixture(scope="module")
def secret_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A stopped broker's metadata directory holding every secret above (and a config that is not one)."""
    broker = LocalBroker(tmp_path_factory.mktemp("secret-broker")).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
                   for name, value in {**SECRETS, "log.cleaner.threads": "2"}.items()]
        for future in admin.incremental_alter_configs([ConfigResource(ResourceType.BROKER, "1",
                                                                      incremental_configs=entries)]).values():
            future.result(60)
        del admin  # its threads stop here, before the broker does
    finally:
        broker.stop()
    yield broker.data_dir / "logs" / METADATA_PARTITION_DIR


def _run(*args: str) -> str:
    done = subprocess.run([*KRAFTLAKE, *args], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_no_secret_reaches_tables_commands_pages_or_the_api(secret_log: Path, tmp_path: Path) -> None:
    assert len(PASSWORDS) >= 10
    warehouse = Warehouse(tmp_path / "warehouse")
    outputs = [_run("ingest", str(secret_log), "--warehouse", str(warehouse.uri)), _run("dump", str(secret_log))]
    last = WarehouseReader(warehouse).published_range()[1]
    given = ("--warehouse", str(warehouse.uri))
    outputs += [_run("image", *given, "--at-offset", str(last), "--json"),
                _run("changes", *given, "--from", "0", "--to", str(last)),
                _run("history", *given, "--table", "configs", "--key", "broker:1")]
    client = client_for(warehouse)
    api = "/api/v1/clusters/demo"
    pages = [f"{api}/image/configs?size=500", f"{api}/changes?from=0&to={last}&table=configs",
             f"{api}/history/configs?key=broker:1", f"{api}/timeline", "/clusters/demo/image/configs",
             f"/clusters/demo/changes?from=0&to={last}&table=configs", "/clusters/demo/history/configs?key=broker:1"]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        outputs.append(response.text)
    shown = "\n".join([*outputs, _every_file_text(tmp_path / "warehouse")])
    leaked = [name for name, value in SECRETS.items() if value in shown]
    assert not leaked, leaked
    history = outputs[4]
    assert all(name in history for name in SECRETS) and "[redacted]" in history  # that each was set shows
    assert '"log.cleaner.threads": "2"' in outputs[2]  # a config that is not secret shows its value
