"""A real `kraftlake follow` of a real Kafka node, scraped by a real Prometheus: its series read back through
Prometheus' HTTP API agree with what the metadata topic holds, and its own graph page draws them (the screenshot
in docs/operating.md is this test's `build/test-artifacts/metrics/prometheus-graph.png`)."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from kraftlake.bridge.publisher import PublisherConfig, read_tail
from kraftlake.cli.broker import LocalBroker
from tests.fixtures.broker import create_topic
from tests.fixtures.browser import artifact_screenshot
from tests.fixtures.prometheus import Prometheus
from tests.harness.followers import FollowProcess

METRICS_LINE = re.compile(rb"metrics at http://(\S+)/metrics")


def metrics_address(process: FollowProcess) -> str:
    process.wait_for(b"metrics at http://")
    found = METRICS_LINE.search(process.output)
    assert found, process.output
    return found.group(1).decode()


def test_prometheus_reads_the_followers_position_lag_and_counts(kafka_broker: LocalBroker, prometheus: Prometheus,
                                                               page: Any) -> None:
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    follower = FollowProcess(kafka_broker.node.controller_endpoint, bootstrap, topic, "--log-interval", "1",
                             "--metrics-address", "0").start()
    try:
        prometheus.scrape("kraftlake-follow", [metrics_address(follower)])
        job = '{job="kraftlake-follow",cluster="default"}'
        copied = prometheus.wait_for(f"kraftlake_follow_last_copied_offset{job}",
                                     lambda s: s.get("default", -1) > 0)["default"]
        assert read_tail(PublisherConfig(bootstrap, topic)).next_offset - 1 >= copied  # the topic holds it
        lag = prometheus.wait_for(f"kraftlake_follow_lag_offsets{job}", lambda s: "default" in s)["default"]
        assert lag >= 0
        watermark = prometheus.query(f"kraftlake_follow_high_watermark_offset{job}")["default"]
        assert watermark > copied  # the first offset not committed is past the last one copied
        assert prometheus.query(f"kraftlake_follow_lag_seconds{job}")["default"] >= 0
        assert prometheus.query(f"kraftlake_follow_last_answer_age_seconds{job}")["default"] >= 0
        assert prometheus.query(f"kraftlake_follow_stalled{job}") == {"default": 0}
        batches = prometheus.query(f"kraftlake_follow_copied_batches_total{job}")["default"]
        assert batches > 0
        assert prometheus.query(f"kraftlake_follow_copied_bytes_total{job}")["default"] > batches * 61  # v2 header
        assert prometheus.query(f"kraftlake_follow_reconnects_total{job}") == {"default": 0}
        assert prometheus.query(f"kraftlake_follow_gaps_total{job}") == {"default": 0}
        # the quorum's NoOps keep coming: the position moves on in Prometheus too
        prometheus.wait_for(f"kraftlake_follow_last_copied_offset{job}", lambda s: s.get("default", -1) > copied)
        graph_page_draws(page, prometheus, f"kraftlake_follow_last_copied_offset{job}")
    finally:
        prometheus.scrape("kraftlake-follow", [])
        assert follower.finish() == 0


def graph_page_draws(page: Any, prometheus: Prometheus, expr: str) -> None:
    """Prometheus' own graph page (Debian's package serves the classic one), in a real browser, draws `expr`'s
    series, its labels in the legend."""
    query = urllib.parse.urlencode({"g0.expr": expr, "g0.tab": "0", "g0.range_input": "15s"})
    page.goto(f"{prometheus.url}/graph?{query}")
    label = page.locator(".rickshaw_legend .label").filter(has_text='cluster="default"')
    label.wait_for(timeout=60_000)
    assert label.inner_text().startswith("kraftlake_follow_last_copied_offset{")
    artifact_screenshot(page, "metrics", "prometheus-graph", full_page=False)
    # page.errors not checked: Debian's classic page logs one of its own ("Unexpected token 'export'")
