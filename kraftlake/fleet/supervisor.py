"""`kraftlake follow --fleet fleet.toml`: every cluster of the fleet followed from one process, each by its own
supervised follower (a thread running `kraftlake.follow.follower.Follower`, the same as `kraftlake follow`), into
its own metadata topic through the bridge.

Each cluster's topic is its own, or the fleet file's shared `topic` (keyed by cluster, `kraftlake.bridge.publisher`).
Isolation: each cluster has its own thread, sockets, producer and backoff, so a cluster that is down, slow or
refuses the credentials only ever waits for itself. A follower that stops with an error (no controller answered
within `connect_timeout_seconds`, authentication refused, a bad setting) is marked FAILED with that one line in
its status and started again after a backoff (doubling up to `max_backoff_s`): an outage that ends, or a fixed
file, needs no restart.

Reload rule: the fleet file and every cluster's `security_file` are looked at every `reload_s` seconds (their
modification times and sizes) and on SIGHUP (which only makes the next look immediate). A cluster added starts,
one removed stops (its status file goes), one whose settings or security file changed restarts; the others are
not touched. A file that no longer loads is
reported in one line and the clusters keep running as they were. A file watch rather than SIGHUP alone,
because configuration tools (a Kubernetes ConfigMap, Ansible) replace files and send no signal.

Statuses: one file per cluster in `status_dir` (`<name>.json`, `kraftlake.follow.status`'s format), which
`kraftlake follow --status DIR` prints one line per cluster. No password ever reaches a log line or a status:
the follower's errors never carry one, and settings are shown by name only.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from kraftlake.bridge.publisher import PublisherConfig
from kraftlake.follow.client import FollowError, parse_endpoints
from kraftlake.follow.follower import FollowConfig, Follower
from kraftlake.follow.observer import ObserverConfig
from kraftlake.follow.security import SecurityError, parse_security
from kraftlake.follow.status import Status, write_status
from kraftlake.follow.tail import TailConfig
from kraftlake.records.errors import NotAMetadataLogError
from kraftlake.records.files import metadata_log_dir
from kraftlake.settings import DEFAULT_STALL_SECONDS
from kraftlake.settings.errors import SettingsError
from kraftlake.settings.fleet import Fleet, FleetCluster, file_stamp, load_fleet

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SupervisorConfig:
    publisher: PublisherConfig  # the Kafka the topics go to; each cluster's topic replaces `topic`
    status_dir: Path | None = None
    log_interval_s: float = 10.0
    reload_s: float = 2.0
    backoff_s: float = 1.0  # the first wait before a failed cluster's follower starts again
    max_backoff_s: float = 60.0
    poll_interval_s: float = 0.5  # a `metadata_dir` cluster: the directory tail's wait when nothing was new


def follow_config(cluster: FleetCluster, config: SupervisorConfig) -> FollowConfig:
    """The `kraftlake follow` (or `publish --follow`) settings of one cluster; a bad setting raises
    SettingsError naming the fleet file and the cluster's key."""
    settings = cluster.settings
    source: ObserverConfig | TailConfig
    if settings.metadata_dir is not None:
        try:
            source = TailConfig(metadata_log_dir(settings.metadata_dir), config.poll_interval_s)
        except NotAMetadataLogError as error:
            raise SettingsError(cluster.path, cluster.key("metadata_dir"), str(error)) from None
    else:
        try:
            endpoints = tuple(parse_endpoints(",".join(settings.bootstrap_controllers)))
        except FollowError as error:
            raise SettingsError(cluster.path, cluster.key("bootstrap_controllers"), str(error)) from None
        try:
            security = parse_security(cluster.client_properties())
        except SecurityError as error:
            raise SettingsError(cluster.path, cluster.key("properties"), str(error)) from None
        source = ObserverConfig(endpoints, cluster_id=settings.cluster_id,
                                connect_timeout_s=settings.connect_timeout_seconds, security=security)
    status = None if config.status_dir is None else config.status_dir / f"{cluster.name}.json"
    publisher = replace(config.publisher, topic=cluster.topic)
    if cluster.shared_partitions is not None:  # the fleet's shared topic: keyed by cluster, its own partition
        publisher = replace(publisher, cluster=cluster.name, partitions=cluster.shared_partitions)
    return FollowConfig(source, publisher, config.log_interval_s, status)


