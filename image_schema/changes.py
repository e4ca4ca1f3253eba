"""Row-level history: the table rows each published image changes, stamped with that image's offset.

`ChangeRecorder` observes a `replay.BatchLoader`: before a record is replayed it notes the rows the record
can touch (with their values then: the last published image's); when the loader publishes an image it reads
those rows again and emits a `RowVersion` for each row whose value changed, at the image's offset. So a
version starts where Kafka's loader made it visible (`replay.visibility`), and two changes of one key
between two published images are one version. An aborted transaction emits nothing. A snapshot load, and a
voters change (Raft state, applied outside the delta), are diffed table by table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from kraftlake.image_schema.spec import Key, TouchedRows, Values
from kraftlake.image_schema.tables import SUB_IMAGE_TABLES, TABLES
from kraftlake.replay.delta import STATE_CHANGING_TYPES, MetadataDelta
from kraftlake.replay.image import MetadataImage


class RowVersion(NamedTuple):
    """The value `row` (None: deleted) that `table`'s row `key` holds from metadata offset `offset` on.
    A named tuple, not a dataclass: a bootstrap makes one per partition."""

    table: str
    key: Key
    row: Values | None
    offset: int


RowReader = Callable[[MetadataDelta, Key], Values | None]
ROW_READERS: dict[str, RowReader] = {name: spec.row for name, spec in TABLES.items()}
_HIDES_CHANGE = {name: spec.hides_change for name, spec in TABLES.items() if spec.hides_change is not None}
_new_version = tuple.__new__  # RowVersion without its Python-level __new__: one per row of a bootstrap

TOUCHED_ROWS: dict[type, TouchedRows] = {
    record_type: touched for sub_image in SUB_IMAGE_TABLES for record_type, touched in sub_image.touched_rows.items()
}


def _check_against_the_delta() -> None:
    """Every record type the delta replays must say which rows it touches, else its changes would never reach
    the history tables; fail on import rather than lose them silently."""
    missing = STATE_CHANGING_TYPES - TOUCHED_ROWS.keys()
    unknown = TOUCHED_ROWS.keys() - STATE_CHANGING_TYPES
    if missing or unknown:
        names = sorted(record_type.__name__ for record_type in missing | unknown)
        raise RuntimeError(f"TOUCHED_ROWS and replay.delta disagree on {', '.join(names)}")


_check_against_the_delta()


def diff_images(before: MetadataImage, after: MetadataImage, offset: int,
                tables: tuple[str, ...] = tuple(TABLES)) -> list[RowVersion]:
    """Row versions of `tables` that turn `before` into `after`; sub-images shared by both are skipped unread."""
    versions: list[RowVersion] = []
    for name in tables:
        spec = TABLES[name]
        if getattr(before, spec.sub_image) is getattr(after, spec.sub_image):
            continue
        old = dict(spec.image_rows(before))
        new = dict(spec.image_rows(after))
        versions.extend(RowVersion(name, key, None, offset) for key in old.keys() - new.keys())
        versions.extend(RowVersion(name, key, row, offset) for key, row in new.items() if old.get(key) != row)
    return versions


def _hides_change(table: str, row: Values) -> bool:
    hides = _HIDES_CHANGE.get(table)
    return hides is not None and hides(row)


VOTER_TABLES = tuple(name for name, spec in TABLES.items() if spec.sub_image == "voters")


class ChangeRecorder:
    """A LoaderObserver that turns published images into row versions, collected until `take()`."""

    def __init__(self) -> None:
        # (table, key) -> (its table's row reader, the row's value in the last published image)
        self._pending: dict[tuple[str, Key], tuple[RowReader, Values | None]] = {}
        self._versions: list[RowVersion] = []

    def touching(self, message: Any, delta: MetadataDelta) -> None:
        touched = TOUCHED_ROWS.get(type(message))
        if touched is None:
            return
        pending = self._pending
        for table_key in touched(message, delta):
            if table_key not in pending:
                read = ROW_READERS[table_key[0]]
                pending[table_key] = (read, read(delta, table_key[1]))

    def published(self, delta: MetadataDelta, before: MetadataImage, after: MetadataImage) -> None:
        offset = after.provenance.offset
        append = self._versions.append
        for (table, key), (read, was) in self._pending.items():
            now = read(delta, key)
            if now != was or (now is not None and _hides_change(table, now)):
                append(_new_version(RowVersion, (table, key, now, offset)))
        self._pending.clear()
        self._versions.extend(diff_images(before, after, offset, VOTER_TABLES))

    def transaction_aborted(self) -> None:
        self._pending.clear()

    def snapshot_loaded(self, before: MetadataImage, after: MetadataImage) -> None:
        self._pending.clear()
        self._versions.extend(diff_images(before, after, after.provenance.offset))

    def take(self) -> list[RowVersion]:
        """The versions recorded since the last call, in offset order."""
        versions, self._versions = self._versions, []
        return versions
