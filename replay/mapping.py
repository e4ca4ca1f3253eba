"""Copy-on-write maps: the one way a sub-image's delta produces the next image's read-only mapping."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")

EMPTY: MappingProxyType[Any, Any] = MappingProxyType({})


def copied(base: Mapping[K, V]) -> dict[K, V]:
    """A new dict of `base`. `dict(proxy)` walks a mapping proxy key by key; `proxy.copy()` copies the dict
    underneath in one C call, which matters when a million-partition image is republished."""
    return base.copy() if isinstance(base, (MappingProxyType, dict)) else dict(base)


def merged(base: Mapping[K, V], changes: Mapping[K, V | None]) -> MappingProxyType[K, V]:
    """`base` with `changes` applied (a None value removes the key), as a new read-only mapping."""
    if not changes:
        return base if isinstance(base, MappingProxyType) else MappingProxyType(dict(base))
    result: dict[K, V | None] = copied(base)  # None values only until removed below
    result.update(changes)  # one C call; the rare removals are undone below
    for key in [key for key, value in changes.items() if value is None]:
        del result[key]
    return MappingProxyType(result)  # type: ignore[arg-type]


def empty_map() -> MappingProxyType[Any, Any]:
    """Default factory for a sub-image's mapping field (dataclasses refuse a shared mapping default)."""
    return EMPTY
