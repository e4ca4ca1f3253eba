"""Catching up a backlog: `ingest` without `--image-every` (and the streaming job's pipeline behind its
topic) holds images, row versions included, until the held change is as big as the history before it;
every offset stays exact, byte for byte with `replay --json`, also between the images. `--image-every`
keeps its meaning: an image every N offsets. A pipeline fed recent batches publishes at once, as before."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftlake.lake import ingest as ingest_module
from kraftlake.lake.ingest import ingest
from kraftlake.lake.pipeline import CATCH_UP_LAG_MS, MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import make_batch
from kraftlake.records import metadata_types as mt
from kraftlake.records.files import read_batches
from kraftlake.replay.log_replay import replay_paths
from tests.harness.answers import from_warehouse, replayed
from tests.replay.builders import topic_id_of

SAMPLE = "rjmfernandes_flink-on-prem/data"  # 17k offsets appended in 2024: a backlog today


@pytest.fixture(scope="module")
def caught_up(samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Warehouse]:
    """The sample ingested with the defaults."""
    warehouse = Warehouse(tmp_path_factory.mktemp("catch-up") / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse)
    return samples_dir / SAMPLE, warehouse


def test_images_are_held_while_catching_up(caught_up: tuple[Path, Warehouse]) -> None:
    directory, warehouse = caught_up
    offsets = [image.offset for image in WarehouseReader(warehouse).images()]
    commits = replay_paths([directory], None).image.provenance.offset // ingest_module.DEFAULT_IMAGE_EVERY
    assert 2 <= len(offsets) < commits, offsets
    assert offsets[-1] == replay_paths([directory], None).image.provenance.offset
    images = warehouse.table("images").to_pyarrow_table().sort_by("offset")
    history = images["history_rows"].to_pylist()
    assert all(later >= 2 * earlier for earlier, later in itertools.pairwise(history[:-1])), history


def test_every_offset_between_held_images_equals_replay(caught_up: tuple[Path, Warehouse]) -> None:
    directory, warehouse = caught_up
    images = [image.offset for image in WarehouseReader(warehouse).images()]
    rng = random.Random(21)
    between = [rng.randrange(a + 1, b) for a, b in itertools.pairwise(images) if b - a > 1]
    offsets = sorted({0, 1, 2, *images, *(o - 1 for o in images), *between, *rng.sample(range(images[-1]), 25)})
    for offset in offsets:
        from_lake = from_warehouse(warehouse, offset, indent=2)
        assert from_lake == replayed([directory], offset, indent=2), offset


def test_cli_json_of_a_caught_up_warehouse_equals_replay_byte_for_byte(caught_up: tuple[Path, Warehouse]) -> None:
    directory, warehouse = caught_up
    images = [image.offset for image in WarehouseReader(warehouse).images()]
    for offset in (images[0] + 1, (images[0] + images[-1]) // 2, images[-1]):
        cli = [sys.executable, "-m", "kraftlake.cli.main"]
        image = subprocess.run([*cli, "image", "--warehouse", warehouse.uri, "--at-offset", str(offset), "--json"],
                               capture_output=True, check=True).stdout
        replayed = subprocess.run([*cli, "replay", str(directory), "--to-offset", str(offset), "--json"],
                                  capture_output=True, check=True).stdout
        assert image == replayed, offset


def test_image_every_publishes_every_n_offsets(samples_dir: Path, tmp_path: Path) -> None:
    """Set explicitly, it means what it says on a backlog too: nothing is held."""
    warehouse = Warehouse(tmp_path / "warehouse")
    ingest(samples_dir / SAMPLE, warehouse, image_every=2000)
    offsets = [image.offset for image in WarehouseReader(warehouse).images()]
    biggest_batch = max(batch.last_offset - batch.base_offset + 1 for batch in read_batches(
        next((samples_dir / SAMPLE).rglob("00000000000000000000.log"))))
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    assert len(offsets) >= offsets[-1] // 2000
    assert all(2000 <= gap < 2000 + biggest_batch for gap in gaps[:-1]), gaps


def test_recent_batches_are_published_at_once_and_end_the_hold(tmp_path: Path) -> None:
    """The streaming job's path: old batches wait while their change is smaller than the history before
    it, then a batch appended now publishes everything held."""
    warehouse = Warehouse(tmp_path / "warehouse")
    pipeline = MetadataPipeline(warehouse, coalesce_backlog=True)
    old = int(time.time() * 1000) - 10 * CATCH_UP_LAG_MS
    first: list[object] = [mt.FeatureLevelRecord(name="metadata.version", feature_level=21)]
    first += [mt.TopicRecord(name=f"early{n}", topic_id=topic_id_of(f"early{n}")) for n in range(10)]
    pipeline.load(make_batch(0, 1, old, first))
    assert pipeline.commit() is not None  # nothing written before: the first image goes at once
    for n in range(4):  # 4 row versions < the 11 written
        topic = mt.TopicRecord(name=f"t{n}", topic_id=topic_id_of(f"t{n}"))
        pipeline.load(make_batch(len(first) + n, 1, old + n, [topic]))
        assert pipeline.commit() is None
    now = len(first) + 4
    recent = mt.TopicRecord(name="now", topic_id=topic_id_of("now"))
    pipeline.load(make_batch(now, 1, int(time.time() * 1000), [recent]))
    assert pipeline.commit() is not None
    assert [image.offset for image in WarehouseReader(warehouse).images()] == [len(first) - 1, now]
    for offset in range(len(first) - 1, now + 1):
        names = {t.name for t in WarehouseReader(warehouse).image_at(offset).to_image().topics.by_id.values()}
        held = {f"t{n}" for n in range(offset - len(first) + 1) if n < 4}  # t{n} at offset len(first) + n
        assert names == {f"early{n}" for n in range(10)} | held | ({"now"} if offset == now else set()), offset


def test_current_tables_rewritten_whole_hold_the_last_image(caught_up: tuple[Path, Warehouse]) -> None:
    """An image that changes at least half of a current table's rows rewrites it from the image (one
    overwrite commit, one file per bucket): the rows are the last image's, the bucket column included."""
    _, warehouse = caught_up
    last = WarehouseReader(warehouse).image_at(WarehouseReader(warehouse).images()[-1].offset)
    overwritten = 0
    for name, expected in last.tables.items():
        table = warehouse.table(name)
        operations = [commit.get("operationParameters", {}).get("mode") for commit in table.history()]
        overwritten += "Overwrite" in operations
        current = table.to_pyarrow_table().drop_columns(["bucket"]).select(expected.column_names)
        assert sorted(map(repr, current.to_pylist())) == sorted(map(repr, expected.to_pylist())), name
    assert overwritten >= 1  # the second image holds most of the log
