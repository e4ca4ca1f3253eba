"""The shipped stall rule fires on a real `kraftlake follow` black-holed by the TCP proxy (`tests.harness.proxy`:
the connections stay open, nothing comes back). Debian's Prometheus scrapes the follower's --metrics-address
with a copy of conf/kraftlake-rules.yml whose `for:` durations are cut to 1 s (`quick_rules`: a regular
expression over the `for:` lines, the one change; the stall rule's expression, as Prometheus reports it back,
is the shipped one), so the alert fires within seconds
of the stall rather than after the shipped minute. Once the proxy forwards again the follower logs one
"following again" line after its STALLED line, and the alert resolves."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from kraftlake.bridge.publisher import PublisherConfig, read_tail
from kraftlake.cli.broker import LocalBroker
from kraftlake.follow.status import following_again
from tests.fixtures.broker import create_topic
from tests.fixtures.prometheus import RULES, WAIT_S, Prometheus
from tests.harness.followers import FollowProcess
from tests.harness.proxy import proxied_node
from tests.metrics.test_follow_metrics import metrics_address

ALERT = "KraftlakeFollowerStalled"
STALL_S = 6.0  # the follower's --stall-timeout: its smallest sensible value is a few seconds (MIN_STALL_SECONDS 3)
FOR = re.compile(r"^(\s+for:) \S+$", re.MULTILINE)


def quick_rules(directory: Path) -> Path:
    """The shipped rules with every `for:` line's duration made 1 s, and nothing else changed."""
    quick = directory / "kraftlake-rules.yml"
    quick.write_text(FOR.sub(r"\1 1s", RULES.read_text()))
    return quick


def shipped_expr(alert: str) -> str:
    """The alert's `expr` as conf/kraftlake-rules.yml writes it (one line)."""
    found = re.search(rf"^\s+- alert: {alert}\n\s+expr: (.+)$", RULES.read_text(), re.MULTILINE)
    assert found, alert
    return found.group(1)


def stall_alerts(prometheus: Prometheus) -> list[dict[str, Any]]:
    """The stall alerts Prometheus holds now (pending or firing), from /api/v1/alerts."""
    return [a for a in prometheus.api("alerts")["alerts"] if a["labels"]["alertname"] == ALERT]


def wait_alerts(prometheus: Prometheus, follower: FollowProcess, check: Any) -> list[dict[str, Any]]:
    """Until the stall alerts pass `check` (the last ones in the failure), the follower still running."""
    deadline = time.monotonic() + WAIT_S
    while not check(alerts := stall_alerts(prometheus)):
        assert follower.process is not None and follower.process.poll() is None, follower.output[-3000:]
        assert time.monotonic() < deadline, f"{ALERT}: {alerts} after {WAIT_S:.0f} s"
        time.sleep(0.5)
    return alerts


def test_a_black_holed_follower_fires_the_shipped_stall_rule(kafka_broker: LocalBroker, tmp_path: Path) -> None:
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    rules = quick_rules(tmp_path)
    (tmp_path / "prometheus").mkdir()
    with proxied_node(tmp_path / "node") as (_, proxy):
        prometheus = Prometheus(tmp_path / "prometheus", rules=rules).start()
        follower = FollowProcess(proxy.endpoint, bootstrap, topic, "--stall-timeout", str(STALL_S), "--log-interval",
                                 "1", "--metrics-address", "0").start()
        try:
            prometheus.scrape("kraftlake-follow", [metrics_address(follower)])
            job = '{job="kraftlake-follow",cluster="default"}'
            prometheus.wait_for(f"kraftlake_follow_last_copied_offset{job}", lambda s: s.get("default", -1) > 0)
            assert prometheus.query(f"kraftlake_follow_stalled{job}") == {"default": 0}
            loaded = next(rule for group in prometheus.api("rules", type="alert")["groups"]
                          for rule in group["rules"] if rule["name"] == ALERT)
            assert (loaded["query"], loaded["duration"], loaded["state"]) == (shipped_expr(ALERT), 1, "inactive")

            proxy.blackhole()  # every connection silent, open ones and new ones: the follower hears nothing
            firing = wait_alerts(prometheus, follower, lambda alerts: any(a["state"] == "firing" for a in alerts))
            assert [(a["labels"]["cluster"], a["labels"]["severity"]) for a in firing] == [("default", "critical")]
            assert b"follow: STALLED: no answer with the log for" in follower.output

            proxy.resume()  # new connections get through again: the follower reconnects by itself
            follower.wait_for(b"following again after", timeout_s=WAIT_S)
            wait_alerts(prometheus, follower, lambda alerts: not alerts)  # resolved
            copied = prometheus.query(f"kraftlake_follow_last_copied_offset{job}")["default"]
            prometheus.wait_for(f"kraftlake_follow_last_copied_offset{job}", lambda s: s.get("default", -1) > copied)
        finally:
            prometheus.stop()
            assert follower.finish() == 0, follower.output[-3000:]
    output = follower.output.decode()
    assert read_tail(PublisherConfig(bootstrap, topic)).next_offset - 1 >= copied
    stalled = output.index("follow: STALLED: no answer with the log for")
    again = re.search(r"follow: following again after (\d+) s STALLED: (.*)$", output[stalled:], re.MULTILINE)
    assert again, output[stalled:]
    assert again.group(0) == f"follow: {following_again(float(again.group(1)), again.group(2))}"
    assert again.group(2).startswith("offset ")  # where it stands: the position line
