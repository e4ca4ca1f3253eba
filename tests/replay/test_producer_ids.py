"""The next producer id: the last ProducerIdsRecord wins, and a snapshot never drops it."""

from __future__ import annotations

from kraftlake.records import metadata_types as mt
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import Provenance
from tests.replay.builders import MV, apply_records


def producer_ids(next_id: int) -> object:
    return mt.ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=next_id)


def test_the_last_block_wins() -> None:
    image = apply_records([producer_ids(1000), producer_ids(2000)])
    assert image.producer_ids.next_producer_id == 2000
    assert not image.producer_ids.is_empty()


def test_absent_block_is_empty() -> None:
    assert apply_records([MV()]).producer_ids.is_empty()


def test_finish_snapshot_keeps_the_producer_id_block() -> None:
    before = apply_records([MV(), producer_ids(3000)])
    delta = MetadataDelta(before)
    delta.finish_snapshot()
    assert delta.apply(Provenance()).producer_ids.next_producer_id == 3000
