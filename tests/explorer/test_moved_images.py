"""A moment the explorer derives from an image it holds (`moved_view`, from `WarehouseReader.moves`) is the image
read whole at that moment (`image_view(image_at(...))`): every table's rows, every partition's flags, the
topics' counts and order, the provenance; forward and backward in time, on a cluster whose partitions churn
(ISR shrinks and expands, leader moves: bench_jobs' `Churn`, written as `kraftlake ingest` writes), on the
demo-like scenario (topics created and deleted, brokers fenced, configs set) and on a real cluster's log."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bench.bench_jobs import Churn, controller_log
from kraftlake.explorer.service import Explorer, ImageView, decoded, image_view, moved_view
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.batch import decode_batch

CHURN_BATCHES = 200
IMAGE_EVERY = 20  # churn batches


@pytest.fixture(scope="module")
def churned_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """10,000 partitions, then `CHURN_BATCHES` batches of partition changes, an image every `IMAGE_EVERY`."""
    log = controller_log(10_000)
    warehouse = Warehouse(Path(tmp_path_factory.mktemp("moved")) / "warehouse")
    pipeline = MetadataPipeline(warehouse)
    for raw in log.batches:
        pipeline.load(decode_batch(raw))
    pipeline.commit()
    churn = Churn(log)
    for number in range(1, CHURN_BATCHES + 1):
        pipeline.load(decode_batch(churn.batch()[0]))
        if number % IMAGE_EVERY == 0:
            pipeline.commit()
    pipeline.flush()
    return warehouse


def by_key(view: ImageView, name: str) -> pa.Table:
    """A table's rows in key order, plain types; the partitions with their flags beside them."""
    rows = decoded(view.tables[name])
    if name == "partitions":
        for flag in view.flags.column_names:
            rows = rows.append_column(flag, view.flags[flag])
    return rows.sort_by([(column, "ascending") for column in TABLES[name].key])


def assert_same(found: ImageView, expected: ImageView) -> None:
    assert found.provenance == expected.provenance
    for name in TABLES:
        assert by_key(found, name).equals(by_key(expected, name)), name
    assert found.topics.equals(expected.topics)
    for topic in expected.topics["topic_id"].to_pylist()[:20]:
        assert sorted(found.partition_rows(topic).tolist()) == sorted(found.partition_rows(topic).tolist())
        rows = found.tables["partitions"]["partition_id"].take(pa.array(found.partition_rows(topic)))
        again = expected.tables["partitions"]["partition_id"].take(pa.array(expected.partition_rows(topic)))
        assert sorted(rows.to_pylist()) == sorted(again.to_pylist())


def flagged(view: ImageView) -> int:
    return sum(int(pc.sum(view.flags[name]).as_py() or 0) for name in view.flags.column_names)


def moved_pairs(warehouse: Warehouse) -> tuple[int, int]:
    """Every pair of images moved one from the other, compared with the image read whole: how many pairs
    were moved, and how many of those changed how many partitions are flagged."""
    reader = WarehouseReader(warehouse)
    offsets = [image.offset for image in reader.images()]
    whole = {offset: image_view(reader.image_at(offset)) for offset in offsets}
    moved = reflagged = 0
    for start in offsets:
        for end in offsets:
            found = moved_view(whole[start], reader.moves(start, end), reader.provenance(end))
            if found is not None and start != end:
                assert_same(found, whole[end])
                moved += 1
                reflagged += flagged(whole[start]) != flagged(whole[end])
    return moved, reflagged


def test_a_moved_image_is_the_image_read_whole(churned_warehouse: Warehouse) -> None:
    moved, reflagged = moved_pairs(churned_warehouse)
    images = len(WarehouseReader(churned_warehouse).images())
    assert images > CHURN_BATCHES // IMAGE_EVERY
    # the images after the bootstrap move into each other both ways, and most of those moves change flags
    churned = CHURN_BATCHES // IMAGE_EVERY
    assert moved >= churned * (churned - 1) and reflagged >= moved // 2


@pytest.mark.parametrize("which", ["demo", "sample"])
def test_moves_across_topics_and_brokers_are_built_afresh_or_moved_alike(which: str, demo_warehouse: Warehouse,
                                                                          sample_warehouse: Warehouse) -> None:
    moved_pairs(demo_warehouse if which == "demo" else sample_warehouse)


def test_the_explorer_moves_from_the_nearest_image_it_holds(churned_warehouse: Warehouse) -> None:
    reader = WarehouseReader(churned_warehouse)
    offsets = [image.offset for image in reader.images()]
    explorer = Explorer(reader, "demo", cache_bytes=1 << 30)
    for offset in random.Random(7).sample(offsets, min(len(offsets), 30)):
        assert_same(explorer.image(offset), image_view(reader.image_at(offset)))
