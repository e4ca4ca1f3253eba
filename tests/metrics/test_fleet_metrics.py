"""`kraftlake follow --fleet` scraped by a real Prometheus: one series per cluster of the fleet file, a cluster
that follows (a real Kafka node) and one whose controllers never answer side by side; its lines say where each
cluster starts and, at the stop, where each one's topic stands; a cluster taken out of the fleet file loses its
series."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kraftlake.bridge.publisher import PublisherConfig, read_tail
from kraftlake.cli.broker import LocalBroker
from kraftlake.cli.kafka_node import free_ports
from tests.fixtures.broker import create_topic
from tests.fixtures.prometheus import WAIT_S, Prometheus
from tests.harness.followers import FollowProcess
from tests.metrics.test_fleet_job_metrics import scraped
from tests.metrics.test_follow_metrics import metrics_address


def fleet_follower(fleet: Path, bootstrap: str, *extra: str) -> FollowProcess:
    """A started `kraftlake follow --fleet` of `fleet` serving its metrics on a free port."""
    follower = FollowProcess("", bootstrap, "")
    follower.args = [sys.executable, "-m", "kraftlake.cli.main", "follow", "--fleet", str(fleet),
                     "--bootstrap-servers", bootstrap, *extra, "--metrics-address", "0"]
    return follower.start()


def test_one_series_per_cluster(kafka_broker: LocalBroker, prometheus: Prometheus, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    fleet, topics = tmp_path / "fleet.toml", {"east": create_topic(bootstrap), "west": create_topic(bootstrap)}
    fleet.write_text(f'[clusters.east]\nbootstrap_controllers = ["{kafka_broker.node.controller_endpoint}"]\n'
                     f'topic = "{topics["east"]}"\n'
                     f'[clusters.west]\nbootstrap_controllers = ["127.0.0.1:{free_ports(1)[0]}"]\n'
                     f'connect_timeout_seconds = 2\ntopic = "{topics["west"]}"\n')
    follower = fleet_follower(fleet, bootstrap, "--log-interval", "1")
    try:
        prometheus.scrape("kraftlake-follow", [metrics_address(follower)])
        job = '{job="kraftlake-follow"}'
        copied = prometheus.wait_for(f"kraftlake_follow_copied_batches_total{job}",
                                     lambda s: s.keys() == {"east", "west"} and s["east"] > 0)
        assert copied["west"] == 0
        lag = prometheus.wait_for(f"kraftlake_follow_lag_offsets{job}", lambda s: "east" in s)
        assert "west" not in lag  # no high watermark ever known: no sample rather than a made-up 0
        assert prometheus.query(f"kraftlake_follow_high_watermark_offset{job}")["west"] == -1
    finally:
        prometheus.scrape("kraftlake-follow", [])
        assert follower.finish() == 0
    # one line per cluster where it starts, and where each stopped: east's offset is what the topic holds
    output = follower.output.decode()
    assert f"[east] follow: topic {topics['east']} holds the log up to offset -1; fetching from offset 0" in output
    stops = dict(re.findall(r"^stopped: cluster (\w+): (.*)$", output, re.MULTILINE))
    held = read_tail(PublisherConfig(bootstrap, topics["east"])).next_offset - 1
    assert stops == {"east": f"topic {topics['east']} holds the log up to offset {held}",
                     "west": f"topic {topics['west']} holds the log up to offset -1"}, output[-3000:]


def test_a_cluster_removed_from_the_fleet_loses_its_series(kafka_broker: LocalBroker, tmp_path: Path) -> None:
    """Read from the follower's own endpoint: a cluster taken out of the fleet file (a reload) has no series left,
    the one kept has all of its. Neither cluster's controllers answer (none needed: each has a position)."""
    bootstrap = kafka_broker.bootstrap_servers
    fleet = tmp_path / "fleet.toml"

    entries = {name: f'[clusters.{name}]\nbootstrap_controllers = ["127.0.0.1:{port}"]\n'
                     f'connect_timeout_seconds = 600\ntopic = "{create_topic(bootstrap)}"\n'
               for name, port in zip(("east", "west"), free_ports(2), strict=True)}
    fleet.write_text(entries["east"] + entries["west"])
    follower = fleet_follower(fleet, bootstrap)
    try:
        url = f"http://{metrics_address(follower)}/metrics"
        before = wait_scraped(url, lambda series: {c for _, c in series} == {"east", "west"})
        fleet.write_text(entries["east"])  # west taken out (the next look at the file, within 2 s)
        after = wait_scraped(url, lambda series: {c for _, c in series} == {"east"})
    finally:
        assert follower.finish() == 0
    names = {name for name, _ in before}
    assert {name for name, cluster in before if cluster == "west"} == names  # west had every series east has
    assert {name for name, _ in after} == names
    assert "kraftlake_follow_stalled" in names and "kraftlake_follow_reconnects_total" in names


def wait_scraped(url: str, check: Callable[[set[tuple[str, str]]], bool]) -> set[tuple[str, str]]:
    """Until the endpoint's (sample name, cluster) pairs pass `check`: a condition, not a sleep."""
    deadline = time.monotonic() + WAIT_S
    while not check(series := set(scraped(url))):
        assert time.monotonic() < deadline, f"{sorted(series)} after {WAIT_S:.0f} s"
        time.sleep(0.2)
    return series
