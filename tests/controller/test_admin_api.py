"""The admin API over real HTTP: two controller nodes on one log, the client following NOT_CONTROLLER to
the active one, the token, errors as Kafka codes, and `kraftlake admin` end to end."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from kraftlake.cli.main import main
from kraftlake.controller import ControllerConfig, LocalMetadataLog, ManualClock, QuorumController
from kraftlake.controller.admin_api import AdminServer
from kraftlake.controller.admin_client import AdminClient, AdminError
from kraftlake.controller.versions import SUPPORTED_FEATURES

TOKEN = "let-me-in"


@pytest.fixture
def nodes() -> Iterator[tuple[LocalMetadataLog, list[AdminServer]]]:
    log = LocalMetadataLog()
    servers: list[AdminServer] = []
    controllers = []
    addresses: dict[int, str] = {}
    for node_id in (1, 2):
        controller = QuorumController(log, ControllerConfig(node_id=node_id, noop_interval_ms=0),
                                      clock=ManualClock(), rng=random.Random(node_id), background_tasks=False,
                                      controller_addresses=addresses)
        server = AdminServer(controller, token=TOKEN).start()
        addresses[node_id] = server.address
        controllers.append(controller.start())
        servers.append(server)
    for controller in controllers:
        controller._addresses.update(addresses)  # both know every node's admin address
    log.elect(2)
    yield log, servers
    for server in servers:
        server.close()
    for controller in controllers:
        controller.close()


def _broker(client: AdminClient, broker_id: int) -> int:
    epoch = client.call("register-broker", {
        "broker_id": broker_id, "incarnation_id": f"AAAAAAAAAAAAAAAAAAAAA{'ABCDEFGH'[broker_id]}",
        "listeners": [{"name": "PLAINTEXT", "host": "localhost", "port": 9092}],
        "features": {name: list(levels) for name, levels in SUPPORTED_FEATURES.items()},
    })
    client.call("heartbeat", {"broker_id": broker_id, "broker_epoch": epoch, "metadata_offset": epoch})
    return epoch


def test_the_client_finds_the_active_controller(nodes) -> None:
    _, servers = nodes
    client = AdminClient([servers[0].address], TOKEN, timeout_s=30)  # node 1 is a standby
    _broker(client, 0)
    result = client.call("create-topics", {"topics": [{"name": "orders", "partitions": 3, "replication_factor": 1}]})
    assert result["orders"]["partitions"] == 3
    described = client.describe()
    assert described["active"] and described["node_id"] == 2
    assert described["topics"]["orders"]["partitions"] == 3
    assert set(client.describe_topic("orders")["partitions"]) == {"0", "1", "2"}


def test_errors_carry_kafka_codes(nodes) -> None:
    _, servers = nodes
    client = AdminClient([servers[1].address], TOKEN, timeout_s=30)
    with pytest.raises(AdminError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        client.call("create-partitions", {"topic": "nope", "count": 3})
    with pytest.raises(AdminError, match="INVALID_REQUEST"):
        client.call("create-partitions", {"topic": "nope", "count": "three"})
    with pytest.raises(AdminError, match="INVALID_REQUEST"):
        client.call("no-such-operation")
    result = client.call("create-topics", {"topics": [{"name": "t", "replication_factor": 3}]})
    assert result["t"]["error"]["code"] == "INVALID_REPLICATION_FACTOR"
    with pytest.raises(AdminError, match="SASL_AUTHENTICATION_FAILED"):
        AdminClient([servers[1].address], "wrong", timeout_s=5).describe()


def test_a_standby_names_the_active_controller(nodes) -> None:
    log, servers = nodes
    log.elect(None)  # nobody leads: the client keeps trying, then reports where it stands
    client = AdminClient([servers[0].address], TOKEN, timeout_s=1)
    with pytest.raises(AdminError, match=r"NOT_CONTROLLER: .*no controller is known"):
        client.call("delete-topics", {"names": ["x"]})


def test_kraftlake_admin_cli(nodes, capsys: pytest.CaptureFixture[str]) -> None:
    _, servers = nodes
    controllers = ",".join(server.address for server in servers)
    base = ["admin", "--controllers", controllers, "--token", TOKEN, "--timeout", "30"]
    _broker(AdminClient([servers[1].address], TOKEN), 0)
    assert main([*base, "create-topic", "cli", "--partitions", "2", "--config", "retention.ms=-1"]) == 0
    assert '"partitions": 2' in capsys.readouterr().out
    assert main([*base, "alter-config", "--topic", "cli", "--set", "retention.ms=1000"]) == 0
    assert '"retention.ms": "1000"' in capsys.readouterr().out
    assert main([*base, "create-partitions", "cli", "1"]) == 2
    assert "INVALID_PARTITIONS" in capsys.readouterr().err
    assert main([*base, "delete-topic", "cli"]) == 0
    assert main([*base, "describe"]) == 0
    assert '"topics": {}' in capsys.readouterr().out


def test_kraftlake_admin_speaks_for_a_broker(nodes, capsys: pytest.CaptureFixture[str]) -> None:
    _, servers = nodes
    base = ["admin", "--controllers", ",".join(s.address for s in servers), "--token", TOKEN, "--timeout", "30"]

    def run(*args: str) -> Any:
        assert main([*base, *args]) == 0
        return json.loads(capsys.readouterr().out)

    epochs = {}
    for broker in (0, 1):
        epochs[broker] = run("register-broker", str(broker), "--incarnation-id", f"AAAAAAAAAAAAAAAAAAAAA{'AB'[broker]}",
                             "--listener", "PLAINTEXT=localhost:9092", "--rack", f"r{broker}")
        reply = run("heartbeat", str(broker), "--epoch", str(epochs[broker]), "--offset", str(epochs[broker]))
        assert reply["is_fenced"] is False
    run("create-topic", "orders", "--partitions", "1", "--replication-factor", "2")
    partition = run("describe-topic", "orders")["partitions"]["0"]
    leader, follower = partition["leader"], next(r for r in partition["isr"] if r != partition["leader"])
    outcome = run("alter-partition", "orders:0", "--broker", str(leader), "--epoch", str(epochs[leader]),
                  "--leader-epoch", str(partition["leaderEpoch"]),
                  "--partition-epoch", str(partition["partitionEpoch"]), "--isr", str(leader))
    assert outcome[0]["isr"] == [leader]
    first, size = run("allocate-producer-ids", str(follower), "--epoch", str(epochs[follower]))
    assert size > 0 and first >= 0
    assert run("describe")["brokers"][str(follower)]["fenced"] is False
    assert main([*base, "register-broker", "2", "--incarnation-id", "x", "--listener", "nohostport"]) == 2
    assert "NAME=HOST:PORT" in capsys.readouterr().err
