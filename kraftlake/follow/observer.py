"""A KRaft observer: fetches the metadata log from the quorum's leader as Kafka's brokers do, and hands on only
what is committed.

Each `poll()` sends one Fetch (replica id -1: the leader serves it and does not count it in the quorum) for
the metadata partition at the next offset, with the epoch of the last batch fetched, and returns what became
committed:
- batches come uncommitted; they wait here until the high watermark passes them (offset < high watermark);
- a diverging epoch drops the waiting batches from the divergence on (what was handed on is committed and
  cannot diverge: if it does, the log is another one and following stops);
- a snapshot id (the fetch offset is below the leader's log start, or 0 while a snapshot exists) is fetched
  with FetchSnapshot in chunks and handed on whole, the log then continuing from its end offset;
- NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH: the response names the current leader
  and epoch (and, Fetch 16+, its endpoint on the listener asked), which the next fetch goes to; a leader that
  is gone, not known yet, or whose endpoint the answering controller does not know for this listener sends the
  observer on to the next endpoint of the bootstrap list. (A controller restarted after a failover learns the
  new leader from a Fetch response on the listener the nodes use among themselves, so on any other listener it
  names the leader without an endpoint; taking the controller that answered for the leader had the observer
  ask it forever, NOT_LEADER_OR_FOLLOWER every 200 ms.)
- STALLED (`kraftlake.follow.status.stall_reason`: no Fetch answered with the log, or the offset not moving
  while the high watermark is ahead, for `stall_after_s`): the connection is dropped and the next bootstrap
  endpoint asked, once per period. No request waits longer than half that period for its answer, so a
  connection that went silent (a peer gone without a FIN, a firewall that dropped its state) is left in time.
  Once the rule no longer holds (answers with the log are back), one "following again" line says so.
Errors that retrying cannot fix (wrong cluster id, not authorized, a listener that is not a controller's,
a log that diverged below what was handed on) raise FollowError naming the endpoint and the offset.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from kraftlake.follow.client import ControllerConnection, Endpoint, FollowError, Unreachable, error_name
from kraftlake.follow.security import PLAINTEXT, Security
from kraftlake.follow.status import following_again, offsets_behind, stall_reason
from kraftlake.records import rpc
from kraftlake.records.batch import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, read_header
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.files import BOOTSTRAP_ID, SnapshotId
from kraftlake.settings import DEFAULT_STALL_SECONDS

log = logging.getLogger(__name__)

METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.METADATA_TOPIC_ID
METADATA_TOPIC = "__cluster_metadata"
_LEADER_ERRORS = {6, 8, 74, 75}  # NOT_LEADER_OR_FOLLOWER, BROKER_NOT_AVAILABLE, FENCED/UNKNOWN_LEADER_EPOCH
_FATAL_TOP_LEVEL = {29, 31, 35, 42, 100, 103, 104}  # authorization, versions, bad request, topic id, cluster id


@dataclass(frozen=True)
class ObserverConfig:
    bootstrap: tuple[Endpoint, ...]
    cluster_id: str | None = None  # sent when known: a leader of another cluster refuses the fetch
    max_wait_ms: int = 500  # how long the leader may hold a fetch that has nothing new
    max_bytes: int = 8 << 20  # per Fetch / FetchSnapshot response
    request_timeout_s: float = 10.0  # at most half of `stall_after_s` (see `request_deadline_s`)
    retry_backoff_s: float = 0.2
    retry_backoff_max_s: float = 5.0
    connect_timeout_s: float = 30.0  # the first controller must answer within this; later outages are waited out
    security: Security = PLAINTEXT  # the controller listener's security.protocol, SASL and SSL settings
    stall_after_s: float = DEFAULT_STALL_SECONDS  # the STALLED threshold (module docstring)

    @property
    def request_deadline_s(self) -> float:
        """How long a request may go unanswered (beyond the fetch's own wait): a silent connection is left
        well within one stall period."""
        return min(self.request_timeout_s, self.stall_after_s / 2)


@dataclass(frozen=True)
class CommittedBatch:
    raw: bytes  # the RecordBatch v2 bytes exactly as the leader's log holds them
    header: BatchHeader


@dataclass(frozen=True)
class FetchedSnapshot:
    snapshot_id: SnapshotId
    batches: tuple[CommittedBatch, ...]  # the snapshot file's batches, in file order


@dataclass
class Position:
    """Where following stands, for the periodic log line, the status file and the stall rule."""

    next_offset: int  # the first offset not handed on
    high_watermark: int = -1
    leader_id: int = -1
    epoch: int = 0
    endpoint: Endpoint | None = None
    advanced_at: float = field(default_factory=time.time)  # when `next_offset` last moved
    answered_at: float = field(default_factory=time.time)  # when a leader last answered a Fetch with the log
    last_error: str | None = None  # why the last poll got no log, until one does

    def describe(self) -> str:
        behind = offsets_behind(self)
        lag = "?" if behind is None else behind
        leader = f"{self.leader_id} (epoch {self.epoch}) at {self.endpoint}" if self.leader_id >= 0 else "unknown"
        error = f"; last error: {self.last_error}" if self.last_error else ""
        return f"offset {self.next_offset}, high watermark {self.high_watermark}, lag {lag}, leader {leader}{error}"

    def advanced(self, next_offset: int) -> None:
        self.next_offset = next_offset
        self.advanced_at = time.time()


class Observer:
    def __init__(self, config: ObserverConfig, next_offset: int, last_epoch: int) -> None:
        self.config = config
        # the leader's epoch is at least that of the last batch fetched (a lower one is an invalid request)
        self.position = Position(next_offset, epoch=last_epoch)
        self._last_epoch = last_epoch  # epoch of the batch before `next_offset` (0 at the log's start)
        self._pending: list[CommittedBatch] = []  # fetched past the high watermark, not handed on yet
        self._connection: ControllerConnection | None = None
        self._leader_endpoint: Endpoint | None = None
        self._bootstrap_turn = 0
        self._backoff_s = config.retry_backoff_s
        self._ever_connected = False
        self._started = time.monotonic()
        self._watched_since = time.time()  # a stall reconnects once per period: the last reconnect or the start
        self._stalled_at: float | None = None  # when the STALLED line was logged, until following again
        self.leader_changes = 0
        self.reconnects = 0  # connections opened after the first

    def close(self) -> None:
        self._disconnect()

    # -- one round ------------------------------------------------------------------------------------------

    def poll(self) -> list[CommittedBatch | FetchedSnapshot]:
        """One Fetch (and FetchSnapshot when answered with a snapshot id): what became committed, in order."""
        try:
            connection = self._connect()
            response = connection.call(rpc.FETCH, self._fetch_request(), self.config.max_wait_ms / 1000)
            handed = self._handle(connection, response)
        except Unreachable as error:
            self._unreachable(error)
            handed = []
        else:
            self._backoff_s = self.config.retry_backoff_s
        self._watch()
        return handed

    def _watch(self) -> None:
        """Reconnect, to the next bootstrap endpoint, when following is STALLED (at most once a period); say so
        once it no longer is."""
        now = time.time()
        reason = stall_reason(self.position, self.config.stall_after_s, now)
        if reason is None and self._stalled_at is not None:
            log.info("follow: %s", following_again(now - self._stalled_at, self.position.describe()))
            self._stalled_at = None
        if reason is None or now - self._watched_since <= self.config.stall_after_s:
            return
        self._watched_since = now
        if self._stalled_at is None:
            self._stalled_at = now
        log.warning("follow: STALLED: %s (%s); reconnecting", reason, self.position.describe())
        self._disconnect()
        self._leader_endpoint = None
        self._bootstrap_turn += 1

    def _fetch_request(self) -> Any:
        partition = rpc.FetchPartition(
            partition=0, current_leader_epoch=self.position.epoch, fetch_offset=self._fetch_offset(),
            last_fetched_epoch=self._fetch_epoch(), partition_max_bytes=self.config.max_bytes,
        )
        topic = rpc.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(partition,))
        return rpc.FetchRequest(
            cluster_id=self.config.cluster_id, max_wait_ms=self.config.max_wait_ms, min_bytes=1,
            max_bytes=self.config.max_bytes, topics=(topic,),
        )

    def _fetch_offset(self) -> int:
        return self._pending[-1].header.last_offset + 1 if self._pending else self.position.next_offset

    def _fetch_epoch(self) -> int:
        return self._pending[-1].header.partition_leader_epoch if self._pending else self._last_epoch

    def _handle(self, connection: ControllerConnection, response: Any) -> list[CommittedBatch | FetchedSnapshot]:
        where = f"{connection.endpoint}, offset {self._fetch_offset()}"
        top = response.error_code
        if top:
            self._top_level_error(top, where)
            return []
        partitions = [p for topic in response.responses for p in topic.partitions]
        if len(partitions) != 1:
            raise FollowError(f"{where}: Fetch answered with {len(partitions)} partitions, not the metadata partition")
        partition = partitions[0]
        served = partition.error_code == 0
        changed = self._follow_leader(partition.current_leader, response.node_endpoints, connection.endpoint, served)
        if partition.error_code in _LEADER_ERRORS:
            self.position.last_error = f"{where}: {error_name(partition.error_code)}"
            log.info("follow: %s", self.position.last_error)
            if self._leader_endpoint is None:
                # nobody known to lead, or not where to reach it on this listener: ask the next controller
                self._disconnect()
                self._bootstrap_turn += 1
            if not changed:
                self._pause()  # an election under way: ask again in a moment
            return []
        if partition.error_code:
            raise FollowError(f"{where}: Fetch failed with {error_name(partition.error_code)}")
        self.position.answered_at = time.time()  # the leader answered with the log (records, divergence, snapshot)
        self.position.last_error = None
        if partition.diverging_epoch.end_offset >= 0:
            self._truncate(partition.diverging_epoch, where)
            return []
        if partition.snapshot_id.end_offset >= 0:
            snapshot = self._fetch_snapshot(connection, SnapshotId(partition.snapshot_id.end_offset,
                                                                   partition.snapshot_id.epoch))
            return [] if snapshot is None else [snapshot]
        self._append(partition.records or b"", where)
        self.position.high_watermark = partition.high_watermark
        return self._committed()

    def _top_level_error(self, code: int, where: str, api: str = "Fetch") -> None:
        if code in _FATAL_TOP_LEVEL:
            hint = {104: " (--cluster-id is not this cluster's)", 31: " (the principal needs CLUSTER_ACTION)"}
            raise FollowError(f"{where}: {api} refused with {error_name(code)}{hint.get(code, '')}")
        self.position.last_error = f"{where}: {api} failed with {error_name(code)}"
        log.info("follow: %s; retrying", self.position.last_error)
        self._disconnect()
        self._pause()

    # -- the log --------------------------------------------------------------------------------------------

    def _append(self, records: bytes, where: str) -> None:
        """The whole batches of a fetched record set (a set cut by the size limit may end inside one)."""
        pos = 0
        expected = self._fetch_offset()
        while len(records) - pos >= HEADER_SIZE:
            size = LOG_OVERHEAD + int.from_bytes(records[pos + 8 : pos + 12], "big", signed=True)
            if pos + size > len(records):
                break
            try:
                header = read_header(records, pos, where)
            except RecordFormatError as error:
                raise FollowError(str(error)) from None
            if header.base_offset != expected:
                raise FollowError(f"{where}: the leader sent offset {header.base_offset}, not {expected}")
            self._pending.append(CommittedBatch(bytes(records[pos : pos + size]), header._replace(position=0)))
            expected = header.last_offset + 1
            pos += size

    def _committed(self) -> list[CommittedBatch | FetchedSnapshot]:
        """Hand on the waiting batches the high watermark has passed."""
        count = 0
        while count < len(self._pending) and self._pending[count].header.last_offset < self.position.high_watermark:
            count += 1
        committed, self._pending = self._pending[:count], self._pending[count:]
        if committed:
            self.position.advanced(committed[-1].header.last_offset + 1)
            self._last_epoch = committed[-1].header.partition_leader_epoch
        handed: list[CommittedBatch | FetchedSnapshot] = [*committed]
        return handed

    def _truncate(self, diverging: Any, where: str) -> None:
        """Drop the waiting batches from the leader's end offset of the diverging epoch on."""
        end_offset = diverging.end_offset
        if end_offset < self.position.next_offset:
            raise FollowError(
                f"{where}: the leader's log diverges at offset {end_offset} (epoch {diverging.epoch}), "
                f"below offset {self.position.next_offset} already published: the topic holds another log"
            )
        kept = [b for b in self._pending if b.header.last_offset < end_offset]
        log.info("follow: %s: diverging epoch, %d fetched batches dropped", where, len(self._pending) - len(kept))
        self._pending = kept

    # -- snapshots ------------------------------------------------------------------------------------------

    def _fetch_snapshot(self, connection: ControllerConnection, snapshot: SnapshotId) -> FetchedSnapshot | None:
        """The whole snapshot in chunks; None when the leader no longer has it (the next fetch says which)."""
        if snapshot == BOOTSTRAP_ID:
            raise FollowError(f"{connection.endpoint}: the leader offered the bootstrap snapshot, which is not served")
        data = bytearray()
        while True:
            request = rpc.FetchSnapshotRequest(
                cluster_id=self.config.cluster_id, max_bytes=self.config.max_bytes,
                topics=(rpc.SnapshotTopicRequest(METADATA_TOPIC, (rpc.SnapshotPartitionRequest(
                    partition=0, current_leader_epoch=self.position.epoch,
                    snapshot_id=rpc.RequestedSnapshotId(snapshot.end_offset, snapshot.epoch), position=len(data),
                ),)),),
            )
            response = connection.call(rpc.FETCH_SNAPSHOT, request)
            where = f"{connection.endpoint}, snapshot {snapshot.file_name()} at byte {len(data)}"
            if response.error_code:
                self._top_level_error(response.error_code, where, "FetchSnapshot")
                return None
            part = response.topics[0].partitions[0]
            if part.error_code:
                log.info("follow: %s: FetchSnapshot failed with %s", where, error_name(part.error_code))
                if part.error_code in (98, 99) or part.error_code in _LEADER_ERRORS:
                    return None
                raise FollowError(f"{where}: FetchSnapshot failed with {error_name(part.error_code)}")
            if part.position != len(data) or (not part.unaligned_records and len(data) < part.size):
                got = len(part.unaligned_records)
                raise FollowError(f"{where}: answered position {part.position} with {got} of {part.size} bytes")
            data += part.unaligned_records
            if len(data) >= part.size:
                break
        return self._snapshot_loaded(snapshot, bytes(data), connection.endpoint)

    def _snapshot_loaded(self, snapshot: SnapshotId, data: bytes, endpoint: Endpoint) -> FetchedSnapshot:
        batches = []
        pos = 0
        source = f"{endpoint}, snapshot {snapshot.file_name()}"
        try:
            while pos < len(data):
                header = read_header(data, pos, source)
                batches.append(CommittedBatch(data[pos : pos + header.size_in_bytes], header._replace(position=0)))
                pos += header.size_in_bytes
        except RecordFormatError as error:
            raise FollowError(str(error)) from None
        self._pending.clear()
        self.position.advanced(snapshot.end_offset)
        self._last_epoch = snapshot.epoch
        log.info("follow: %s: fetched, %d bytes in %d batches", source, len(data), len(batches))
        return FetchedSnapshot(snapshot, tuple(batches))

    # -- leaders and connections ----------------------------------------------------------------------------

    def _follow_leader(self, leader: Any, endpoints: tuple[Any, ...], asked: Endpoint, served: bool) -> bool:
        """Take a newer leader or epoch from a response, and the leader's endpoint once one is known; True when
        either changed (the next fetch may go at once).

        The endpoint is the one the response names for the leader (Fetch 16+: on the listener asked), or the
        endpoint asked when it served the fetch (only the leader does; Fetch below 16 names no endpoints).
        Never the endpoint asked when it refused: that is a controller that knows who leads but not where."""
        leader_id, epoch = leader.leader_id, leader.leader_epoch
        newer = epoch > self.position.epoch or (
            epoch == self.position.epoch and leader_id not in (-1, self.position.leader_id))
        named = {e.node_id: Endpoint(e.host, e.port) for e in endpoints}.get(leader_id)
        address = named or (asked if served else None)
        if not newer and (leader_id != self.position.leader_id or address in (None, self._leader_endpoint)):
            return False  # nothing new: an older answer, or the same leader at the same (or no) address
        self.position.leader_id, self.position.epoch = leader_id, epoch
        self._leader_endpoint = self.position.endpoint = address
        if newer:
            self.leader_changes += 1
            log.info("follow: leader change: %s", self.position.describe())
        if self._connection is not None and self._connection.endpoint != address:
            self._disconnect()
        return True

    def _connect(self) -> ControllerConnection:
        if self._connection is not None:
            return self._connection
        endpoint = self._leader_endpoint or self.config.bootstrap[self._bootstrap_turn % len(self.config.bootstrap)]
        self._connection = ControllerConnection(endpoint, self.config.request_deadline_s, self.config.security)
        if self.position.last_error is not None:
            log.info("follow: reconnected to %s; offset %d next", endpoint, self.position.next_offset)
        self.reconnects += self._ever_connected
        self._ever_connected = True
        return self._connection

    def _unreachable(self, error: Unreachable) -> None:
        """A controller that does not answer: try the next bootstrap endpoint after a pause (the leader may be
        the one that went away); before any controller ever answered, give up after `connect_timeout_s`."""
        self._disconnect()
        if self._leader_endpoint is None:
            self._bootstrap_turn += 1
        self._leader_endpoint = None
        if not self._ever_connected and time.monotonic() - self._started > self.config.connect_timeout_s:
            endpoints = ",".join(map(str, self.config.bootstrap))
            raise FollowError(f"no controller answered at {endpoints} within {self.config.connect_timeout_s:.0f} s "
                              f"(last: {error}); offset {self.position.next_offset} was next") from None
        self.position.last_error = str(error)
        log.warning("follow: %s; offset %d next, reconnecting in %.1f s", error, self.position.next_offset,
                    self._backoff_s)
        self._pause()

    def _pause(self) -> None:
        time.sleep(self._backoff_s)
        self._backoff_s = min(self._backoff_s * 2, self.config.retry_backoff_max_s)

    def _disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
