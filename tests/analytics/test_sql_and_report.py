"""On a real sample: `sql` views agree with the Arrow API, the CLI commands answer, and the HTML report
renders every chart in a real headless browser with no console error."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from kraftlake.analytics.report import CHART_IDS, write_report
from kraftlake.analytics.views import register_views
from kraftlake.cli.main import main
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import BATCHES, Warehouse, history_name
from tests.fixtures.s3 import S3Store

SAMPLE = "Niloufar1171_LDI-POC"
KRAFTLAKE = [sys.executable, "-m", "kraftlake.cli.main"]
BETWEEN_IMAGES = 3000  # images every 2000 offsets: this one is rebuilt from history


@pytest.fixture(scope="module")
def warehouse(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    warehouse = Warehouse(tmp_path_factory.mktemp("sql") / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse, image_every=2000)
    return warehouse


@pytest.fixture(scope="module")
def s3_warehouse(samples_dir: Path, s3_store: S3Store) -> Warehouse:
    warehouse = Warehouse(s3_store.uri(f"sql-{uuid.uuid4().hex[:8]}"), s3_store.storage_options())
    ingest(samples_dir / SAMPLE, warehouse, image_every=2000)
    return warehouse


def counts(spark: Any, views: list[str]) -> dict[str, int]:
    """Every view's row count in one Spark job (a `UNION ALL` of labelled counts) instead of one job per view."""
    sql = " UNION ALL ".join(f"SELECT '{view}' AS view, count(*) AS n FROM {view}" for view in views)
    return {row["view"]: row["n"] for row in spark.sql(sql).collect()}


def rows_json(rows: list[Any]) -> list[str]:
    """Rows (Spark's or Arrow's Python form) as sorted JSON texts, to compare two tables' contents."""
    return sorted(json.dumps(row if isinstance(row, dict) else row.asDict(recursive=True), sort_keys=True)
                  for row in rows)


@pytest.mark.parametrize("where", ["local", "s3"])  # Delta's reader, from a disk / through S3A
def test_sql_counts_equal_the_arrow_api(spark, request: pytest.FixtureRequest, where: str) -> None:
    warehouse = request.getfixturevalue("warehouse" if where == "local" else "s3_warehouse")
    register_views(spark, WarehouseReader(warehouse), at_offset=BETWEEN_IMAGES)
    image = WarehouseReader(warehouse).image_at(BETWEEN_IMAGES)
    pinned = WarehouseReader(warehouse).images()[-1].table_versions
    for name in TABLES:  # equal sorted rows: equal counts too
        assert rows_json(spark.table(name).collect()) == rows_json(image.tables[name].to_pylist()), name
    expected = {history_name(name): warehouse.table(history_name(name), pinned[history_name(name)]).to_pyarrow_table()
                .num_rows for name in TABLES}
    expected |= {BATCHES: warehouse.table(BATCHES).to_pyarrow_table().num_rows,
                 "images": len(WarehouseReader(warehouse).images())}
    assert counts(spark, list(expected)) == expected

def test_history_command_prints_versions(warehouse: Warehouse, capsys: pytest.CaptureFixture) -> None:
    assert main(["history", "--warehouse", warehouse.uri, "--table", "brokers", "--key", "1", "--json"]) == 0
    versions = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert versions[0]["change"] == "insert" and versions[0]["time"].startswith("2026-01-30T16:43")
    assert (versions[2]["before"], versions[2]["after"]) == ({"fenced": True}, {"fenced": False})  # unfenced
    assert (versions[-1]["before"], versions[-1]["after"]) == ({"fenced": False}, {"fenced": True})
    assert main(["history", "--warehouse", warehouse.uri, "--table", "brokers", "--key", "1",
                 "--from", "2026-01-30T17:00:00"]) == 0
    table = capsys.readouterr().out
    assert "in_controlled_shutdown: False → True" in table and "epoch: 6 → 8" not in table
    assert main(["history", "--warehouse", warehouse.uri, "--table", "partitions", "--key", "x"]) == 2


