"""The producer_ids table: one row, the next producer id the cluster hands out."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from kraftlake.image_schema.spec import Key, Row, SubImageTables, TableRows, dict_table, single
from kraftlake.records import metadata_types as mt
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.producer_ids import ProducerIdsImage


def _producer_id_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    if not image.producer_ids.is_empty():
        yield ("cluster",), {"scope": "cluster", "next_producer_id": image.producer_ids.next_producer_id}


def _producer_id_row(delta: MetadataDelta, key: Key) -> Row | None:
    next_id = delta.producer_ids_delta().next_producer_id
    return None if next_id == -1 else {"scope": "cluster", "next_producer_id": next_id}


def _rebuild(tables: TableRows) -> ProducerIdsImage:
    return ProducerIdsImage(next((r["next_producer_id"] for r in tables.get("producer_ids", ())), -1))


PRODUCER_IDS = SubImageTables(
    "producer_ids",
    (
        dict_table(
            "producer_ids",
            "producer_ids",
            ("scope",),
            pa.schema([("scope", pa.string()), ("next_producer_id", pa.int64())]),
            _producer_id_rows,
            _producer_id_row,
        ),
    ),
    {mt.ProducerIdsRecord: single("producer_ids", lambda r: ("cluster",))},
    _rebuild,
)
