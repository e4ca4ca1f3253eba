"""What a warehouse holds, in a comparable form: the equality that recovery tests assert; how far it got."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kraftlake.lake.errors import LakeError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.source import SOURCE
from kraftlake.lake.warehouse import BATCHES, IMAGES, Warehouse, all_tables


def _sorted_rows(warehouse: Warehouse, name: str, drop: tuple[str, ...] = ()) -> list[str]:
    rows = warehouse.table(name).to_pyarrow_table().to_pylist()
    return sorted(json.dumps({k: v for k, v in row.items() if k not in drop}, sort_keys=True) for row in rows)


def warehouse_contents(warehouse: Warehouse) -> dict[str, Any]:
    """Every table's rows (order-free), the published image offsets (sorted, duplicates kept), the batches;
    not the `source` row, which says how the log was read (a directory, a topic), not what the tables hold."""
    contents: dict[str, Any] = {
        name: _sorted_rows(warehouse, name) for name in all_tables() if name not in (IMAGES, BATCHES, SOURCE)
    }
    contents[BATCHES] = _sorted_rows(warehouse, BATCHES)
    images = warehouse.table(IMAGES).to_pyarrow_table().to_pylist()
    contents["image_offsets"] = sorted(row["offset"] for row in images)
    return contents


def last_published(warehouse: Path) -> int | None:
    """The warehouse's last published image offset (None: no image yet, or no warehouse)."""
    store = Warehouse(warehouse)
    if not store.exists():
        return None
    try:
        return WarehouseReader(store).published_range()[1]
    except LakeError:
        return None
