"""Every secret config Kafka knows, and one it does not, set on a real Kafka 4.4 broker through the Admin API and
followed over the network (and, apart, its directory ingested): none of the values reaches a table file, a
command's output or log line, a page or an API answer; that each was set shows."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from kraftlake.cli.broker import LocalBroker
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.config_secrecy import config_types
from kraftlake.records.files import METADATA_PARTITION_DIR
from tests.explorer.conftest import client_for
from tests.fixtures.broker import create_topic
from tests.harness.followers import FollowProcess, end_offset, wait_published
from tests.lake.test_secrets import _every_file_text

pytestmark = pytest.mark.jvm
KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]
# Kafka refuses most of these as plain broker configs ("only per-listener", "cannot update dynamically"); as a
# listener's override each is stored, and Kafka's rule looks the override up by the config it overrides.
PASSWORDS = sorted(name for name, kind in config_types()["broker"].items() if kind == "PASSWORD")
SECRETS = {f"listener.name.external.{name}": f"S3CRET-{index}-value" for index, name in enumerate(PASSWORDS)}
SECRETS |= {"sasl.jaas.config": "S3CRET-jaas-value", "acme.plugin.token": "S3CRET-unknown-value"}


@dataclass(frozen=True)
class SecretCluster:
    """What the broker's secrets went through: its metadata directory (the broker stopped), and a warehouse
    built by following it over the network (`follow` into a topic, then `materialize`), with their output."""

    log: Path
    followed: Warehouse
    output: str


@pytest.fixture(scope="module")
def secret_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecretCluster]:
    """Every secret above (and a config that is not one) set on a real broker through the Admin API."""
    root = tmp_path_factory.mktemp("secret-broker")
    broker = LocalBroker(root / "broker").start()
    try:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
                   for name, value in {**SECRETS, "log.cleaner.threads": "2"}.items()]
        for future in admin.incremental_alter_configs([ConfigResource(ResourceType.BROKER, "1",
                                                                      incremental_configs=entries)]).values():
            future.result(60)
        del admin  # its threads stop here, before the broker does
        log = broker.data_dir / "logs" / METADATA_PARTITION_DIR
        topic = create_topic(bootstrap)
        follower = FollowProcess(broker.node.controller_endpoint, bootstrap, topic).start()
        wait_published(bootstrap, topic, end_offset(log), timeout_s=120)
        assert follower.finish() == 0, follower.output
        warehouse = Warehouse(root / "followed")
        output = follower.output.decode() + _run("materialize", "--bootstrap-servers", bootstrap, "--topic", topic,
                                                 "--warehouse", str(warehouse.uri), "--checkpoint",
                                                 str(root / "checkpoint"), "--available-now")
    finally:
        broker.stop()
    yield SecretCluster(log, warehouse, output)


def _run(*args: str) -> str:
    done = subprocess.run([*KRAFTLAKE, *args], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.parametrize("built_by", ["follow", "ingest"])
def test_no_secret_reaches_tables_commands_pages_or_the_api(secret_cluster: SecretCluster, built_by: str,
                                                            tmp_path: Path) -> None:
    assert len(PASSWORDS) >= 10
    if built_by == "follow":  # over the network, then the streaming job
        warehouse, outputs = secret_cluster.followed, [secret_cluster.output]
    else:  # the stopped node's directory
        warehouse = Warehouse(tmp_path / "warehouse")
        outputs = [_run("ingest", str(secret_cluster.log), "--warehouse", str(warehouse.uri)),
                   _run("dump", str(secret_cluster.log))]
    last = WarehouseReader(warehouse).published_range()[1]
    given = ("--warehouse", str(warehouse.uri))
    image = _run("image", *given, "--at-offset", str(last), "--json")
    history = _run("history", *given, "--table", "configs", "--key", "broker:1")
    outputs += [image, history, _run("changes", *given, "--from", "0", "--to", str(last))]
    client = client_for(warehouse)
    api = "/api/v1/clusters/demo"
    pages = [f"{api}/image/configs?size=500", f"{api}/changes?from=0&to={last}&table=configs",
             f"{api}/history/configs?key=broker:1", f"{api}/timeline", "/clusters/demo/image/configs",
             f"/clusters/demo/changes?from=0&to={last}&table=configs", "/clusters/demo/history/configs?key=broker:1"]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        outputs.append(response.text)
    shown = "\n".join([*outputs, _every_file_text(Path(warehouse.uri))])
    leaked = [name for name, value in SECRETS.items() if value in shown]
    assert not leaked, leaked
    assert all(name in history for name in SECRETS) and "[redacted]" in history  # that each was set shows
    assert '"log.cleaner.threads": "2"' in image  # a config that is not secret shows its value
