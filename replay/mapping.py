"""Copy-on-write maps: the one way a sub-image's delta produces the next image's read-only mapping."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")

EMPTY: Mapping = MappingProxyType({})


def merged(base: Mapping[K, V], changes: Mapping[K, V | None]) -> MappingProxyType[K, V]:
    """`base` with `changes` applied (a None value removes the key), as a new read-only mapping."""
    if not changes:
        return base if isinstance(base, MappingProxyType) else MappingProxyType(dict(base))
    result = dict(base)
    for key, value in changes.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return MappingProxyType(result)


def empty_map() -> Mapping:
    """Default factory for a sub-image's mapping field (dataclasses refuse a shared mapping default)."""
    return EMPTY
