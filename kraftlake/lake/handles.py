"""Delta table handles that readers in one process keep open across queries.

Opening a table reads its last Delta checkpoint and every commit since: 1.4 ms for a young table, 4-6 ms
for one that has a Delta checkpoint (delta-rs parses it whole), and a time-travel query opens up to 30
tables. A handle kept open is brought to the table's latest version by `update_incremental` instead (0.4-0.6
ms: a log listing and the commits since), so a process that answers many queries (a service, a notebook, the
Spark driver) pays the opening once per table. delta-rs's update starts again from the newest Delta
checkpoint when the commits in between are gone, so a handle left behind by pruning or log retention still
catches up. A read holds its handle's lock from the update to the end of the read, so two threads never share
one mid-read; a handle that has moved `REOPEN_AFTER_VERSIONS` versions since it was opened is opened afresh
(the state of a long-open delta-rs handle grows with every commit), and at most `KEEP_TABLES` handles are
kept, the least recently used going first. A warehouse deleted and rebuilt at the same URI is not noticed
by a handle (its versions start again from 0): a sink of this process forgets the warehouse's handles when it
starts, and a process that keeps reading while another process rebuilds the warehouse must call
`OPEN_TABLES.forget(warehouse)` (or start afresh, as every CLI command does).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from deltalake import DeltaTable

from kraftlake.lake.warehouse import Warehouse

REOPEN_AFTER_VERSIONS = 100
KEEP_TABLES = 256


@dataclass
class _Handle:
    lock: threading.Lock = field(default_factory=threading.Lock)
    table: DeltaTable | None = None
    opened_at: int = 0


class OpenTables:
    """The handles of the tables this process has read, by table URI and storage options."""

    def __init__(self, keep: int = KEEP_TABLES) -> None:
        self._keep = keep
        self._handles: OrderedDict[tuple[str, tuple[tuple[str, str], ...]], _Handle] = OrderedDict()
        self._lock = threading.Lock()

    @contextmanager
    def latest(self, warehouse: Warehouse, name: str) -> Iterator[DeltaTable]:
        """Table `name` at its latest version, for the duration of the `with` block."""
        handle = self._handle(warehouse, name)
        with handle.lock:
            if handle.table is None or handle.table.version() - handle.opened_at >= REOPEN_AFTER_VERSIONS:
                handle.table = warehouse.table(name)
                handle.opened_at = handle.table.version()
            else:
                handle.table.update_incremental()
            yield handle.table

    def forget(self, warehouse: Warehouse, name: str | None = None) -> None:
        """Drop a table's handle (None: every table of the warehouse); its next read opens it afresh."""
        with self._lock:
            if name is not None:
                self._handles.pop(self._key(warehouse, name), None)
                return
            prefix, options = self._key(warehouse, "")
            for key in [key for key in self._handles if key[0].startswith(prefix) and key[1] == options]:
                del self._handles[key]

    def clear(self) -> None:
        with self._lock:
            self._handles.clear()

    def _handle(self, warehouse: Warehouse, name: str) -> _Handle:
        key = self._key(warehouse, name)
        with self._lock:
            handle = self._handles.pop(key, None) or _Handle()
            self._handles[key] = handle  # most recently used last
            while len(self._handles) > self._keep:
                self._handles.popitem(last=False)
            return handle

    @staticmethod
    def _key(warehouse: Warehouse, name: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        return warehouse.table_uri(name), tuple(sorted(warehouse.storage_options.items()))


OPEN_TABLES = OpenTables()  # every reader of this process shares them
