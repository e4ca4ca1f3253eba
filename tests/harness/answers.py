"""The image that answers an offset, from replay or from a warehouse, as canonical text — or `REFUSED` where
no image is published yet (both sides refuse the offsets before Kafka's first image), so tests compare the
two sides at any offset in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.lake.errors import TimeTravelError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.log_replay import replay_paths

REFUSED = "refused: no image is published at or before this offset"
_BEFORE_FIRST = ("before the first published image", "no image is published yet")


def replayed(paths: list[Path], offset: int, **options: Any) -> str:
    try:
        image = replay_paths(paths, offset).image
    except ReplayError as error:
        if any(reason in str(error) for reason in _BEFORE_FIRST):
            return REFUSED
        raise
    return canonical_json(image, **options)


def from_warehouse(warehouse: Warehouse, offset: int, **options: Any) -> str:
    try:
        image = WarehouseReader(warehouse).image_at(offset).to_image()
    except TimeTravelError as error:
        if any(reason in str(error) for reason in _BEFORE_FIRST):
            return REFUSED
        raise
    return canonical_json(image, **options)


def assert_warehouse_equals_replay(warehouse: Warehouse, directory: Path, offsets: list[int]) -> None:
    """The warehouse and a replay of `directory` give the same image (or both refuse) at every offset."""
    for offset in offsets:
        from_delta = from_warehouse(warehouse, offset, provenance=False)
        assert from_delta == replayed([directory], offset, provenance=False), f"{directory.name} differs at {offset}"
