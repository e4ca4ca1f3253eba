"""The lake's errors: one base class, and every message starts with the warehouse (or table) URI, so a user
with several warehouses knows which one answered (the CLI prints the message as its one line). Beside them,
the one rule for a writer that lost a race to another (`lost_race`), which no user sees: the writer reads the
tables again and retries."""

from __future__ import annotations

from deltalake.exceptions import CommitFailedError, DeltaError


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


class SourceMismatchError(LakeError):
    """A writer whose source is not the one the warehouse holds: refused before it writes anything."""


class WriterFencedError(LakeError):
    """Another writer claimed the warehouse (or keeps committing to it): this one stops before publishing
    anything more."""


class UnknownKeyError(LakeError, ValueError):
    """A key text that does not name a row of the table (wrong shape, unknown topic)."""


def not_a_warehouse(uri: str) -> TimeTravelError:
    """The one message for a location without the `images` table."""
    return TimeTravelError(uri, "not a kraftlake warehouse (no images table)")


class StaleTableError(Exception):
    """A table another writer committed to since this writer read it: read the tables again, then retry."""


def lost_race(error: Exception) -> bool:
    """Whether `error` says another writer got there first (another sink, or `kraftlake maintain`, which
    compacts too): a commit conflict, a table written past what this writer knew, or a file the handle still
    listed that the other compacted away and a VACUUM deleted. The step committed nothing; on freshly opened
    tables it can run again."""
    if isinstance(error, CommitFailedError | FileNotFoundError | StaleTableError):
        return True
    return isinstance(error, DeltaError) and "not found" in str(error)
