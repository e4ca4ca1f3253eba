"""KafkaNode's configuration and Kafka's tools, without starting a node (the broker and cluster tests start
real ones): what goes into server.properties, ports kept across processes, ids as Kafka writes them."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from kraftlake.cli.kafka_node import CONTROLLER, KafkaNode, KafkaNodeError, kafka_uuid, read_properties
from kraftlake.cli.kafka_tools import KafkaToolError, run_tool


def test_server_properties_name_roles_listeners_quorum_and_take_the_callers_last(tmp_path: Path) -> None:
    node = KafkaNode(tmp_path / "n", 5, quorum=["127.0.0.1:1", "127.0.0.1:2"],
                     properties={"metadata.max.retention.ms": "1000", "num.io.threads": "4"})  # fmt: skip
    node.configure()
    written = read_properties(node.config_path)
    assert written["process.roles"] == "broker,controller" and written["node.id"] == "5"
    assert written["listeners"] == f"PLAINTEXT://127.0.0.1:{node.broker_port},CONTROLLER://127.0.0.1:{node.controller_port}"
    assert written["controller.quorum.bootstrap.servers"] == "127.0.0.1:1,127.0.0.1:2"
    assert (written["metadata.max.retention.ms"], written["num.io.threads"]) == ("1000", "4")  # over the defaults
    assert written["log.dirs"] == str(node.log_dir) and node.metadata_dir == node.log_dir / "__cluster_metadata-0"


def test_ports_are_read_back_from_an_existing_config(tmp_path: Path) -> None:
    first = KafkaNode(tmp_path / "n")
    first.configure()
    again = KafkaNode(tmp_path / "n")
    assert (again.broker_port, again.controller_port) == (first.broker_port, first.controller_port)
    assert again.quorum == (f"127.0.0.1:{first.controller_port}",)  # alone: its own controller
    assert KafkaNode(tmp_path / "n", broker_port=1234).broker_port == 1234


def test_a_controller_only_node_has_no_broker_listener(tmp_path: Path) -> None:
    node = KafkaNode(tmp_path / "c", 4, roles=(CONTROLLER,))
    assert read_properties_of(node)["listeners"] == f"CONTROLLER://127.0.0.1:{node.controller_port}"
    assert "inter.broker.listener.name" not in read_properties_of(node)
    with pytest.raises(KafkaNodeError, match="controller only"):
        _ = node.bootstrap_servers
    with pytest.raises(KafkaNodeError, match="roles must be"):
        KafkaNode(tmp_path / "x", roles=("zookeeper",))


def read_properties_of(node: KafkaNode) -> dict[str, str]:
    node.configure()
    return read_properties(node.config_path)


def test_starting_an_unformatted_node_says_so(tmp_path: Path) -> None:
    with pytest.raises(KafkaNodeError, match="is not formatted"):
        KafkaNode(tmp_path / "n").start()


def test_ids_are_kafka_uuids() -> None:
    ids = {kafka_uuid() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert len(text) == 22 and not text.startswith("-")
        assert len(base64.urlsafe_b64decode(text + "==")) == 16


@pytest.mark.jvm
def test_a_failing_tool_raises_with_its_output(tmp_path: Path) -> None:
    with pytest.raises(KafkaToolError, match=r"kafka-storage format .* exited with code 1:\n.*") as raised:
        run_tool("kafka-storage", "format", "--config", str(tmp_path / "missing.properties"), "--cluster-id", "x")
    assert "missing.properties" in str(raised.value)
    with pytest.raises(KafkaToolError, match="unknown Kafka tool 'kafka-nope'"):
        run_tool("kafka-nope")
