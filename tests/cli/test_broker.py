"""The embedded broker over real TCP: produce/consume, watermarks, crash survival, the CLI, startup errors."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from kraftlake.cli.broker import BrokerError, LocalBroker, PortInUseError, running_broker, stop_broker
from kraftlake.cli.config import BOOTSTRAP_ENV, resolve_bootstrap
from kraftlake.cli.errors import UserFacingError
from kraftlake.records.topic import message_offset, message_value
from tests.fixtures.broker import create_topic, numbered, produce

pytestmark = pytest.mark.integration

KRAFTLAKE = Path(sys.executable).with_name("kraftlake")


def consume_all(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes]]:
    """Every message from offset 0 to the high watermark, as (offset, key, value)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test", "enable.auto.commit": False})
    try:
        partition = TopicPartition(topic, 0)
        _, high = consumer.get_watermark_offsets(partition, timeout=30)
        consumer.assign([TopicPartition(topic, 0, 0)])
        messages: list[tuple[int, bytes, bytes]] = []
        while len(messages) < high:
            message = consumer.poll(30)
            assert message is not None, f"timed out after {len(messages)} of {high} messages"
            assert message.error() is None, message.error()
            messages.append((message_offset(message), message.key() or b"", message_value(message)))
        return messages
    finally:
        consumer.close()


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    finally:
        consumer.close()


def expected(count: int) -> list[tuple[int, bytes, bytes]]:
    return [(i, key, value) for i, (key, value) in enumerate(numbered(0, count))]


def test_produce_and_consume_over_tcp(kafka_broker: LocalBroker) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    assert bootstrap == f"127.0.0.1:{kafka_broker.port}"
    topic = create_topic(bootstrap)
    assert watermarks(bootstrap, topic) == (0, 0)
    produce(bootstrap, topic, numbered(0, 50))
    assert watermarks(bootstrap, topic) == (0, 50)
    assert consume_all(bootstrap, topic) == expected(50)


def test_data_survives_kill_and_restart(tmp_path: Path) -> None:
    with LocalBroker(tmp_path / "broker") as broker:
        port = broker.port
        topic = create_topic(broker.bootstrap_servers)
        produce(broker.bootstrap_servers, topic, numbered(0, 30))
        broker.kill()  # right after the acknowledgements: Kafka loses none of them
        assert not broker.running
        assert running_broker(broker.data_dir) is None
        broker.restart()
        assert broker.port == port
        assert watermarks(broker.bootstrap_servers, topic) == (0, 30)
        produce(broker.bootstrap_servers, topic, numbered(30, 40))
        broker.restart()
        assert consume_all(broker.bootstrap_servers, topic) == expected(40)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KRAFTLAKE), *args], capture_output=True, text=True, timeout=120)


def test_cli_start_status_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)
    data_dir = tmp_path / "cli-broker"
    try:
        started = run_cli("broker", "start", "--data-dir", str(data_dir))
        assert started.returncode == 0, started.stderr
        bootstrap = started.stdout.strip()
        assert bootstrap.startswith("127.0.0.1:")
        assert AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).brokers

        status = run_cli("broker", "status", "--data-dir", str(data_dir))
        assert status.returncode == 0
        assert f"running at {bootstrap}" in status.stdout
        again = run_cli("broker", "start", "--data-dir", str(data_dir))
        assert (again.returncode, again.stdout.strip()) == (0, bootstrap)
        assert resolve_bootstrap(None, data_dir) == bootstrap

        stopped = run_cli("broker", "stop", "--data-dir", str(data_dir))
        assert stopped.returncode == 0
        assert bootstrap in stopped.stdout
        status = run_cli("broker", "status", "--data-dir", str(data_dir))
        assert status.returncode == 1
        assert "not running" in status.stdout
    finally:
        stop_broker(data_dir)


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"127.0.0.1:{port} is already in use"):
            LocalBroker(tmp_path / "broker", port).start()


def test_broker_that_exits_at_startup_reports_its_log(tmp_path: Path) -> None:
    broker = LocalBroker(tmp_path / "broker")
    broker.start().stop()
    meta = broker.data_dir / "logs" / "meta.properties"
    meta.write_text(meta.read_text().replace("node.id=1", "node.id=7"))
    with pytest.raises(BrokerError, match="exited with code") as raised:
        broker.start()
    assert "node id" in str(raised.value).lower()
    assert str(broker.log_path) in str(raised.value)
    assert running_broker(broker.data_dir) is None


def test_missing_jars_is_one_line_naming_make_jars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRAFTLAKE_JARS", str(tmp_path / "no-jars"))
    with pytest.raises(UserFacingError, match=r"^no kafka jars in .*no-jars/kafka: run `make jars`") as raised:
        LocalBroker(tmp_path / "broker").start()
    assert "\n" not in str(raised.value)


def test_second_broker_on_same_data_dir_is_refused(kafka_broker: LocalBroker) -> None:
    with pytest.raises(BrokerError, match="already runs on"):
        LocalBroker(kafka_broker.data_dir).start()


def test_resolve_bootstrap_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BOOTSTRAP_ENV, "kafka-from-env:9092")
    assert resolve_bootstrap("explicit:9092", tmp_path) == "explicit:9092"
    assert resolve_bootstrap(None, tmp_path) == "kafka-from-env:9092"
    monkeypatch.delenv(BOOTSTRAP_ENV)
    with pytest.raises(UserFacingError, match="kraftlake broker start"):
        resolve_bootstrap(None, tmp_path)
