"""The explorer over a fleet (`kraftlake ui --fleet`): four clusters under one root, three with real warehouses
(the demo-like scenario; the same 20 s later with a controller failover; a real Kafka sample ingested by
`kraftlake ingest`) and one whose warehouse does not exist yet, served by the real process. The fleet's
series are each cluster's own timeline's (compared with `/api/v1/clusters/<c>/timeline` in the same window),
a cluster added to the file appears without a restart, and in Debian's Chromium the fleet page draws one row
per cluster, opens a cluster's timeline at the moment clicked, and the picker keeps that moment."""

from __future__ import annotations

import json
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from kraftlake.lake.warehouse import Warehouse
from tests.explorer import scenario
from tests.explorer.conftest import SAMPLE, RunningUi, screenshot, start_ui, stop_ui
from tests.lake.reader_loop import run as cli

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# name → env label; `later`: no warehouse yet
CLUSTERS = {"demo": "prod", "eu": "prod", "sample": "staging", "later": "prod"}
SHOWN = ["demo", "eu", "sample"]


def get(ui: RunningUi, path: str, **query: Any) -> Any:
    with urllib.request.urlopen(f"{ui.base}{path}" + (f"?{urlencode(query, doseq=True)}" if query else ""),
                                timeout=60) as answer:
        return json.load(answer)


def iso(ms: int) -> str:
    return (EPOCH + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")


def fleet_entry(name: str, env: str, samples_dir: Path) -> str:
    """One cluster of the file (a directory of its own, never read here: the ui reads the warehouses)."""
    return (f'[clusters.{name}]\nmetadata_dir = "{samples_dir / SAMPLE / name}"\n'
            f'labels = {{ env = "{env}", region = "eu-west-1" }}\n')


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory: pytest.TempPathFactory, demo_warehouse: Warehouse, sample_warehouse: Warehouse,
               samples_dir: Path) -> Path:
    """ROOT/demo and ROOT/sample copied from the explorer's two warehouses, ROOT/eu built; ROOT/later not there
    yet."""
    root = tmp_path_factory.mktemp("fleet-ui")
    shutil.copytree(demo_warehouse.uri, root / "warehouses" / "demo")
    scenario.build(root / "warehouses" / "eu", scenario.START_MS + 20_000, failover_at=20)
    shutil.copytree(sample_warehouse.uri, root / "warehouses" / "sample")
    path = root / "fleet.toml"
    path.write_text(f'warehouse_root = "{root / "warehouses"}"\n\n' +
                    "\n".join(fleet_entry(name, env, samples_dir) for name, env in CLUSTERS.items()))
    return path


@pytest.fixture(scope="module")
def fleet_ui(fleet_file: Path) -> Iterator[RunningUi]:
    ui = start_ui(fleet_file)
    yield ui
    stop_ui(ui)


