"""The explorer's cache: bounded in bytes, room made before a build (so the cache and the value being built
fit the budget together), the least recently used value dropped first, the newest always kept."""

from __future__ import annotations

from functools import partial

from kraftlake.explorer.service import Cache, Explorer
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse


def test_the_cache_makes_room_before_a_build_and_keeps_the_newest() -> None:
    sizes = {"a": 40, "b": 40, "c": 40, "huge": 500}
    cache: Cache[str] = Cache(100, lambda key: sizes[key])
    held: list[list[object]] = []

    def build(key: str) -> str:
        held.append(list(cache._values))  # what the cache holds while this value is built
        return key

    for key in ("a", "b", "a", "c", "huge", "a"):
        assert cache.get(key, partial(build, key)) == key
    # a, b built with room to spare; "a" again is a hit (and the most recent); building c (room for 40 more)
    # drops b, the least recently used; building huge (room for 40) drops a; huge alone, over the budget,
    # stays as the newest; building a (room for 500) drops it
    assert held == [[], ["a"], ["a"], ["c"], []]
    assert list(cache._values) == ["a"]


def test_the_offsets_one_image_answers_share_one_cached_image(sample_warehouse: Warehouse) -> None:
    reader = WarehouseReader(sample_warehouse)
    first, last = reader.published_range()
    answers = reader.answers(first, last)
    explorer = Explorer(reader, "demo")
    by_image: dict[int, list[int]] = {}
    for offset, answered in zip(range(first, last + 1), answers, strict=True):
        if isinstance(answered, int):
            by_image.setdefault(answered, []).append(offset)
    image, offsets = max(by_image.items(), key=lambda item: len(item[1]))
    assert len(offsets) > 1, "a real log has batches of several records"
    views = {id(explorer.image(offset)) for offset in offsets}
    assert len(views) == 1 and list(explorer.images._values) == [image]
    assert explorer.image(offsets[-1]).provenance.offset == image
