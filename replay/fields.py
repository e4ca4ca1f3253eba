"""An image value's fields as plain data, so that each output form (canonical JSON, table rows) derives its
field list from the value's own type instead of restating it: a field added to a registration appears in
every form, and a form that must leave one out says so by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any


def field_items(value: Any) -> Iterable[tuple[str, Any]]:
    """(name, value) of a NamedTuple's or a dataclass's fields, in declaration order."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    return value._asdict().items()


def plain(value: Any, name: Callable[[str], str] = str, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """`value`'s fields as a dict keyed by `name(field)`, minus `leave_out`; nested records become dicts
    and tuples become lists (JSON arrays, Arrow lists), recursively."""
    return {name(field): _plain_value(item, name) for field, item in field_items(value) if field not in leave_out}


def _plain_value(item: Any, name: Callable[[str], str]) -> Any:
    if hasattr(item, "_asdict") or (dataclasses.is_dataclass(item) and not isinstance(item, type)):
        return plain(item, name)
    if isinstance(item, tuple):
        return [_plain_value(element, name) for element in item]
    return item


def camel_case(snake: str) -> str:
    """`last_known_elr` -> `lastKnownElr`: the field names of Kafka's JSON forms."""
    head, *rest = snake.split("_")
    return head + "".join(part.capitalize() for part in rest)
