"""The explorer in a real browser (Debian's Chromium under Playwright) against the real `kraftlake ui` process,
on a real Kafka sample built by `kraftlake ingest` and on the demo-like scenario: open the timeline, drag the
cursor, type an offset, and check that what the pages show is what the CLI and the reader answer there; open
a partition's history, a broker's page, a diff; reload copied deep links. Screenshots go to
build/test-artifacts/explorer/."""

from __future__ import annotations

import json
import subprocess
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.explorer.conftest import KRAFTLAKE, screenshot
from tests.explorer.drag import cli_moment, drag_across

CASES = {
    # warehouse fixture, cluster name, a topic to open, a broker to open
    "sample": ("sample_warehouse", "flink-on-prem", "__consumer_offsets", "1"),
    "demo": ("demo_warehouse", "demo", "orders", "2"),
}


def cli_partitions(warehouse: Warehouse, offset: int, topic: str) -> list[dict[str, Any]]:
    """`kraftlake image --at-offset N --table partitions`, one topic's rows in partition order."""
    out = subprocess.run([*KRAFTLAKE, "image", "--warehouse", warehouse.uri, "--at-offset", str(offset),
                          "--table", "partitions"], check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    return sorted((r for r in rows if r["topic_name"] == topic), key=lambda r: r["partition_id"])


def shown_rows(page: Any, testid: str) -> list[dict[str, str]]:
    """The cells of a rows table, per row, by column name."""
    return page.eval_on_selector_all(
        f"[data-testid='{testid}'] tbody tr",
        "rows => rows.map(r => Object.fromEntries([...r.querySelectorAll('td[data-column]')]"
        ".map(td => [td.dataset.column, td.innerText.trim()])))")


def as_cell(value: Any) -> str:
    return "—" if value == [] else ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def at_of(url: str) -> int:
    return int(parse_qs(urlparse(url).query)["at"][0])


@pytest.mark.parametrize("case", list(CASES))
def test_cursor_pages_and_deep_links(case: str, request: pytest.FixtureRequest, running_ui: Any, page: Any,
                                     browser: Any) -> None:
    fixture, cluster, topic, broker = CASES[case]
    warehouse: Warehouse = request.getfixturevalue(fixture)
    reader = WarehouseReader(warehouse)
    first, last = reader.published_range()
    ui = running_ui(warehouse, "--name", cluster)

    # the timeline, then the cursor dragged to about two thirds of the axis
    page.goto(f"{ui.base}/")
    page.wait_for_selector("[data-testid=cursor]")
    plot = page.locator("[data-testid=timeline-plot]").bounding_box()
    assert plot is not None
    y = plot["y"] + 30
    page.mouse.move(plot["x"] + plot["width"] * 0.5, y)
    page.mouse.down()
    page.mouse.move(plot["x"] + plot["width"] * 0.68, y, steps=8)
    page.mouse.up()
    page.wait_for_function("() => new URL(location.href).searchParams.has('at')")
    dragged = at_of(page.url)
    assert first <= dragged <= last
    page.wait_for_selector("[data-testid=at-cursor] .card")
    assert page.locator("[data-testid=moment-offset]").inner_text() == str(dragged)
    assert page.locator("[data-testid=cursor-readout]").inner_text().startswith(f"offset {dragged} ")
    screenshot(page, f"{case}-timeline-dragged")

    # typed: an offset into the moment box
    typed = (first + last) // 2 if case == "sample" else 16
    page.fill("#at", str(typed))
    page.press("#at", "Enter")
    page.wait_for_url(f"**at={typed}**")
    page.wait_for_selector("[data-testid=at-cursor] .card")
    assert page.locator("[data-testid=moment-offset]").inner_text() == str(typed)
    screenshot(page, f"{case}-timeline-typed")
    screenshot(page, f"{case}-timeline-view", full_page=False)

    # the cluster at the cursor, the topic searched, its partitions against the CLI's answer there
    page.click("[data-testid=open-image]")
    page.wait_for_url("**/image?**")
    assert at_of(page.url) == typed
    screenshot(page, f"{case}-cluster")
    screenshot(page, f"{case}-cluster-view", full_page=False)
    page.fill("[data-testid=topic-search] input[name=q]", topic)
    page.press("[data-testid=topic-search] input[name=q]", "Enter")
    page.wait_for_url("**q=**")
    page.get_by_role("link", name=topic, exact=True).click()
    page.wait_for_selector("[data-testid=rows-partitions]")
    expected = cli_partitions(warehouse, typed, topic)
    shown = shown_rows(page, "rows-partitions")
    assert len(shown) == len(expected) > 0
    for row, want in zip(shown, expected, strict=True):
        for column in ("partition_id", "replicas", "isr", "leader", "leader_epoch", "partition_epoch", "elr"):
            assert row[column] == as_cell(want[column]), (column, row, want)
    screenshot(page, f"{case}-topic")

    # a deep link of the topic view, pasted into another browser (no cookies, no history): the same view
    topic_url = page.url
    other = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    other.goto(topic_url)
    assert shown_rows(other, "rows-partitions") == shown
    other.context.close()

    # a partition's history: every version the reader has
    page.locator("[data-testid=rows-partitions] tbody tr").first.get_by_role("link", name="history").click()
    page.wait_for_selector("[data-testid=versions]")
    versions = reader.history("partitions", f"{topic}-{expected[0]['partition_id']}")
    assert page.locator("[data-testid=versions] tbody tr").count() == len(versions)
    page.wait_for_selector("[data-testid=focus]")
    assert page.locator("[data-testid=focus]").count() == len(versions)
    screenshot(page, f"{case}-partition-history")

    # a broker's page: its state at the cursor, the partitions it leads, the timeline focused on its swimlane
    page.goto(f"{ui.base}/clusters/{cluster}/brokers/{broker}?at={typed}")
    leaders = reader.image_at(reader.answer(typed)).tables["partitions"]["leader"].to_pylist()
    assert page.locator("[data-testid=broker-leads]").inner_text() == f"leads {leaders.count(int(broker))}"
    page.wait_for_selector("[data-testid=timeline] svg")
    assert page.locator("[data-testid=timeline] text", has_text="broker ").count() == 1
    screenshot(page, f"{case}-broker")

    # a diff between the two moments: per table counts as the reader's `changes`, filterable by table
    start, end = sorted((dragged, typed))
    end = max(end, start + 1)
    page.goto(f"{ui.base}/clusters/{cluster}/changes?from={start}&to={end}")
    changed = {name: rows.num_rows for name, rows in reader.changes(start, end).items() if rows.num_rows}
    listed = page.locator("[data-testid=change-tables] a").all_inner_texts()
    assert {text.rsplit(" ", 1)[0]: int(text.rsplit(" ", 1)[1]) for text in listed} == changed
    if changed:
        table = max(changed, key=lambda name: changed[name])
        page.locator("[data-testid=change-tables] a", has_text=table).click()
        page.wait_for_url(f"**table={table}**")
        assert page.locator("[data-testid=changes] tbody tr").count() == min(changed[table], 100)
    screenshot(page, f"{case}-changes")

    # the timeline's deep link (moment and zoom window) reloads to the same cursor
    page.goto(f"{ui.base}/clusters/{cluster}?at={typed}")
    page.wait_for_selector("[data-testid=at-cursor] .card")
    page.click("[data-zoom=in]")
    page.wait_for_function("() => new URL(location.href).searchParams.has('from')")
    zoomed = page.url
    page.reload()
    page.wait_for_selector("[data-testid=at-cursor] .card")
    assert page.url == zoomed and page.locator("[data-testid=moment-offset]").inner_text() == str(typed)

    # the keyboard moves the cursor too (later in time: a later offset)
    page.focus("[data-testid=timeline] svg")
    page.keyboard.press("Shift+ArrowRight")
    page.wait_for_function(f"() => Number(new URL(location.href).searchParams.get('at')) > {typed}")
    assert page.errors == []


def test_every_moment_the_dragged_cursor_shows_is_the_cli_answer(demo_warehouse: Warehouse, running_ui: Any,
                                                                 page: Any) -> None:
    """The cursor dragged across the whole history, left to right: each moment its card states (offset,
    epoch, topic and partition counts, under-replicated and offline partitions, broker states) is what
    `kraftlake image --at-offset` answers there (`make bench ui` does the same at 1M partitions)."""
    ui = running_ui(demo_warehouse, "--name", "demo")
    shown = drag_across(page, ui.base, steps=3)
    first, last = WarehouseReader(demo_warehouse).known().span()
    offsets = [moment.offset for moment in shown]
    assert offsets[0] == first and offsets[-1] == last and offsets == sorted(offsets) and len(set(offsets)) > 2
    for moment in {moment.offset: moment for moment in shown}.values():  # one CLI process per offset shown
        assert moment == cli_moment(demo_warehouse, moment.offset)
    assert page.errors == []
