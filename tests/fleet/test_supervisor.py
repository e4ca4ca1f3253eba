"""The fleet supervisor's reload rule: a real `FleetSupervisor` publishing to the real broker, whose clusters'
controllers refuse the connection (a closed loopback port), so each follower fails fast and is retried, and what
is watched shows in which followers are replaced. A security file rewritten (a rotated password) restarts its
cluster only. (With an unreachable broker too, each try waited out the publisher's 10 s metadata request, and
so did each stop.)"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kraftlake.bridge.publisher import PublisherConfig
from kraftlake.cli.broker import LocalBroker
from kraftlake.fleet.supervisor import FleetSupervisor, SupervisorConfig

pytestmark = pytest.mark.integration
RELOAD_S = 0.1


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def fleet(tmp_path: Path, kafka_broker: LocalBroker) -> Iterator[tuple[FleetSupervisor, Path]]:
    port = closed_port()
    for name in ("north", "south"):
        (tmp_path / f"{name}.properties").write_text("sasl.username=kraftlake\nsasl.password=first\n")
    path = tmp_path / "fleet.toml"
    path.write_text("".join(
        f'[clusters.{name}]\nbootstrap_controllers = ["127.0.0.1:{port}"]\nconnect_timeout_seconds = 1\n'
        f'security_file = "{tmp_path / f"{name}.properties"}"\n'
        f'[clusters.{name}.properties]\n"security.protocol" = "SASL_PLAINTEXT"\n"sasl.mechanism" = "PLAIN"\n'
        for name in ("north", "south")))
    config = SupervisorConfig(PublisherConfig(kafka_broker.bootstrap_servers), status_dir=tmp_path / "st",
                              reload_s=RELOAD_S, backoff_s=0.2, max_backoff_s=0.2)
    supervisor = FleetSupervisor(path, config)
    runner = threading.Thread(target=supervisor.run, daemon=True)
    runner.start()
    wait_for(lambda: set(supervisor.followers) == {"north", "south"}, "both clusters to start")
    yield supervisor, tmp_path
    supervisor.stop.set()
    runner.join(60)
    assert not runner.is_alive(), "the supervisor did not stop"


def test_a_rewritten_security_file_restarts_its_cluster_and_no_other(
    fleet: tuple[FleetSupervisor, Path]
) -> None:
    supervisor, folder = fleet
    before = dict(supervisor.followers)
    wait_for(lambda: before["north"].failures > 0, "north's follower to fail on the closed port")
    secrets = folder / "north.properties"
    secrets.write_text("sasl.username=kraftlake\nsasl.password=second-and-longer\n")
    wait_for(lambda: supervisor.followers["north"] is not before["north"], "north to restart")
    assert before["north"].stopping.is_set(), "the old follower of north is stopped"
    assert supervisor.followers["south"] is before["south"], "south is not touched"
    assert "second-and-longer" in supervisor.followers["north"].cluster.client_properties()["sasl.password"]


def test_a_touched_file_with_the_same_settings_restarts_nothing(fleet: tuple[FleetSupervisor, Path]) -> None:
    supervisor, _ = fleet
    before = dict(supervisor.followers)
    os.utime(supervisor.path, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    time.sleep(RELOAD_S * 10)
    assert supervisor.followers == before and all(supervisor.followers[n] is before[n] for n in before)
