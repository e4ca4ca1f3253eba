"""The fleet's budget for offset-only publishes (`kraftlake.lake.idle_budget`): idle clusters that share one publish
at most its rate in all, a change still publishes at once, and every warehouse ends as an ingest of its log."""

from __future__ import annotations

import time
from pathlib import Path

from kraftlake.lake.idle_budget import IdleBudget
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import IMAGES, Warehouse
from kraftlake.records import RecordBatch, make_batch, wire
from kraftlake.records import metadata_types as mt
from tests.lake.warehouse_state import warehouse_contents

CLUSTERS = 4
ROUNDS = 6  # micro-batches of two NoOps each, as a 1 s trigger sees an idle controller
RATE = 0.1  # offset-only publishes a second in all: without the budget, CLUSTERS * ROUNDS of them
TOPIC = wire.uuid_to_text((5).to_bytes(16, "big"))


def _setup() -> RecordBatch:
    return make_batch(0, 1, 1_000, [
        mt.FeatureLevelRecord(name="metadata.version", feature_level=21),
        mt.TopicRecord(name="t", topic_id=TOPIC),
        mt.PartitionRecord(partition_id=0, topic_id=TOPIC, replicas=(1, 2), isr=(1, 2), leader=1),
    ])


def _next(log: list[RecordBatch], record: object) -> RecordBatch:
    offset = log[-1].last_offset + 1
    return make_batch(offset, 1, 1_000 + offset, [record])


def _images(warehouse: Warehouse) -> int:
    return warehouse.table(IMAGES).to_pyarrow_table(columns=["offset"]).num_rows


def test_idle_clusters_publish_within_the_fleets_budget(tmp_path: Path) -> None:
    budget = IdleBudget(RATE)
    warehouses = [Warehouse(tmp_path / f"cluster{n}") for n in range(CLUSTERS)]
    pipelines = [MetadataPipeline(w, idle_publish_ms=0, idle_budget=budget) for w in warehouses]
    logs: list[list[RecordBatch]] = [[_setup()] for _ in warehouses]
    for pipeline, log in zip(pipelines, logs, strict=True):
        pipeline.load(log[0])
        assert pipeline.commit() is not None  # it changes rows: never budgeted
    before = [_images(w) for w in warehouses]

    started = time.monotonic()
    for _ in range(ROUNDS):
        for pipeline, log in zip(pipelines, logs, strict=True):
            for _ in range(2):
                log.append(_next(log, mt.NoOpRecord()))
                pipeline.load(log[-1])
            pipeline.commit()
    elapsed = time.monotonic() - started
    idle_published = sum(_images(w) - n for w, n in zip(warehouses, before, strict=True))
    # one second's burst, then the rate: however slow the machine, never more (without it: 24)
    assert idle_published <= 1 + RATE * elapsed < CLUSTERS * ROUNDS

    for pipeline, log in zip(pipelines, logs, strict=True):  # the budget is spent: a change still goes at once
        log.append(_next(log, mt.PartitionChangeRecord(partition_id=0, topic_id=TOPIC, isr=(1,))))
        pipeline.load(log[-1])
        published = pipeline.commit()
        assert published is not None and published.provenance.offset == log[-1].last_offset
        log.append(_next(log, mt.NoOpRecord()))
        pipeline.load(log[-1])
        pipeline.commit()
        pipeline.flush()

    for n, (warehouse, log) in enumerate(zip(warehouses, logs, strict=True)):
        ingested = Warehouse(tmp_path / f"ingest{n}")
        alone = MetadataPipeline(ingested)
        for batch in log:
            alone.load(batch)
        alone.flush()
        ours, theirs = warehouse_contents(warehouse), warehouse_contents(ingested)
        assert ours.pop("image_offsets")[-1] == theirs.pop("image_offsets")[-1] == log[-1].last_offset
        assert ours == theirs
        for offset in (log[1].last_offset, log[len(log) // 2].last_offset, log[-2].last_offset):
            assert (WarehouseReader(warehouse).image_at(offset).canonical_json(None)
                    == WarehouseReader(ingested).image_at(offset).canonical_json(None))


def test_the_longest_wait_goes_first() -> None:
    """A token back: the waiter that last wrote earliest gets it, whoever asks first; one that withdrew (it
    published a change) no longer holds the others back."""
    budget = IdleBudget(rate=1.0)  # a burst of one token, then one a second (never two at once)
    early, late, gone = object(), object(), object()
    assert budget.grant(object(), since=0.0)  # the burst's token
    assert not budget.grant(late, since=2.0)
    assert not budget.grant(early, since=1.0)
    assert not budget.grant(gone, since=0.5)  # waits longest ...
    budget.withdraw(gone)  # ... until it writes a change
    time.sleep(1.1)  # a token again
    assert not budget.grant(late, since=2.0)
    assert budget.grant(early, since=1.0)
