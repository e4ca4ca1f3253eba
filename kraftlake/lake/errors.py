"""The lake's errors: one base class, and every message starts with the warehouse (or table) URI, so a user
with several warehouses knows which one answered (the CLI prints the message as its one line)."""

from __future__ import annotations


class LakeError(Exception):
    """Something a warehouse cannot do or answer; `uri` names the warehouse (or its table)."""

    def __init__(self, uri: str, reason: str) -> None:
        super().__init__(f"{uri}: {reason}")
        self.uri = uri
        self.reason = reason


class TimeTravelError(LakeError):
    """An offset or time the warehouse cannot answer for (before its history, after its last image), or a
    location that holds no warehouse."""


class WarehouseLayoutError(LakeError):
    """A warehouse whose tables this kraftlake cannot write: written by an older kraftlake, or upgraded by
    another writer."""


class UnknownKeyError(LakeError, ValueError):
    """A key text that does not name a row of the table (wrong shape, unknown topic)."""


def not_a_warehouse(uri: str) -> TimeTravelError:
    """The one message for a location without the `images` table."""
    return TimeTravelError(uri, "not a kraftlake warehouse (no images table)")