class ClusterFollower:
    """One cluster's follower thread, started again after each failure until `stop()`."""

    def __init__(self, cluster: FleetCluster, config: SupervisorConfig) -> None:
        self.cluster = cluster
        self.config = config
        self.stopping = threading.Event()
        self.state = "STARTING"
        self.failure: str | None = None
        self.failures = 0
        self.follower: Follower | None = None
        self._thread = threading.Thread(target=self._run, name=cluster.name, daemon=True)

    def start(self) -> ClusterFollower:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the thread to end (it finishes its current fetch: at most a request timeout)."""
        self.stopping.set()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)

    @property
    def status_file(self) -> Path | None:
        return None if self.config.status_dir is None else self.config.status_dir / f"{self.cluster.name}.json"

    def _run(self) -> None:
        backoff = self.config.backoff_s
        while not self.stopping.is_set():
            try:
                self.follower = Follower(follow_config(self.cluster, self.config), self.stopping)
                self.state = "FOLLOWING"
                self.follower.run()
                return
            except Exception as error:  # any failure stays this cluster's: the others never see it
                self.failures += 1
                self.state, self.failure = "FAILED", one_line(error)
                log.error("cluster %s: %s; following again in %.0f s", self.cluster.name, self.failure, backoff)
                self._write_failed(backoff)
                self.stopping.wait(backoff)
                backoff = min(backoff * 2, self.config.max_backoff_s)

    def holds(self) -> str:
        """Where its topic stands (the fleet's stop lines, one per cluster)."""
        if self.follower is None:
            return f"topic {self.cluster.topic}: no follower ran"
        return self.follower.holds()

    def _write_failed(self, retry_s: float) -> None:
        if self.status_file is None:
            return
        published = self.follower.published_offset if self.follower is not None else -1
        now = time.time()
        write_status(self.status_file, Status(
            f"following again in {retry_s:.0f} s", published, published + 1, -1, now, now, DEFAULT_STALL_SECONDS, now,
            os.getpid(), failed=f"({self.failures}x) {self.failure}"))


def one_line(error: Exception) -> str:
    """A follower's failure as one line (librdkafka's errors carry their text in `args[0].str()`)."""
    first = error.args[0] if error.args else None
    text = str(first.str()) if first is not None and hasattr(first, "str") else str(error)
    return text.splitlines()[0] if text else type(error).__name__


class FleetSupervisor:
    """The followers of every cluster in the fleet file, kept in step with it (see the module docstring)."""

    def __init__(self, path: Path, config: SupervisorConfig, stop: threading.Event | None = None) -> None:
        self.path = path
        self.config = config
        self.stop = stop or threading.Event()
        self.look_now = threading.Event()  # set by SIGHUP
        self.followers: dict[str, ClusterFollower] = {}
        self._watched: list[Path] = [path]
        self._seen: list[tuple[int, int]] = []

    def run(self) -> None:
        """Load the file (a bad one at start raises SettingsError), follow, reload, until `stop` is set."""
        if self.config.status_dir is not None:
            self.config.status_dir.mkdir(parents=True, exist_ok=True)
        self._apply(load_fleet(self.path))
        try:
            while not self.stop.is_set():
                self.look_now.wait(self.config.reload_s)
                if self.stop.is_set():
                    break
                forced = self.look_now.is_set()
                self.look_now.clear()
                stamps = self._stamps()
                if forced or stamps != self._seen:
                    self._seen = stamps
                    self.reload()
        finally:
            for follower in self.followers.values():
                follower.stop()
            for follower in self.followers.values():
                follower.join(30)

    def statuses(self) -> list[tuple[str, Status]]:
        """Each running cluster's status, for the metrics (called from another thread: a copy of the dict)."""
        running = [(name, cluster.follower) for name, cluster in list(self.followers.items())]
        return [(name, status) for name, follower in running
                if follower is not None and (status := follower.status()) is not None]

    def _stamps(self) -> list[tuple[int, int]]:
        return [file_stamp(path) for path in self._watched]

    def reload(self) -> None:
        try:
            fleet = load_fleet(self.path)
        except SettingsError as error:
            log.error("fleet: %s; the %d clusters running go on as they were", error, len(self.followers))
            return
        self._apply(fleet)

    def _apply(self, fleet: Fleet) -> None:
        self._watched = fleet.watched_files()
        self._seen = self._stamps()
        for name in [name for name in self.followers if name not in fleet.clusters]:
            log.info("fleet: cluster %s removed from %s: stopping its follower", name, self.path)
            self._remove(name)
        for name, cluster in fleet.clusters.items():
            running = self.followers.get(name)
            if running is not None and running.cluster == cluster:
                continue
            if running is not None:
                log.info("fleet: cluster %s changed in %s: restarting its follower", name, self.path)
                self._stop(running)  # replaced below, never missing from `followers` (a status reader sees it)
            else:
                log.info("fleet: following cluster %s into topic %s", name, cluster.topic)
            self.followers[name] = ClusterFollower(cluster, self.config).start()

    def _remove(self, name: str) -> None:
        self._stop(self.followers[name])
        del self.followers[name]

    @staticmethod
    def _stop(follower: ClusterFollower) -> None:
        follower.stop()
        follower.join(15)
        if follower.status_file is not None:
            follower.status_file.unlink(missing_ok=True)
