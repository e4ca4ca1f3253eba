"""MetadataDelta: routing, no-op records, errors for what is not a metadata record, sharing of untouched
sub-images, and INV1 (every split of a record list into successive deltas gives the image of one delta)."""

from __future__ import annotations

from typing import get_type_hints

import pytest

from kraftlake.records import metadata_types as mt
from kraftlake.records.control_types import LeaderChangeMessage
from kraftlake.replay import delta as replay_delta
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import EMPTY_IMAGE, SUB_IMAGES, MetadataImage, Provenance
from tests.replay.builders import MV, A, B, E, N, T, apply_records, rich_records


def test_noop_and_zk_migration_state_change_nothing() -> None:
    before = apply_records([MV(14), T("foo")])
    delta = MetadataDelta(before)
    delta.replay(N())
    delta.replay(mt.ZkMigrationStateRecord(zk_migration_state=1))
    assert not delta.has_changes()
    after = delta.apply(Provenance(5, 1, 0, True))
    assert all(getattr(after, name) is getattr(before, name) for name in SUB_IMAGES)
    assert after.provenance.offset == 5


@pytest.mark.parametrize("marker", [B(), E(), A()], ids=["begin", "end", "abort"])
def test_transaction_markers_are_the_loaders_job(marker: object) -> None:
    with pytest.raises(ReplayError, match="transactions are the loader's job"):
        MetadataDelta(EMPTY_IMAGE).replay(marker)


def test_a_control_record_is_not_a_metadata_record() -> None:
    with pytest.raises(ReplayError, match="LEADER_CHANGE is not a metadata record"):
        MetadataDelta(EMPTY_IMAGE).replay(LeaderChangeMessage(version=0, leader_id=1))


def test_only_touched_sub_images_are_rebuilt() -> None:
    before = apply_records(rich_records())
    after = apply_records([mt.ProducerIdsRecord(broker_id=1, broker_epoch=1, next_producer_id=99)], before)
    assert after.producer_ids is not before.producer_ids
    assert all(getattr(after, n) is getattr(before, n) for n in SUB_IMAGES if n != "producer_ids")


def test_rich_records_touch_every_sub_image() -> None:
    """Guards INV1 and the round trips below: an empty sub-image would make them vacuous."""
    image = apply_records(rich_records())
    assert [name for name in SUB_IMAGES if getattr(image, name).is_empty()] == []


def successive(records: list[object], split: int, size: int) -> MetadataImage:
    image = apply_records(records[:split])
    for start in range(split, len(records), size):
        image = apply_records(records[start : start + size], image)
    return image


def test_inv1_every_split_point_and_chunk_size_gives_the_one_delta_image() -> None:
    records = rich_records()
    expected = apply_records(records)
    mismatches = [
        (split, size)
        for split in range(len(records) + 1)
        for size in range(1, len(records) + 1)
        if successive(records, split, size) != expected
    ]
    assert mismatches == []


@pytest.mark.parametrize("name", SUB_IMAGES)
def test_each_sub_image_has_a_typed_reader_that_creates_nothing(name: str) -> None:
    """The sub-image contract: `<name>_delta()` returns the declared delta type, live or detached."""
    reader = getattr(MetadataDelta, f"{name}_delta")
    declared = get_type_hints(reader, vars(replay_delta))["return"]
    delta = MetadataDelta(EMPTY_IMAGE)
    detached = reader(delta)
    assert isinstance(detached, declared) and not delta.has_changes()
    delta.finish_snapshot()  # creates every sub-delta
    assert reader(delta) is delta.deltas[name] and isinstance(delta.deltas[name], declared)
