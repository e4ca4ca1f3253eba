"""The known range, told the same everywhere: the reader's `known()` is the one definition, and the explorer's
header, its timeline, `/api/v1/clusters/{c}` and the refusals of `kraftlake image` give its first and last
offset, times and gaps. Checked on the demo-like warehouse (its first `images` row comes after its first
published image), a real cluster's log and a snapshot-started real sample (`kraftlake ingest`), and a warehouse
with a gap."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from kraftlake.lake.history import iso_time
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import SnapshotId
from kraftlake.replay.image import Provenance
from kraftlake.replay.visibility import time_span
from kraftlake.replay.writer import snapshot_batches
from tests.explorer.conftest import KRAFTLAKE, client_for
from tests.lake.reader_loop import run as cli
from tests.replay.builders import MV, T, apply_records, data, uuid

HEADER = re.compile(r"history: offsets (\d+)–(\d+)")  # then the times and the gaps


def gap_warehouse(path: Path) -> Warehouse:
    """Offsets 0..4 read, 5..9 deleted by Kafka before they were read (a snapshot at 9 bridges them), 10..12."""
    warehouse = Warehouse(path)
    pipeline = MetadataPipeline(warehouse)
    pipeline.load(data(0, 1, 100, [MV(14)], append_time_ms=1_000))
    for offset in range(1, 5):
        pipeline.load(data(offset, 1, 100, [T(f"t{offset}", uuid(offset))], append_time_ms=1_000 + offset))
    pipeline.commit()
    image = apply_records([MV(14), T("t1", uuid(1)), T("t9", uuid(9))])
    image = replace(image, provenance=Provenance(9, 1, 1_009, True))
    pipeline.load_snapshot(snapshot_batches(image, 1_009), SnapshotId(10, 1), "00000000000000000010-0000000001")
    for offset in range(10, 13):
        pipeline.load(data(offset, 1, 100, [T(f"t{offset}", uuid(offset))], append_time_ms=1_000 + offset))
    pipeline.commit()
    return warehouse


def assert_every_place_agrees(warehouse: Warehouse) -> tuple[int, int]:
    """Every place that states what the warehouse answers says what `known()` says; returns (first, last)."""
    known = WarehouseReader(warehouse).known()
    first, last = known.span()
    client = client_for(warehouse)
    api = client.get("/api/v1/clusters/demo").json()
    assert (api["first_offset"], api["last_offset"]) == (first, last)
    assert (api["first_time"], api["last_time"]) == (iso_time(known.first_time_ms), iso_time(known.last_time_ms))
    assert [(gap["first"], gap["last"]) for gap in api["gaps"]] == [(gap.first, gap.last) for gap in known.gaps]
    timeline = client.get("/api/v1/clusters/demo/timeline").json()
    assert (timeline["first_offset"], timeline["last_offset"]) == (first, last)
    assert (timeline["first_time"], timeline["last_time"]) == (known.first_time_ms, known.last_time_ms)
    assert known.first_time_ms > 0 and known.last_time_ms >= known.first_time_ms
    for offset, time_ms in ((first, known.first_time_ms), (last, known.last_time_ms)):
        assert client.get(f"/api/v1/clusters/demo/offset?at={offset}").json()["time"] == iso_time(time_ms)
    page = client.get("/clusters/demo")
    header = HEADER.search(page.text)
    assert header is not None and (int(header[1]), int(header[2])) == (first, last), page.text[:500]
    stated = f" · {time_span(known.first_time_ms, known.last_time_ms)}" + "".join(
        f" · gap {gap.first}–{gap.last}" for gap in known.gaps)
    assert page.text[header.end():].startswith(stated + "</span>"), page.text[header.start():header.end() + 200]
    assert cli(["image", "--warehouse", warehouse.uri, "--at-offset", str(first)])[0] == 0
    code, _, err = cli(["image", "--warehouse", warehouse.uri, "--at-offset", str(last + 1)])
    assert code == 2 and f": {known.describe()}" in err, err
    assert f"offsets {first}..{last} ({time_span(known.first_time_ms, known.last_time_ms)})" in err, err  # and times
    if first > 0:
        code, _, err = cli(["image", "--warehouse", warehouse.uri, "--at-offset", str(first - 1)])
        assert code == 2 and f"before the first published image (offset {first})" in err, err
    for gap in known.gaps:
        code, _, err = cli(["image", "--warehouse", warehouse.uri, "--at-offset", str(gap.first)])
        assert code == 2 and gap.describe() in err, err
    return first, last


def test_the_demo_states_the_range_it_answers(demo_warehouse: Warehouse) -> None:
    reader = WarehouseReader(demo_warehouse)
    assert reader.published_range()[0] > 0, "the demo's first images row comes after its first published image"
    assert assert_every_place_agrees(demo_warehouse)[0] == 0


def test_a_real_clusters_log_states_the_range_it_answers(sample_warehouse: Warehouse) -> None:
    """Ingested as users do (images held while catching up): the range starts at Kafka's first publish."""
    first, _ = assert_every_place_agrees(sample_warehouse)
    assert first < WarehouseReader(sample_warehouse).published_range()[0]


def test_a_snapshot_started_history_states_the_range_it_answers(samples_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "warehouse"
    subprocess.run([*KRAFTLAKE, "ingest", str(samples_dir / "kckoh_xflow/kafka-data"), "--warehouse", str(path)],
                   check=True, capture_output=True, text=True)
    first, _ = assert_every_place_agrees(Warehouse(path))
    assert first == 7604  # the snapshot 00000000000000007605-0000000001 the history starts from


def test_a_warehouse_with_a_gap_states_it_everywhere(tmp_path: Path) -> None:
    warehouse = gap_warehouse(tmp_path / "warehouse")
    assert [(gap.first, gap.last) for gap in WarehouseReader(warehouse).known().gaps] == [(5, 8)]
    assert assert_every_place_agrees(warehouse) == (0, 12)


@pytest.mark.parametrize("offset", [3, 9, 12])
def test_the_gap_warehouse_answers_around_its_gap(tmp_path: Path, offset: int) -> None:
    assert WarehouseReader(gap_warehouse(tmp_path / "warehouse")).answer(offset) == offset