def test_each_row_is_the_clusters_own_timeline(fleet_ui: RunningUi) -> None:
    fleet = get(fleet_ui, "/api/v1/fleet")
    rows = {row["name"]: row for row in fleet["clusters"]}
    assert list(rows) == list(CLUSTERS)
    assert {name: row["labels"]["env"] for name, row in rows.items()} == CLUSTERS
    assert rows["later"]["status"] == "no history yet" and rows["later"]["series"] == {}
    shown = [row for row in fleet["clusters"] if row["status"] == "ok"]
    assert [row["name"] for row in shown] == SHOWN
    window = {"from": iso(fleet["from_time"]), "to": iso(fleet["to_time"])}
    # a narrower window too: the same rule cuts both
    inner = {"from": iso((fleet["from_time"] * 3 + fleet["to_time"]) // 4), "to": iso(fleet["to_time"])}
    for query in (window, inner):
        narrowed = get(fleet_ui, "/api/v1/fleet", **query)
        for row in narrowed["clusters"][:len(SHOWN)]:
            own = get(fleet_ui, f"/api/v1/clusters/{row['name']}/timeline", **query)
            assert (row["first_time"], row["last_time"]) == (own["first_time"], own["last_time"])
            assert row["series"] == {"offline": own["series"]["offline"],
                                     "under_min_isr": own["series"]["under_min_isr"],
                                     "fenced_brokers": own["fenced_brokers"]}
            assert row["epochs"] == own["epochs"] and row["gap_times"] == own["gap_times"]
    drawn = [p["value"] for row in shown for name in ("offline", "under_min_isr", "fenced_brokers")
             for p in row["series"][name]]
    assert max(drawn) > 0 and len(rows["eu"]["epochs"]) == 2  # not a comparison of empty series
    prod = get(fleet_ui, "/api/v1/fleet", label="env=prod")
    assert [row["name"] for row in prod["clusters"]] == ["demo", "eu", "later"]


def test_refusals_before_serving(fleet_file: Path, tmp_path: Path) -> None:
    """One line and exit code 2: a fleet and a warehouse at once, a fleet file that does not load."""
    code, _, err = cli(["ui", "--fleet", str(fleet_file), "--warehouse", str(tmp_path)])
    assert code == 2 and "--fleet takes each cluster's warehouse and name from its file: drop --warehouse" in err
    bad = tmp_path / "fleet.toml"
    bad.write_text("[clusters.Bad-Name]\nmetadata_dir = '/x'\n")
    code, _, err = cli(["ui", "--fleet", str(bad)])
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1


def test_the_picker_keeps_the_page_and_the_moment_as_a_time(fleet_ui: RunningUi) -> None:
    moment = get(fleet_ui, "/api/v1/clusters/demo/offset", at=16)
    for page, kept in (("/image", "/image"), ("/image/brokers", "/image/brokers"), ("", ""),
                       ("/topics/orders", "/image"),  # eu may have no such topic: the cluster at the moment
                       ("/history/brokers?key=1&", "")):  # nor such a key: its timeline
        with urllib.request.urlopen(f"{fleet_ui.base}/clusters/demo{page}{'' if '?' in page else '?'}at=16",
                                    timeout=60) as answer:
            html = answer.read().decode()
        found = re.search(r'<a href="([^"]+)" data-moment-time data-testid="pick-eu"', html)
        assert found, html
        target = urlparse(found.group(1).replace("&amp;", "&"))
        assert (target.path, parse_qs(target.query)["at"]) == (f"/clusters/eu{kept}", [moment["time"]])


def test_fenced_brokers_count_the_swimlanes_fenced_runs(fleet_ui: RunningUi) -> None:
    """One definition: at every point of the count, the brokers whose swimlane is fenced there."""
    for name in SHOWN:
        own = get(fleet_ui, f"/api/v1/clusters/{name}/timeline")
        fenced = [span for spans in own["brokers"].values() for span in spans if span["state"] == "fenced"]
        assert own["fenced_brokers"] or not fenced
        for point in own["fenced_brokers"]:
            at = point["offset"]
            assert point["value"] == sum(1 for s in fenced if s["from_offset"] <= at
                                         and (s["to_offset"] is None or at < s["to_offset"]))


def test_no_history_yet_then_a_cluster_added_to_the_file(fleet_ui: RunningUi, fleet_file: Path,
                                                         demo_warehouse: Warehouse, samples_dir: Path) -> None:
    with urllib.request.urlopen(f"{fleet_ui.base}/clusters/later", timeout=60) as answer:
        assert answer.status == 200
        assert "later: no history yet" in answer.read().decode()
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{fleet_ui.base}/api/v1/clusters/later/timeline", timeout=60)
    assert refused.value.code == 404 and refused.value.headers["content-type"] == "application/problem+json"
    assert json.load(refused.value)["detail"].startswith("cluster later: no history yet")

    # added while serving: listed at once; its warehouse appearing later gives it a timeline
    fleet_file.write_text(fleet_file.read_text() + "\n" + fleet_entry("added", "lab", samples_dir))
    assert [c["name"] for c in get(fleet_ui, "/api/v1/clusters")] == [*CLUSTERS, "added"]
    assert get(fleet_ui, "/api/v1/fleet", label="env=lab")["clusters"][0]["status"] == "no history yet"
    shutil.copytree(demo_warehouse.uri, fleet_file.parent / "warehouses" / "added")
    added = get(fleet_ui, "/api/v1/fleet", label="env=lab")["clusters"][0]
    assert added["status"] == "ok"
    assert added["series"]["offline"] == get(fleet_ui, "/api/v1/clusters/added/timeline", **{
        "from": iso(added["first_time"]), "to": iso(added["last_time"])})["series"]["offline"]


def test_fleet_page_click_through_and_picker(fleet_ui: RunningUi, page: Any) -> None:
    page.goto(f"{fleet_ui.base}/")
    page.wait_for_selector("[data-testid=fleet-svg]")
    rows = page.locator("[data-testid=fleet-row]")
    names = [rows.nth(i).get_attribute("data-cluster") for i in range(rows.count())]
    assert names[:len(CLUSTERS)] == list(CLUSTERS)
    for name in SHOWN:
        row = page.locator(f"[data-testid=fleet-row][data-cluster={name}]")
        row.locator("[data-testid=fleet-svg]").wait_for()
        drawn = row.locator("[data-testid=fleet-series]")
        assert drawn.count() == 4
        assert sum(int(drawn.nth(i).get_attribute("data-points") or 0) for i in range(4)) > 0
    later = page.locator("[data-testid=fleet-row][data-cluster=later]")
    assert later.locator("[data-testid=fleet-status]").inner_text() == "no history yet"

    # the label filter is in the URL
    page.click("[data-testid=filter-env-prod]")
    page.wait_for_selector("[data-testid=fleet-svg]")
    assert parse_qs(urlparse(page.url).query)["env"] == ["prod"]
    shown = page.locator("[data-testid=fleet-row]")
    assert [shown.nth(i).get_attribute("data-cluster") for i in range(shown.count())] == ["demo", "eu", "later"]
    assert page.locator("[data-testid=fleet-row][data-cluster=eu] [data-series=controller]").get_attribute(
        "data-points") == "1"
    page.hover("[data-testid=fleet-row][data-cluster=eu] [data-testid=fleet-svg]")
    screenshot(page, "fleet", full_page=False)  # docs/images/explorer-fleet.png

    # a click on demo's row opens demo's timeline at that moment (a time: offsets are per cluster)
    svg = page.locator("[data-testid=fleet-row][data-cluster=demo] [data-testid=fleet-svg]")
    box = svg.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] * 0.4, box["y"] + 10)
    page.wait_for_url("**/clusters/demo?at=*")
    at = parse_qs(urlparse(page.url).query)["at"][0]
    expected = get(fleet_ui, "/api/v1/clusters/demo/offset", at=at)
    page.wait_for_selector("[data-testid=cursor]")
    assert page.locator("[data-testid=moment-offset]").inner_text() == str(expected["offset"])

    # the picker opens the other cluster's same page at the moment's time
    page.click("[data-testid=picker] summary")
    link = page.locator("[data-testid=pick-sample]")
    target = urlparse(link.get_attribute("href") or "")
    assert target.path == "/clusters/sample"
    assert parse_qs(target.query)["at"] == [expected["time"]]
    link.click()
    page.wait_for_url("**/clusters/sample?at=*")
    assert page.locator("[data-testid=picker] summary").inner_text() == "sample"
    assert page.errors == []
