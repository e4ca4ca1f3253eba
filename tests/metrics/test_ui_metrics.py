"""A real `kraftlake ui` over the demo warehouse (tests/explorer/scenario.py: its answers are known), scraped by
a real Prometheus: the cluster's health at the last published image, and request latency by route template."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from kraftlake.lake.warehouse import Warehouse
from tests.explorer import scenario
from tests.explorer.conftest import KRAFTLAKE, RunningUi, start_ui, stop_ui
from tests.fixtures.prometheus import Prometheus

METRICS_LINE = re.compile(r"kraftlake ui: metrics at http://(\S+)/metrics")


def metrics_address(ui: RunningUi) -> str:
    """The address a `kraftlake ui --metrics-address 0` says it serves its metrics on (its first line)."""
    assert ui.process.stdout is not None
    found = METRICS_LINE.search(ui.process.stdout.readline())
    assert found, "kraftlake ui did not say where its metrics are"
    return found.group(1)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    return scenario.build(tmp_path_factory.mktemp("metrics-demo") / "warehouse")


def test_prometheus_reads_the_clusters_health_and_the_routes_latency(demo: Warehouse, prometheus: Prometheus) -> None:
    ui = start_ui(demo, "--metrics-address", "0")
    try:
        address = metrics_address(ui)
        with urllib.request.urlopen(f"{ui.base}/api/v1/clusters/default/image", timeout=60) as answer:
            image = json.load(answer)
        prometheus.scrape("kraftlake-ui", [address])
        job = '{job="kraftlake-ui",cluster="default"}'
        prometheus.wait_for(f"kraftlake_image_offset{job}", lambda s: s == {"default": scenario.LAST})
        assert image["offset"] == scenario.LAST
        expected = {  # the demo's last image (tests/explorer/scenario.py)
            "kraftlake_kafka_brokers": image["rows"]["brokers"],
            "kraftlake_kafka_brokers_fenced": 0,
            "kraftlake_kafka_brokers_in_controlled_shutdown": 1,
            "kraftlake_kafka_partitions": image["rows"]["partitions"],
            "kraftlake_kafka_partitions_offline": 1,
            "kraftlake_kafka_partitions_under_replicated": 1,
            "kraftlake_kafka_partitions_under_min_isr": 1,
            "kraftlake_kafka_partitions_with_elr": 0,
            "kraftlake_kafka_controller_epoch": image["epoch"],
            "kraftlake_kafka_metadata_version": 21,
        }
        assert {name: prometheus.query(f"{name}{job}")["default"] for name in expected} == expected
        prometheus.wait_for('kraftlake_ui_request_duration_seconds_count{job="kraftlake-ui"}', bool)
        routes = {sample["metric"]["route"] for sample in prometheus.api(
            "query", query='kraftlake_ui_request_duration_seconds_count{job="kraftlake-ui"}')["result"]}
        assert "/api/v1/clusters/{cluster}/image" in routes
        assert not any("default" in route for route in routes)  # the template, never the raw path
    finally:
        prometheus.scrape("kraftlake-ui", [])
        stop_ui(ui)


def test_a_metrics_address_in_use_stops_the_ui_before_it_announces_itself(demo: Warehouse) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*KRAFTLAKE, "ui", "--warehouse", demo.uri, "--metrics-address", str(port)],
                              capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"kraftlake ui: --metrics-address 127.0.0.1:{port}: Address already in use"]


def test_a_fleets_health_has_one_series_per_cluster_with_history(prometheus: Prometheus, tmp_path: Path) -> None:
    scenario.build(tmp_path / "lake" / "east")  # west has no warehouse yet: no series, and the scrape still answers
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'warehouse_root = "{tmp_path / "lake"}"\n[clusters.east]\nmetadata_dir = "/nowhere/east"\n'
                     '[clusters.west]\nmetadata_dir = "/nowhere/west"\n')
    ui = start_ui(fleet, "--metrics-address", "0")
    try:
        address = metrics_address(ui)
        prometheus.scrape("kraftlake-ui", [address])
        brokers = prometheus.wait_for('kraftlake_kafka_brokers{job="kraftlake-ui"}', bool)
        assert brokers == {"east": 3}
        assert prometheus.query(f'up{{job="kraftlake-ui",instance="{address}"}}') == {"": 1}
    finally:
        prometheus.scrape("kraftlake-ui", [])
        stop_ui(ui)