def test_report_renders_every_chart_in_a_browser(spark, chromium, warehouse: Warehouse, tmp_path: Path) -> None:
    register_views(spark, WarehouseReader(warehouse))
    page = write_report(spark, WarehouseReader(warehouse), tmp_path / "report.html")
    assert "<script src=" not in page.read_text()  # nothing to fetch at view time
    first, last = WarehouseReader(warehouse).known().span()  # the range it states: the one the warehouse answers
    assert f" · offsets {first}..{last} · " in page.read_text()
    rendered = chromium.render(page, tmp_path / "report.png")
    for chart in CHART_IDS:
        assert re.search(rf'id="{chart}"[^>]*js-plotly-plot', rendered.dom), f"chart {chart} was not drawn"
    assert rendered.dom.count('class="main-svg"') >= 2 * len(CHART_IDS)
    assert rendered.console == []
    assert "TestTopicPatient" in rendered.dom  # the events table
    image = Image.open(rendered.screenshot).convert("RGB")
    colors = image.getcolors(maxcolors=1 << 20) or []
    white = next((n for n, color in colors if color == (255, 255, 255)), 0)
    assert len(colors) > 50 and white < 0.97 * image.width * image.height


def test_changes_by_time_show_before_and_after(warehouse: Warehouse, capsys: pytest.CaptureFixture) -> None:
    assert main(["changes", "--warehouse", warehouse.uri, "--from-time", "2026-01-30T17:00:00",
                 "--to-time", "2026-01-30T18:00:00", "--table", "brokers"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["offset"], line["change"], line["before"], line["after"]) for line in lines] == [
        # broker 1's controlled shutdown opens the batch 4871..4925 (its leaders moved in the same batch):
        # visible with the whole batch, at 4925
        (4925, "update", {"in_controlled_shutdown": False}, {"in_controlled_shutdown": True}),
        (4926, "update", {"fenced": False}, {"fenced": True}),
    ]


def test_sql_and_summary_commands(spark, warehouse: Warehouse, capsys: pytest.CaptureFixture) -> None:
    assert main(["sql", "--warehouse", warehouse.uri, "--at-offset", str(BETWEEN_IMAGES), "--json",
                 "SELECT count(*) AS n FROM partitions"]) == 0
    assert json.loads(capsys.readouterr().out) == {"n": WarehouseReader(warehouse).image_at(BETWEEN_IMAGES).tables[
        "partitions"].num_rows}
    assert main(["summary", "fencing_episodes", "--warehouse", warehouse.uri, "--json"]) == 0
    episodes = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["broker_id"], e["start_offset"], e["end_offset"], e["cause"]) for e in episodes] == [
        (1, 6, 9, "fenced"), (1, 4925, None, "controlled_shutdown")]
    assert main(["sql", "--warehouse", warehouse.uri, "SELECT nope FROM brokers"]) == 2


def test_sql_command_reads_a_table_by_its_delta_path(warehouse: Warehouse) -> None:
    """The CLI's own session (a fresh process) has Delta's reader: a table named by its path answers as
    delta-rs counts it."""
    query = f"SELECT count(*) AS n FROM delta.`{warehouse.uri}/partitions_history`"
    done = subprocess.run([*KRAFTLAKE, "sql", "--warehouse", warehouse.uri, "--json", query],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"n": warehouse.table("partitions_history").to_pyarrow_table().num_rows}


def test_sql_command_reads_an_s3_table_by_its_delta_rs_uri(
    spark, s3_warehouse: Warehouse, capsys: pytest.CaptureFixture
) -> None:
    """`s3://` as delta-rs names it, the storage options as flags: Spark reads it through S3A."""
    options = s3_warehouse.storage_options.items()
    flags = [flag for key, value in options for flag in ("--storage-option", f"{key}={value}")]
    query = f"SELECT count(*) AS n FROM delta.`{s3_warehouse.uri}/partitions_history`"
    assert main(["sql", "--warehouse", s3_warehouse.uri, *flags, "--json", query]) == 0
    expected = s3_warehouse.table("partitions_history").to_pyarrow_table().num_rows
    assert json.loads(capsys.readouterr().out) == {"n": expected}
