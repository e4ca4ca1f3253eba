"""The quorum controller: one thread of control on the Raft leader turns requests into records.

Every request runs on the event thread: it computes records against the working state (committed image
plus this controller's own uncommitted records), replays them into that state, appends them to the log, and
its future completes only once the log reports them committed. Standbys replay committed batches only.
Losing leadership throws the uncommitted part of the working state away and fails pending requests with
NotControllerError naming the new leader. An operation larger than one batch is wrapped in a metadata
transaction; if it fails between batches an AbortTransactionRecord is written.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from kraftlake import failpoints
from kraftlake.controller import cluster, configs, directories, features, quotas, reassignment, replication, security
from kraftlake.controller.clock import Clock, SystemClock
from kraftlake.controller.config import ControllerConfig
from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.errors import (
    ControllerError,
    InternalControllerError,
    NotControllerError,
    RequestTooLargeError,
)
from kraftlake.controller.heartbeats import HeartbeatManager
from kraftlake.controller.metadata_log import LeaderAndEpoch, MetadataLog
from kraftlake.controller.partition_change import Election
from kraftlake.controller.registration import ControllerRegistrationRequest, register_controller
from kraftlake.controller.versions import LATEST_METADATA_VERSION, MV_3_6_IV1, MV_3_7_IV0, versions_for
from kraftlake.controller.working_state import ControllerState
from kraftlake.raft.core import NotLeaderError
from kraftlake.records import RecordBatch, SnapshotId
from kraftlake.records import metadata_types as mt
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.loader import BatchLoader
from kraftlake.replay.writer import image_records

T = TypeVar("T")
Operation = Callable[[WriteContext], ControllerResult[Any]]
RegistrationSender = Callable[[ControllerRegistrationRequest], None]
log = logging.getLogger(__name__)

_BEGIN, _END, _ABORT = mt.BeginTransactionRecord, mt.EndTransactionRecord, mt.AbortTransactionRecord
_IDLE_WAKEUP_S = 0.05
_REGISTRATION_RETRY_MS = 1000
# Armed (see the failpoints package), the controller dies half-way through writing a metadata transaction.
MID_TRANSACTION_FAILPOINT = "controller.mid_transaction"


class QuorumController:
    def __init__(
        self,
        log_: MetadataLog,
        config: ControllerConfig | None = None,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        controller_addresses: Mapping[int, str] | None = None,
        background_tasks: bool = True,
        registration: ControllerRegistrationRequest | None = None,
        registration_sender: RegistrationSender | None = None,
    ) -> None:
        self.config = config or ControllerConfig()
        self.node_id = self.config.node_id
        self._log = log_
        self._clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._addresses = dict(controller_addresses or {})
        self._background_tasks = background_tasks
        self._events: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"quorum-controller-{self.node_id}-event-handler",
                                        daemon=True)
        self._loader = BatchLoader()
        self._committed_offset = -1
        self._open_transaction: list[Any] | None = None  # committed records of a transaction still open
        self._leader = LeaderAndEpoch(None, -1)
        self._claim_epoch = -1
        self._activation: tuple[int, int] | None = None  # (epoch, offset) to reach before claiming
        self._state: ControllerState | None = None  # only on the active controller
        self._pending: list[tuple[int, Any]] = []  # (offset, record) appended, not committed yet
        self._purgatory: deque[tuple[int, Future[Any], Any]] = deque()
        self._next_write_offset = 0
        self._last_write_ms = 0
        self._heartbeats = HeartbeatManager(self.config.session_timeout_ms)
        self._next_task_ms: dict[str, int] = {}
        self._registration = registration
        self._registration_sender = registration_sender  # how a standby reaches the active controller
        self._registration_sending = threading.Event()
        self._next_registration_ms = 0
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> QuorumController:
        self._thread.start()
        self._log.register(self)
        return self

    def close(self) -> None:
        self._closed = True
        self._events.put(None)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
        self._fail_pending(NotControllerError(None, detail=" (it is shutting down)"))

    # -- listener callbacks: re-queued on the event thread --------------------------------------------------

    def handle_commit(self, batches: Sequence[RecordBatch]) -> None:
        self._events.put(lambda: self._on_commit(batches))

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None:
        self._events.put(lambda: self._on_snapshot(snapshot_id, batches))

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self._events.put(lambda: self._on_leader_change(leader))

    # -- reads (committed state only) -----------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self._claim_epoch != -1

    @property
    def leader(self) -> LeaderAndEpoch:
        return self._leader

    @property
    def committed_image(self) -> MetadataImage:
        """The image of everything committed and visible (an open transaction is not)."""
        return self._loader.image

    @property
    def committed_offset(self) -> int:
        return self._committed_offset

    def leader_address(self, leader_id: int | None) -> str | None:
        return None if leader_id is None else self._addresses.get(leader_id)

    def not_controller_error(self) -> NotControllerError:
        leader_id = self._leader.leader_id
        if leader_id == self.node_id:  # elected, not yet claimed: point the caller back here
            return NotControllerError(leader_id, self.leader_address(leader_id), detail=" yet (it is activating)")
        return NotControllerError(leader_id, self.leader_address(leader_id))

    def snapshot_records(self) -> tuple[int, list[tuple[Any, int]], int]:
        """(end offset, (record, version) pairs, last contained log time in ms) of a snapshot of the committed
        image: the quorum's snapshot hook. The end offset is a batch boundary outside any transaction."""
        image = self._loader.image
        return image.provenance.offset + 1, image_records(image).records, image.provenance.log_time_ms

    # -- the event loop -------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                event = self._events.get(timeout=_IDLE_WAKEUP_S)
            except queue.Empty:
                event = None
                if self._closed:
                    return
            if event is None and self._closed:
                return
            try:
                if event is not None:
                    event()
                if self._background_tasks and self.is_active:
                    self._run_due_tasks()
                self._maybe_register()
            except Exception:
                log.exception("controller %d: event failed; giving up leadership", self.node_id)
                self._renounce()

    def _submit(self, name: str, operation: Operation) -> Future[Any]:
        future: Future[Any] = Future()
        self._events.put(lambda: self._write(name, operation, future))
        return future

    def _context(self) -> WriteContext:
        assert self._state is not None
        return WriteContext(
            state=self._state, config=self.config, now_ms=self._clock.now_ms(),
            next_write_offset=self._next_write_offset, committed_offset=self._committed_offset,
            heartbeats=self._heartbeats, rng=self._rng,
        )

    def _write(self, name: str, operation: Operation, future: Future[Any]) -> None:
        if not future.set_running_or_notify_cancel():
            return
        if not self.is_active:
            future.set_exception(self.not_controller_error())
            return
        try:
            result = operation(self._context())
        except ControllerError as error:
            future.set_exception(error)
            return
        except Exception as error:  # a bug in an operation: nothing was written, the state is intact
            log.exception("controller %d: %s failed", self.node_id, name)
            future.set_exception(InternalControllerError(f"{name} failed: {error!r}"))
            return
        if not result.records:
            self._complete_after_pending(future, result.response)
            return
        try:
            last_offset = self._append(name, result.records)
        except ControllerError as error:
            future.set_exception(error)
            return
        except Exception as error:
            future.set_exception(InternalControllerError(f"{name} failed while appending: {error!r}"))
            raise  # the working state may be half-updated: the event loop gives up leadership
        self._purgatory.append((last_offset, future, result.response))

    def _complete_after_pending(self, future: Future[Any], response: Any) -> None:
        """A request that wrote nothing still waits for every write before it: reads stay linearizable."""
        last_written = self._next_write_offset - 1
        if self.is_active and last_written > self._committed_offset:
            self._purgatory.append((last_written, future, response))
        else:
            future.set_result(response)

    def _append(self, name: str, records: list[Any]) -> int:
        """Replay and append `records` as one batch, or as a transaction of several; returns the last offset."""
        assert self._state is not None
        metadata_version = self._state.metadata_version or LATEST_METADATA_VERSION
        cap = self.config.max_records_per_batch
        if len(records) > cap:
            if metadata_version < MV_3_6_IV1:
                raise RequestTooLargeError(
                    f"{name} needs {len(records)} records, more than one batch holds ({cap}), and metadata.version "
                    f"{metadata_version} has no metadata transactions"
                )
            records = [_BEGIN(name=name), *records, _END()]
        chunks = [records[start:start + cap] for start in range(0, len(records), cap)]
        for index, chunk in enumerate(chunks):
            try:
                for message in chunk:
                    if type(message) not in (_BEGIN, _END, _ABORT):
                        self._state.replay(message)
            except ReplayError as error:
                log.error("controller %d: %s produced records that do not replay: %s", self.node_id, name, error)
                if index > 0:
                    self._append_chunk([_ABORT(reason=f"{name} failed: its records did not replay")])
                self._rebuild_state()
                raise InternalControllerError(f"{name} failed and wrote nothing: {error}") from None
            self._append_chunk(chunk)
            if index == 0 and len(chunks) > 1 and failpoints.armed(MID_TRANSACTION_FAILPOINT):
                time.sleep(1.0)  # the quorum commits the first part; the rest is never written
                failpoints.failpoint(MID_TRANSACTION_FAILPOINT)
        return self._next_write_offset - 1

    def _append_chunk(self, chunk: list[Any]) -> None:
        metadata_version = (self._state.metadata_version if self._state else None) or LATEST_METADATA_VERSION
        now = self._clock.now_ms()
        try:
            base = self._log.append(self._claim_epoch, chunk, versions_for(chunk, metadata_version), now)
        except NotLeaderError as error:
            self._on_leader_change(LeaderAndEpoch(error.leader_id, error.epoch))
            raise self.not_controller_error() from None
        # Past the expected offset is fine: the Raft layer writes control batches of its own in between
        # (VotersRecord on a voter change, KIP-853). Before it, a write of ours was lost.
        if base < self._next_write_offset:
            log.error("controller %d: the log put a batch at %d, expected %d or later", self.node_id, base,
                      self._next_write_offset)
            self._renounce()
            raise self.not_controller_error()
        self._pending.extend((base + i, message) for i, message in enumerate(chunk))
        self._next_write_offset = base + len(chunk)
        self._last_write_ms = now

    # -- committed batches, snapshots, leadership -----------------------------------------------------------

    def _on_commit(self, batches: Sequence[RecordBatch]) -> None:
        for batch in batches:
            self._loader.load_batch(batch)
            if not batch.is_control:
                self._track_transaction(batch)
            self._committed_offset = batch.last_offset
        self._loader.flush()
        if self._pending:
            self._pending = [(offset, m) for offset, m in self._pending if offset > self._committed_offset]
            if not self._pending and self._open_transaction is None and self._state is not None:
                self._state.rebase(self._loader.image)  # nothing in flight: the delta can start afresh
        while self._purgatory and self._purgatory[0][0] <= self._committed_offset:
            _, future, response = self._purgatory.popleft()
            future.set_result(response)
        if self._activation is not None and self._committed_offset >= self._activation[1]:
            epoch, _ = self._activation
            self._activation = None
            self._claim(epoch)

    def _track_transaction(self, batch: RecordBatch) -> None:
        for record in batch.records:
            kind = type(record.message)
            if kind is _BEGIN:
                self._open_transaction = []
            elif kind in (_END, _ABORT):
                self._open_transaction = None
            elif self._open_transaction is not None:
                self._open_transaction.append(record.message)

    def _on_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None:
        if self.is_active:
            log.error("controller %d: asked to load a snapshot while active", self.node_id)
            self._renounce()
        self._loader.load_snapshot(batches, snapshot_id)
        self._open_transaction = None
        self._committed_offset = snapshot_id.end_offset - 1

    def _on_leader_change(self, leader: LeaderAndEpoch) -> None:
        if leader.epoch < self._leader.epoch:
            return
        self._leader = leader
        if self.is_active and (leader.leader_id != self.node_id or leader.epoch != self._claim_epoch):
            self._renounce()
        self._activation = None
        if leader.leader_id == self.node_id and not self.is_active:
            # The log may hold batches of earlier epochs not committed yet: they commit with this epoch's
            # first batch. Claim once they are delivered, so the working state starts from all of them.
            end = self._log.end_offset()
            if self._committed_offset >= end - 1:
                self._claim(leader.epoch)
            else:
                self._activation = (leader.epoch, end - 1)

    def _claim(self, epoch: int) -> None:
        """Become active: start writing at the log end, then bootstrap an empty log or abort a transaction
        a crashed predecessor left open."""
        self._claim_epoch = epoch
        self._next_write_offset = self._log.end_offset()
        self._pending = []
        self._heartbeats = HeartbeatManager(self.config.session_timeout_ms)
        self._next_task_ms = {}
        self._last_write_ms = self._clock.now_ms()
        self._rebuild_state()
        log.info("controller %d: active in epoch %d from offset %d", self.node_id, epoch, self._next_write_offset)
        try:
            if not self._loader.has_seen_record and self._loader.image.metadata_is_empty():
                self._append("bootstrap", features.bootstrap_records(
                    self.config.bootstrap_metadata_version, self.config.bootstrap_feature_levels
                ))
            elif self._open_transaction is not None:
                self._append("activation", [_ABORT(reason="the controller that opened it failed over")])
        except ControllerError as error:
            log.error("controller %d: activation failed: %s", self.node_id, error)

    def _renounce(self) -> None:
        if self.is_active:
            log.info("controller %d: no longer active (epoch %d)", self.node_id, self._claim_epoch)
        self._claim_epoch = -1
        self._state = None
        self._pending = []
        self._fail_pending(self.not_controller_error())

    def _fail_pending(self, error: ControllerError) -> None:
        while self._purgatory:
            _, future, _ = self._purgatory.popleft()
            if not future.done():
                future.set_exception(error)

    def _rebuild_state(self) -> None:
        """Committed image + the committed part of an open transaction + uncommitted records, with
        transactions folded as the loader folds them (aborted records never count)."""
        state = ControllerState(self._loader.image)
        open_records: list[Any] | None = list(self._open_transaction) if self._open_transaction is not None else None
        for _, message in self._pending:
            kind = type(message)
            if kind is _BEGIN:
                open_records = []
            elif kind is _END:
                for held in open_records or ():
                    state.replay(held)
                open_records = None
            elif kind is _ABORT:
                open_records = None
            elif open_records is not None:
                open_records.append(message)
            else:
                state.replay(message)
        self._state = state

    # -- periodic tasks ----------------------------------------------------------------------------------------

    def run_periodic_tasks(self) -> Future[list[str]]:
        """Run the tasks that are due by the controller's clock now; completes once their records commit."""
        future: Future[list[str]] = Future()

        def event() -> None:
            if not self.is_active:
                future.set_exception(self.not_controller_error())
                return
            self._complete_after_pending(future, self._run_due_tasks())

        self._events.put(event)
        return future

    def _run_due_tasks(self) -> list[str]:
        now = self._clock.now_ms()
        ran = []
        tasks: list[tuple[str, int, Operation]] = [
            ("fence-stale-brokers", max(1, self.config.session_timeout_ms // 8), cluster.fence_stale_broker),
            ("elect-unclean", self.config.unclean_election_interval_ms, replication.unclean_election_task),
            ("expire-delegation-tokens", self.config.token_expiry_check_interval_ms, security.expire_tokens_task),
        ]
        for name, interval, operation in tasks:
            if now < self._next_task_ms.get(name, 0):
                continue
            self._next_task_ms[name] = now + interval
            ran.append(name)
            while self._run_task(name, operation) is True:  # True: run again at once (one fence per run)
                pass
        interval = self.config.noop_interval_ms
        if interval > 0 and now - self._last_write_ms >= interval and self.is_active:
            ran.append("write-noop")
            self._run_task("write-noop", lambda _ctx: ControllerResult(features.noop_records(), None))
        return ran

    def _maybe_register(self) -> None:
        """Kafka's ControllerRegistrationManager: once metadata.version allows it and the log does not hold
        this incarnation, the active controller writes its own registration; a standby sends its own to the
        active controller (off the event thread, retried until the committed log shows it)."""
        request = self._registration
        if request is None or self._registration_sending.is_set():
            return
        image = self._loader.image
        level = image.features.metadata_version
        if level is None or level < MV_3_7_IV0 or request.matches(image.cluster.controllers.get(self.node_id)):
            return
        now = self._clock.now_ms()
        if now < self._next_registration_ms:
            return
        self._next_registration_ms = now + _REGISTRATION_RETRY_MS
        if self.is_active:
            self._run_task("registerController", lambda ctx: register_controller(ctx, request))
        elif self._registration_sender is not None:
            sender = self._registration_sender
            self._registration_sending.set()

            def send() -> None:
                try:
                    sender(request)
                except Exception as error:  # retried after _REGISTRATION_RETRY_MS
                    log.info("controller %d: registration not accepted yet: %s", self.node_id, error)
                finally:
                    self._registration_sending.clear()

            threading.Thread(target=send, name=f"controller-{self.node_id}-registration", daemon=True).start()

    def _run_task(self, name: str, operation: Operation) -> Any:
        if not self.is_active:
            return None
        try:
            result = operation(self._context())
            if result.records:
                self._append(name, result.records)
        except ControllerError as error:
            log.warning("controller %d: periodic task %s failed: %s", self.node_id, name, error)
            return None
        return result.response

    # -- operations ---------------------------------------------------------------------------------------

    def create_topics(self, topics: Sequence[replication.NewTopic]) -> Future[dict[str, replication.TopicOutcome]]:
        return self._submit("createTopics", lambda ctx: replication.create_topics(ctx, topics))

    def delete_topics(self, names: Sequence[str]) -> Future[dict[str, replication.TopicOutcome]]:
        return self._submit("deleteTopics", lambda ctx: replication.delete_topics(ctx, names))

    def create_partitions(self, name: str, total_count: int,
                          assignments: Sequence[Sequence[int]] | None = None) -> Future[replication.TopicOutcome]:
        return self._submit(
            "createPartitions", lambda ctx: replication.create_partitions(ctx, name, total_count, assignments)
        )

    def alter_partition(self, broker_id: int, broker_epoch: int,
                        changes: Sequence[replication.IsrChange]) -> Future[list[replication.IsrChangeOutcome]]:
        return self._submit(
            "alterPartition", lambda ctx: replication.alter_partition(ctx, broker_id, broker_epoch, changes)
        )

    def elect_leaders(self, election: Election,
                      partitions: Sequence[tuple[str, int]] | None = None) -> Future[dict[str, dict[int, Any]]]:
        return self._submit("electLeaders", lambda ctx: replication.elect_leaders(ctx, election, partitions))

    def alter_partition_reassignments(
        self, targets: Mapping[tuple[str, int], Sequence[int] | None]
    ) -> Future[dict[str, dict[int, Any]]]:
        return self._submit("alterPartitionReassignments",
                            lambda ctx: reassignment.alter_partition_reassignments(ctx, targets))

    def list_partition_reassignments(
        self, partitions: Sequence[tuple[str, int]] | None = None
    ) -> Future[dict[str, dict[int, reassignment.OngoingReassignment]]]:
        return self._submit("listPartitionReassignments",
                            lambda ctx: reassignment.list_partition_reassignments(ctx, partitions))

    def register_broker(self, request: cluster.BrokerRegistrationRequest) -> Future[int]:
        return self._submit("registerBroker", lambda ctx: cluster.register_broker(ctx, request))

    def register_controller(self, request: ControllerRegistrationRequest) -> Future[None]:
        return self._submit("registerController", lambda ctx: register_controller(ctx, request))

    def unregister_broker(self, broker_id: int) -> Future[None]:
        return self._submit("unregisterBroker", lambda ctx: cluster.unregister_broker(ctx, broker_id))

    def broker_heartbeat(self, broker_id: int, broker_epoch: int, metadata_offset: int, *,
                         want_fence: bool = False, want_shutdown: bool = False,
                         offline_log_dirs: Sequence[str] = ()) -> Future[cluster.HeartbeatReply]:
        return self._submit("brokerHeartbeat", lambda ctx: cluster.broker_heartbeat(
            ctx, broker_id, broker_epoch, metadata_offset, want_fence, want_shutdown, offline_log_dirs
        ))

    def assign_replicas_to_dirs(
        self, broker_id: int, broker_epoch: int, assignments: Sequence[directories.DirectoryAssignment]
    ) -> Future[dict[str, dict[int, Any]]]:
        return self._submit("assignReplicasToDirs", lambda ctx: directories.assign_replicas_to_dirs(
            ctx, broker_id, broker_epoch, assignments
        ))

    def incremental_alter_configs(self, resource_type: int, resource_name: str,
                                  changes: Sequence[configs.ConfigChange]) -> Future[dict[str, str]]:
        return self._submit("incrementalAlterConfigs", lambda ctx: configs.incremental_alter_configs(
            ctx, resource_type, resource_name, changes
        ))

    def update_features(self, updates: Mapping[str, tuple[int, features.UpgradeType]]) -> Future[dict[str, int]]:
        return self._submit("updateFeatures", lambda ctx: features.update_features(ctx, updates))

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> Future[tuple[int, int]]:
        return self._submit("allocateProducerIds",
                            lambda ctx: quotas.allocate_producer_ids(ctx, broker_id, broker_epoch))

    def alter_client_quotas(self, entity: Mapping[str, str | None],
                            changes: Mapping[str, float | None]) -> Future[dict[str, float]]:
        return self._submit("alterClientQuotas", lambda ctx: quotas.alter_client_quotas(ctx, entity, changes))

    def create_acls(self, bindings: Sequence[security.AclBinding]) -> Future[list[str]]:
        return self._submit("createAcls", lambda ctx: security.create_acls(ctx, bindings))

    def delete_acls(self, filters: Sequence[security.AclFilter]) -> Future[list[str]]:
        return self._submit("deleteAcls", lambda ctx: security.delete_acls(ctx, filters))

    def alter_scram_credentials(self, upsertions: Sequence[security.ScramUpsertion],
                                deletions: Sequence[tuple[str, str]] = ()) -> Future[int]:
        return self._submit("alterUserScramCredentials",
                            lambda ctx: security.alter_scram(ctx, upsertions, deletions))

    def create_delegation_token(self, owner: str, requester: str, renewers: Sequence[str] = (),
                                max_lifetime_ms: int = -1) -> Future[security.TokenInfo]:
        return self._submit("createDelegationToken", lambda ctx: security.create_token(
            ctx, owner, requester, renewers, max_lifetime_ms
        ))

    def renew_delegation_token(self, token_hmac: str, principal: str, period_ms: int = -1) -> Future[int]:
        return self._submit("renewDelegationToken",
                            lambda ctx: security.renew_token(ctx, token_hmac, principal, period_ms))

    def expire_delegation_token(self, token_hmac: str, principal: str, period_ms: int = -1) -> Future[int]:
        return self._submit("expireDelegationToken",
                            lambda ctx: security.expire_token(ctx, token_hmac, principal, period_ms))
