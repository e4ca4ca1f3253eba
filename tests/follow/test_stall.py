"""A follower must never stop silently. A real Kafka node whose controller listener is reached (and advertised)
through a TCP proxy on loopback (`tests.harness.proxy`): when the follower's connection goes silent, the
follower leaves it and catches up within the stall timeout; when everything goes silent, `follow --status` says
STALLED (exit 1) within the stall timeout; once the network is back, the follower reconnects by itself and the
topic holds the node's log once by offset, byte for byte. The STALLED rule itself, on a status, below."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftlake.cli.kafka_node import KafkaNode
from kraftlake.follow.status import Status
from tests.fixtures.broker import create_topic
from tests.harness.followers import (
    REPO,
    FollowProcess,
    assert_log_in_topic,
    end_offset,
    log_batches,
    wait_published,
)
from tests.harness.proxy import BlackholeProxy
from tests.harness.proxy import proxied_node as node_behind_proxy

STALL_S = 6.0  # the follower's --stall-timeout here: a silent connection is given up after half of it


@pytest.fixture
def proxied_node(tmp_path: Path) -> Iterator[tuple[KafkaNode, BlackholeProxy]]:
    """The node behind the proxy (`tests.harness.proxy.proxied_node`)."""
    with node_behind_proxy(tmp_path / "node") as proxied:
        yield proxied


def follow_status(path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "kraftlake.cli.main", "follow", "--status", str(path)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60)


def test_a_silent_connection_is_left_and_a_black_hole_is_reported_stalled(
    proxied_node: tuple[KafkaNode, BlackholeProxy], kafka_broker, tmp_path: Path
) -> None:
    node, proxy = proxied_node
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    status = tmp_path / "follow.status"
    follower = FollowProcess(proxy.endpoint, bootstrap, topic, "--stall-timeout", str(STALL_S), "--status-file",
                             str(status), "--log-interval", "1").start()
    try:
        wait_published(bootstrap, topic, end_offset(node.metadata_dir))
        shown = follow_status(status)
        assert shown.returncode == 0 and shown.stdout.startswith("FOLLOWING: offset "), shown

        # its connection goes silent (new ones get through): left, and caught up again, within the stall timeout
        proxy.cut()
        cut = time.monotonic()
        fetched = end_offset(node.metadata_dir)
        while end_offset(node.metadata_dir) <= fetched:  # a NoOp every 500 ms: a target past what was fetched
            time.sleep(0.1)
        wait_published(bootstrap, topic, end_offset(node.metadata_dir), timeout_s=STALL_S - 1)
        print(f"\ncaught up {time.monotonic() - cut:.1f} s after the connection went silent")

        # every connection silent: STALLED within the stall timeout
        proxy.blackhole()
        silent = time.monotonic()
        while True:
            asked = time.monotonic() - silent  # the reader takes a second or two to start on a loaded machine
            shown = follow_status(status)
            if shown.returncode != 0:
                break
            assert asked < STALL_S + 2, shown.stdout
            time.sleep(0.2)
        print(f"STALLED when asked {asked:.1f} s after the black hole: {shown.stdout.strip()}")
        assert shown.returncode == 1 and shown.stdout.startswith("STALLED: no answer with the log for "), shown

        # the network back, the silent connections still silent: the follower reconnects by itself
        proxy.resume()
        caught_up = end_offset(node.metadata_dir)
        wait_published(bootstrap, topic, caught_up, timeout_s=30)
        deadline = time.monotonic() + 60
        while (shown := follow_status(status)).returncode != 0:  # until a status write after catching up
            assert time.monotonic() < deadline, shown
            time.sleep(0.2)
        assert shown.stdout.startswith("FOLLOWING: offset "), shown
        assert follower.finish() == 0, follower.output
    finally:
        follower.finish(signal.SIGKILL)
    output = follower.output.decode()
    assert f"{proxy.endpoint}: no Fetch response within" in output, output
    assert "STALLED: no answer with the log for" in output and "reconnecting" in output, output
    assert f"reconnected to {proxy.endpoint}" in output, output
    assert assert_log_in_topic(bootstrap, topic, log_batches(node.metadata_dir)) >= caught_up


def status(next_offset: int, high_watermark: int, advanced_ago: float, answered_ago: float) -> Status:
    now = time.time()
    return Status("offset …", next_offset - 1, next_offset, high_watermark, now - advanced_ago, now - answered_ago,
                  stall_after_s=30.0, written_at=now, pid=1)


def test_the_stalled_rule() -> None:
    """STALLED: no answer with the log for longer than the threshold, or an offset that has not moved for that
    long while the high watermark is ahead of it. An idle cluster followed to its end is not STALLED however
    long the offset stays (a KRaft leader's NoOps keep it moving in practice)."""
    now = time.time()
    assert status(100, 100, advanced_ago=5, answered_ago=0.5).stalled(now) is None
    assert status(100, 100, advanced_ago=600, answered_ago=0.5).stalled(now) is None
    assert status(100, 180, advanced_ago=20, answered_ago=0.5).stalled(now) is None
    assert status(100, 180, advanced_ago=31, answered_ago=0.5).stalled(now) == (
        "offset 100 has not moved for 31 s while the high watermark is 180")
    assert status(100, 100, advanced_ago=31, answered_ago=31).stalled(now) == "no answer with the log for 31 s"
    lines = status(100, 100, advanced_ago=31, answered_ago=31).describe(now)
    assert len(lines) == 1 and lines[0].startswith("STALLED: no answer with the log for 31 s (threshold 30 s); offset")
