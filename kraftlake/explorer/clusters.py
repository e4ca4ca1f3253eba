"""Which clusters an explorer serves: one warehouse (`kraftlake ui --warehouse`, `OneCluster`), or every cluster
of a fleet file (`kraftlake ui --fleet`, `FleetClusters`), each read from ROOT/<cluster>/ only when asked.

The fleet file is looked at on every lookup (one `stat`): when its modification time or size changed it is
read again, so a cluster added to the file appears without a restart; clusters whose warehouse did not move
keep their explorer (and its caches). A file that no longer loads leaves the clusters as they were and is
reported (`problem`) on the fleet page.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kraftlake.explorer.errors import NoHistory, NotFound
from kraftlake.explorer.service import Explorer
from kraftlake.lake.errors import TimeTravelError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.settings.errors import SettingsError
from kraftlake.settings.fleet import cluster_location, file_stamp, load_fleet


@dataclass(frozen=True)
class Member:
    """A cluster served: its name (the URL segment), the fleet file's labels, its reads."""

    name: str
    explorer: Explorer
    labels: dict[str, str] = field(default_factory=dict)


class Clusters(Protocol):
    is_fleet: bool
    problem: str | None

    def members(self) -> list[Member]:
        """Every cluster served, in the fleet file's order."""
        ...

    def explorer(self, name: str) -> Explorer:
        """The cluster's reads (NotFound: no such cluster; NoHistory: nothing published there yet)."""
        ...

    def describe(self) -> str:
        """What `kraftlake ui` announces it serves."""
        ...


class OneCluster:
    """One warehouse under one name (`--name`); its history was checked when the server started."""

    is_fleet = False
    problem: str | None = None

    def __init__(self, explorer: Explorer) -> None:
        self._member = Member(explorer.cluster, explorer)

    def members(self) -> list[Member]:
        return [self._member]

    def explorer(self, name: str) -> Explorer:
        if name != self._member.name:
            raise NotFound(f"no cluster {name!r}; clusters: {self._member.name}")
        return self._member.explorer

    def describe(self) -> str:
        return f"warehouse {self._member.explorer.reader.uri}"


class FleetClusters:
    """Every cluster of a fleet file, its warehouse at ROOT/<cluster> (ROOT: the file's `warehouse_root`, else
    `default_root`). `cache_bytes` is shared out among the clusters the file names when each is first read."""

    is_fleet = True

    def __init__(self, path: Path, default_root: str, storage_options: Mapping[str, str], cache_bytes: int) -> None:
        self.path = path
        self.default_root = default_root
        self.storage_options = dict(storage_options)
        self.cache_bytes = cache_bytes
        self.problem: str | None = None
        self._stamp: tuple[int, int] | None = None
        self._members: dict[str, Member] = {}
        self._with_history: set[str] = set()  # a published image stays published: asked once per cluster
        self._lock = threading.Lock()
        self._refresh()  # a file that does not load at start: SettingsError, one line

    def members(self) -> list[Member]:
        self._refresh()
        return list(self._members.values())

    def explorer(self, name: str) -> Explorer:
        self._refresh()
        member = self._members.get(name)
        if member is None:
            raise NotFound(f"no cluster {name!r}; clusters: {', '.join(self._members)}")
        if name not in self._with_history:
            try:
                member.explorer.reader.published_range()
            except TimeTravelError as error:  # no warehouse yet, or none of its images published yet
                raise NoHistory(f"cluster {name}: no history yet ({error.reason})") from None
            self._with_history.add(name)
        return member.explorer

    def describe(self) -> str:
        return f"fleet {self.path}, {len(self._members)} clusters"

    def _refresh(self) -> None:
        stamp = file_stamp(self.path)
        with self._lock:
            if stamp == self._stamp:
                return
            try:
                fleet = load_fleet(self.path)
            except SettingsError as error:
                if self._stamp is None:
                    raise
                self._stamp, self.problem = stamp, f"{error} (serving the clusters it named before)"
                return
            root = fleet.settings.warehouse_root or self.default_root
            share = self.cache_bytes // len(fleet.clusters)
            members = {}
            for name, cluster in fleet.clusters.items():
                uri = Warehouse(cluster_location(root, name), self.storage_options).uri
                kept = self._members.get(name)
                if kept is not None and kept.explorer.reader.uri == uri:
                    explorer = kept.explorer
                else:
                    explorer = Explorer(WarehouseReader(Warehouse(uri, self.storage_options)), name, share)
                    self._with_history.discard(name)
                members[name] = Member(name, explorer, cluster.labels)
            self._stamp, self._members, self.problem = stamp, members, None
