"""One routing table: the rows image_schema's history says a record touches lie in the sub-images the delta
routes that record to, and both know the same record types."""

from __future__ import annotations

from kraftlake.image_schema.changes import TOUCHED_ROWS
from kraftlake.image_schema.tables import TABLES
from kraftlake.replay.delta import STATE_CHANGING_TYPES, MetadataDelta
from kraftlake.replay.image import EMPTY_IMAGE, Provenance
from tests.replay.builders import rich_records


def test_history_knows_every_record_type_the_delta_replays() -> None:
    assert set(TOUCHED_ROWS) == STATE_CHANGING_TYPES


def test_touched_rows_lie_in_the_sub_images_the_delta_changes() -> None:
    image, seen = EMPTY_IMAGE, set()
    for offset, record in enumerate(rich_records()):
        delta = MetadataDelta(image)
        rows = TOUCHED_ROWS.get(type(record), lambda _record, _delta: ())  # no-op records touch nothing
        touched = {TABLES[table].sub_image for table, _ in rows(record, delta)}
        delta.replay(record)
        assert touched <= set(delta.deltas), type(record).__name__
        image = delta.apply(Provenance(offset, 1, 0, True))
        seen.add(type(record))
    assert STATE_CHANGING_TYPES - seen == set(), "rich_records no longer covers every record type"
