"""The image that answers an offset, from replay or from a warehouse, as canonical text — or `REFUSED` where
no image is published yet (both sides refuse the offsets before Kafka's first image), so tests compare the
two sides at any offset in one line. A replay's answer is kept for the rest of the session while its files are
unchanged: the reference side is a pure function of the files, and many tests ask the same sample's same
offsets (each replay reads the log from its start: a second or more a test)."""

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
_REPLAYED: dict[tuple[Any, ...], str] = {}


def replayed(paths: list[Path], offset: int, **options: Any) -> str:
    try:
        key = (_fingerprint(paths), offset, tuple(sorted(options.items())))
    except OSError:  # a file went while listed (a live node's directory): nothing worth keeping
        return _replay(paths, offset, **options)
    if key not in _REPLAYED:
        _REPLAYED[key] = _replay(paths, offset, **options)
    return _REPLAYED[key]


def _fingerprint(paths: list[Path]) -> tuple[tuple[str, int, int], ...]:
    """Every file the paths hold, with its size and modification time: a copy edited in place is a new key."""
    files = [file for path in paths for file in (sorted(path.rglob("*")) if path.is_dir() else [path])]
    return tuple((str(file.resolve()), (stat := file.stat()).st_size, stat.st_mtime_ns) for file in files
                 if file.is_file())


def _replay(paths: list[Path], offset: int, **options: Any) -> str:
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
