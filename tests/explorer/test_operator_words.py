"""The explorer in the words operators use, on the demo-like warehouse: Kafka's names for its codes (raw value on
hover, and beside it in the API), durations in days, a broker's page listing what it leads, a topic's page that
fits a 1,280 px window. Pages in a real browser (Debian's Chromium) against the real `kraftlake ui`."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pyarrow.compute as pc
import pytest
from fastapi.testclient import TestClient

from kraftlake.explorer.timeline import build_timeline
from kraftlake.explorer.words import config_value, duration, natural_key, plural, size, when
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.explorer import scenario
from tests.explorer.conftest import screenshot
from tests.explorer.scenario import LAST
from tests.explorer.test_browser import shown_rows

NARROW = {"width": 1280, "height": 900}


def test_units_names_and_order() -> None:
    assert [duration(ms) for ms in (604_800_000, 86_400_000, 14_400_000, 90_000, 2000, 250)] == [
        "7 days", "1 day", "4 h", "1.5 min", "2 s", "250 ms"]
    assert [size(n) for n in (10 << 20, 1 << 30, 1536, 512)] == ["10 MiB", "1 GiB", "1.5 KiB", "512 B"]
    assert config_value("log.retention.hours", "168") == "7 days"
    assert config_value("retention.ms", "-1") is None and config_value("cleanup.policy", "delete") is None
    assert config_value("segment.bytes", "1073741824") == "1 GiB"
    assert when(1_795_659_220_000, now_ms=1_795_659_220_000 + 3 * 3_600_000) == "2026-11-26 02:13:40 UTC (3 h ago)"
    assert sorted(["sim-7-10", "sim-7-2", "sim-10-1", "orders"], key=natural_key) == [
        "orders", "sim-7-2", "sim-7-10", "sim-10-1"]
    assert (plural(1, "row"), plural(2, "row"), plural(0, "topic")) == ("1 row", "2 rows", "0 topics")


def test_the_api_adds_names_beside_the_raw_values(demo_client: TestClient) -> None:
    acl = demo_client.get("/api/v1/clusters/demo/image/acls").json()["rows"][0]
    assert (acl["resource_type"], acl["pattern_type"], acl["operation"], acl["permission_type"]) == (2, 3, 3, 3)
    assert (acl["resource_type_name"], acl["pattern_type_name"], acl["operation_name"],
            acl["permission_type_name"]) == ("TOPIC", "LITERAL", "READ", "ALLOW")
    broker = demo_client.get("/api/v1/clusters/demo/image/brokers").json()["rows"][0]
    assert broker["listeners"][0]["security_protocol"] == 0 and broker["listeners_name"] == ["PLAINTEXT"]
    configs = demo_client.get("/api/v1/clusters/demo/image/configs?q=retention").json()["rows"]
    assert [(c["value"], c["value_human"]) for c in configs] == [("604800000", "7 days")]
    event = demo_client.get("/api/v1/clusters/demo/timeline").json()["events"][-1]
    assert (event["before"], event["after"], event["text"]) == (
        {"value": "2000"}, {"value": "604800000"}, "topic orders retention.ms: 2 s → 7 days")
    partition = demo_client.get("/api/v1/clusters/demo/topics/orders/partitions").json()["rows"][0]
    assert partition["leader_recovery_state_name"] == "RECOVERED"
    assert partition["directories_name"] == ["MIGRATING"] * 3


def fits(page: Any) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_pages_read_as_operators_write(demo_warehouse: Warehouse, running_ui: Any, browser: Any) -> None:
    ui = running_ui(demo_warehouse, "--name", "demo")
    page = browser.new_context(viewport=NARROW).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    # an ACL, as kafka-acls and kafka-ui name it, the code on hover; its topic linked
    page.goto(f"{ui.base}/clusters/demo/image/acls")
    row = shown_rows(page, "rows-acls")[0]
    assert " ".join(row[c] for c in ("resource_type", "resource_name", "pattern_type", "operation",
                                     "permission_type")) == "TOPIC orders LITERAL READ ALLOW"
    assert page.locator("td[data-column=operation] .named").get_attribute("title") == "3"
    page.goto(f"{ui.base}/clusters/demo/principals/User:alice")
    assert page.locator("[data-testid=acl-words]").inner_text().startswith("TOPIC orders LITERAL READ ALLOW")
    page.locator("[data-testid=acl-words] a").click()
    page.wait_for_selector("[data-testid=rows-partitions]")

    # the topic page: its retention in days (milliseconds on hover), the offline and under-min-ISR partitions
    # marked, replicas linked to their brokers, all within 1,280 px
    page.goto(f"{ui.base}/clusters/demo/topics/orders")
    retention = page.locator("[data-testid=topic-configs] tr", has_text="retention.ms")
    value = retention.locator("[data-testid=config-value] .named")
    assert (value.inner_text(), value.get_attribute("title")) == ("7 days", "604800000")
    # where it comes from, and Kafka's default beside it
    assert retention.locator("[data-testid=config-source]").inner_text() == "topic"
    assert retention.locator("[data-testid=config-default]").inner_text() == "7 days"
    assert page.locator("tr.offline td[data-column=leader]").inner_text() == "-1"
    assert page.locator("tr.under-min-isr").count() == 1
    assert page.locator("td[data-column=replicas] a").first.get_attribute("href").startswith(
        "/clusters/demo/brokers/")
    assert "RECOVERED" in page.locator("td[data-column=leader_recovery_state]").first.inner_text()
    assert page.locator("[data-testid=pager]").count() == 2
    assert fits(page)
    assert "UTC (" in page.locator("[data-testid=moment]").inner_text()
    screenshot(page, "demo-topic-1280")

    # the timeline's events at the cursor: a config's old → new in units, the raw values on hover
    page.goto(f"{ui.base}/clusters/demo?at={LAST}")
    latest = page.locator("[data-testid=at-cursor] li", has_text="retention.ms").first
    assert latest.inner_text() == f"{LAST} topic orders retention.ms: 2 s → 7 days"
    assert latest.get_attribute("title").endswith("value 2000 → 604800000")
    assert page.locator("[data-testid=at-cursor] li", has_text="+ TOPIC orders LITERAL READ ALLOW User:alice").count()

    # a broker's page: its state, endpoint, and the partitions it leads, as the reader has them
    partitions = WarehouseReader(demo_warehouse).image_at(LAST).tables["partitions"]
    led = partitions.filter(pc.equal(partitions["leader"], 0))
    page.goto(f"{ui.base}/clusters/demo/brokers/0")
    assert page.locator("[data-testid=broker-state]").inner_text() == "active"
    assert page.locator("[data-testid=broker-endpoints]").inner_text() == "PLAINTEXT://b0:9092"
    assert page.locator("[data-testid=broker-leads]").inner_text() == f"leads {led.num_rows}"
    shown = [(r["topic_name"], int(r["partition_id"])) for r in shown_rows(page, "rows-partitions")]
    assert shown == sorted(zip(led["topic_name"].to_pylist(), led["partition_id"].to_pylist(), strict=True))
    assert page.locator("[data-testid=broker-episodes] tbody tr").count() == 1  # fenced until it first unfenced
    page.wait_for_selector("[data-testid=timeline] svg")
    assert fits(page)
    screenshot(page, "demo-broker-1280")
    inherited = page.locator("[data-testid=broker-configs] tr", has_text="min.insync.replicas")
    assert [inherited.locator(f"[data-testid=config-{c}]").inner_text() for c in ("value", "source", "default")] \
        == ["2", "cluster default", "1"]
    page.goto(f"{ui.base}/clusters/demo/brokers/1")
    assert page.locator("[data-testid=broker-state]").inner_text() == "in controlled shutdown"
    page.context.close()
    assert errors == []


def test_a_quiet_day_squeezes_no_event(tmp_path_factory: pytest.TempPathFactory, running_ui: Any,
                                       browser: Any) -> None:
    """A day of NoOps after the demo's 35 s of incident is one break on the axis (linear, the 14 events would
    share a pixel at 1,280 px); the events around it stay apart."""
    warehouse = scenario.build(tmp_path_factory.mktemp("explorer-quiet") / "warehouse", quiet_hours=24)
    ui = running_ui(warehouse, "--name", "demo")
    page = browser.new_context(viewport=NARROW).new_page()
    page.goto(f"{ui.base}/clusters/demo")
    page.wait_for_selector("[data-testid=timeline] [data-testid=event]")
    quiet = page.locator("[data-testid=quiet]")
    assert quiet.count() == 1 and quiet.locator("text").text_content() == "1 day"
    xs = sorted(box["x"] for box in (tick.bounding_box() for tick in page.locator("[data-testid=event]").all()))
    assert len(xs) == len(build_timeline(WarehouseReader(warehouse)).events.offsets)
    assert min(b - a for a, b in pairwise(xs)) >= 20
    screenshot(page, "quiet-day-timeline-1280", full_page=False)
    page.context.close()
