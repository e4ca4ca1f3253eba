"""The Raft core: one node's KRaft state machine, event-driven and free of I/O of its own.

The driver (the simulation or the asyncio process) feeds it messages and clock ticks, collects the messages
it emits from `outbox`, flushes its log when `log.flushed_end_offset < log.end_offset` and then calls
`on_flushed`. The log and the election store are injected, so the same code runs against simulated and
real disks. A follower only sends its next Fetch (its acknowledgement) once its log is flushed, and the
leader counts its own end offset only once flushed: the high watermark is always a durable majority.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kraftlake.raft.election_state import ElectionState, ElectionStore
from kraftlake.raft.log import LogEntry, RaftLog, entry_from_bytes
from kraftlake.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DivergingEpoch,
    EndQuorumEpochRequest,
    Envelope,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    RaftMessage,
    SnapshotRef,
    VoteRequest,
    VoteResponse,
)
from kraftlake.raft.roles import (
    Candidate,
    EpochState,
    Follower,
    Leader,
    ParkedFetch,
    Prospective,
    ReplicaProgress,
    Resigned,
    Role,
    SnapshotDownload,
    Unattached,
)
from kraftlake.raft.snapshots import encode_snapshot
from kraftlake.raft.voters import (
    KRAFT_VERSION_DYNAMIC,
    Endpoints,
    VoterHistory,
    VoterKey,
    VoterSet,
    control_records_of,
    default_directory_id,
    kraft_version_record,
    raft_endpoint,
    voter_set_of,
    voters_record,
)
from kraftlake.records import encode_batch, make_batch
from kraftlake.records.control_types import LeaderChangeMessage, Voter, VotersRecord


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Timeouts in milliseconds, named and defaulted like Kafka's controller.quorum.* settings."""

    node_id: int
    voters: tuple[int, ...]
    election_timeout_ms: float = 1000.0
    fetch_timeout_ms: float = 2000.0
    request_timeout_ms: float = 2000.0
    retry_backoff_ms: float = 20.0
    election_backoff_max_ms: float = 1000.0
    fetch_max_wait_ms: float = 500.0
    fetch_max_bytes: int = 1024 * 1024
    snapshot_chunk_bytes: int = 1024 * 1024
    bootstrap_retry_ms: float = 100.0  # how often an observer that knows no leader asks another voter
    # kraft.version 1 (KIP-853): the first leader writes KRaftVersion + Voters records and the voter set
    # can change at runtime; 0: `voters` is the fixed voter set of the static quorum.
    kraft_version: int = 0
    directory_id: str | None = None  # of the metadata log directory (meta.properties); derived if None
    # Every node's Raft address (voters and observers, from the quorum config): a voter's endpoint in VotersRecord
    addresses: tuple[tuple[int, str, int], ...] = ()

    @property
    def key(self) -> VoterKey:
        return VoterKey(self.node_id, self.directory_id or default_directory_id(self.node_id))

    @property
    def bootstrap_voters(self) -> VoterSet:
        """The voters in force before the log holds a VotersRecord (the bootstrap checkpoint's set)."""
        endpoints = {node: self.endpoints_of(node) for node in self.voters}
        others = VoterSet.bootstrap((voter for voter in self.voters if voter != self.node_id), endpoints)
        return others.with_voter(self.key, endpoints[self.node_id]) if self.node_id in self.voters else others

    def endpoints_of(self, node_id: int) -> Endpoints:
        """The node's Raft endpoints as the config gives them (none for a node it does not list)."""
        return next((raft_endpoint(host, port) for node, host, port in self.addresses if node == node_id), ())

    @property
    def check_quorum_timeout_ms(self) -> float:
        return 1.5 * self.fetch_timeout_ms


@dataclass(frozen=True, slots=True)
class BugFlags:
    """Deliberately broken variants, all off by default: the simulation's tests prove its invariants catch
    each one."""

    vote_without_log_check: bool = False
    commit_prior_epoch_entries: bool = False
    truncate_below_high_watermark: bool = False
    concurrent_voter_changes: bool = False  # accept a voter change while the previous one is uncommitted
    count_old_majority: bool = False  # advance the high watermark on the voter set before the pending change


class VoterChangeError(Exception):
    """An AddRaftVoter / RemoveRaftVoter the leader refuses now (Kafka's error code named in `code`)."""

    def __init__(self, code: str, text: str) -> None:
        self.code = code
        super().__init__(f"{code}: {text}")


class NotLeaderError(Exception):
    """An append sent to a node that is not (or no longer) the leader; names the leader it knows of."""

    def __init__(self, leader_id: int | None, epoch: int) -> None:
        self.leader_id = leader_id
        self.epoch = epoch
        known = f"the leader is node {leader_id}" if leader_id is not None else "no leader is known"
        super().__init__(f"not the leader in epoch {epoch}: {known}")


class SafetyError(Exception):
    """A step that would break a Raft safety property (e.g. truncating committed data): never expected."""


class RaftNode:
    """One node's Raft state machine. Every public method takes the current clock value in ms."""

    def __init__(
        self,
        config: RaftConfig,
        log: RaftLog,
        store: ElectionStore,
        rng: random.Random,
        now: float,
        bugs: BugFlags | None = None,
        timestamp_of: Callable[[float], int] = int,
    ) -> None:
        self.config = config
        self.timestamp_of = timestamp_of  # clock value -> batch timestamp (epoch ms); the identity in simulation
        self.log = log
        self.store = store
        self.rng = rng
        self.bugs = bugs or BugFlags()
        self.outbox: list[Envelope] = []
        self.high_watermark = log.snapshot.end_offset if log.snapshot else 0  # a snapshot is always committed
        self._next_request_id = 1
        self._persisted = store.read()
        self.voter_history = VoterHistory(config.bootstrap_voters)
        self._rebuild_voter_history()
        self.state: EpochState = self._initial_state(self._persisted, now)
        if self.voters.ids == (config.node_id,) and self.is_voter:
            self._enter_prospective(now, self.epoch, None, None)  # a lone voter elects itself at once
        self._poll(now)

    # -- construction -------------------------------------------------------------------------------------

    def _initial_state(self, persisted: ElectionState | None, now: float) -> EpochState:
        """Rebuild the role from `quorum-state`, like QuorumState.initialize()."""
        me = self.config.node_id
        if persisted is None or persisted.epoch < self.log.last_epoch:
            self._persist(ElectionState(self.log.last_epoch, None, None))
            return Unattached(self.log.last_epoch, None, self._unattached_deadline(now))
        if persisted.leader_id == me:
            # A former leader may have lost unflushed batches of its epoch: it must never lead that epoch
            # again, so it resumes Resigned (and votes for nobody else in it).
            return Resigned(persisted.epoch, self._election_deadline(now), ())
        if persisted.leader_id is not None:
            deadline = now + self.config.fetch_timeout_ms
            return Follower(persisted.epoch, persisted.leader_id, persisted.voted_id, deadline)
        return Unattached(persisted.epoch, persisted.voted_id, self._unattached_deadline(now))

    def _rebuild_voter_history(self) -> None:
        """From the snapshot's header batch (if any) and every batch of the log, as after a restart."""
        base, level = self.config.bootstrap_voters, 0
        if self.log.snapshot_data is not None:
            for _, record in control_records_of(self.log.snapshot_data[:_first_batch_size(self.log.snapshot_data)]):
                if isinstance(record, VotersRecord):
                    base = voter_set_of(record)
                else:
                    level = record.kraft_version  # type: ignore[attr-defined]
        self.voter_history.reset(base, level)
        for entry in self.log.entries:
            self.voter_history.apply(entry.data)

    def _append_entry(self, entry: LogEntry) -> None:
        self.log.append(entry)
        before = self.voter_history.latest_offset
        self.voter_history.apply(entry.data)
        if isinstance(self.state, Leader) and self.voter_history.latest_offset != before:
            self._sync_leader_replicas(self.state)

    def _sync_leader_replicas(self, state: Leader) -> None:
        """The leader tracks the voters of the latest set as replicas, everyone else as observers."""
        everyone = {**state.observers, **state.replicas}
        others = self._other_voters()
        state.replicas = {voter: everyone.get(voter) or ReplicaProgress() for voter in others}
        state.observers = {node: p for node, p in everyone.items() if node not in state.replicas}

    # -- public queries ------------------------------------------------------------------------------------

    @property
    def voters(self) -> VoterSet:
        """The voter set in force at the log end (uncommitted changes included, as in Kafka)."""
        return self.voter_history.latest

    @property
    def is_voter(self) -> bool:
        """A node outside the voter set (or with another directory id) is an observer: it only fetches."""
        return self.voters.key_of(self.config.node_id) == self.config.key

    @property
    def kraft_version(self) -> int:
        return self.voter_history.kraft_version_at(self.log.end_offset)

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def role(self) -> Role:
        return self.state.role

    @property
    def leader_id(self) -> int | None:
        if isinstance(self.state, Leader):
            return self.config.node_id
        if isinstance(self.state, Follower):
            return self.state.leader_id
        return None

    def replica_end_offsets(self) -> dict[int, int]:
        """The leader's view of every voter's end offset (-1 = not fetched yet in this epoch)."""
        if not isinstance(self.state, Leader):
            return {}
        return {voter: self._end_offset_of(self.state, voter) for voter in self.voters.ids}

    def _end_offset_of(self, state: Leader, node_id: int) -> int:
        if node_id == self.config.node_id:
            return self.log.flushed_end_offset
        progress = state.replicas.get(node_id) or state.observers.get(node_id)
        return progress.end_offset if progress is not None else -1

    def next_deadline(self, now: float) -> float:
        """The earliest clock value at which `tick` has something to do (inf: only an input can help)."""
        state = self.state
        if isinstance(state, Leader):
            deadlines = [state.check_quorum_deadline, state.begin_epoch_resend_at]
            deadlines += [parked.deadline for parked in state.parked.values()]
            return min(deadlines)
        if isinstance(state, Follower):
            deadlines = [state.fetch_deadline]
            if state.inflight_id is not None:
                deadlines.append(state.inflight_sent_ms + self.config.request_timeout_ms)
            elif state.next_fetch_at > now:
                deadlines.append(state.next_fetch_at)  # a past one waits for a flush, not for the clock
            return min(deadlines)
        return state.election_deadline

    # -- inputs --------------------------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        state = self.state
        if isinstance(state, Leader):
            if len(self.voters.keys) > 1 and now >= state.check_quorum_deadline:
                self.resign(now)
                return
            if now >= state.begin_epoch_resend_at:
                self._send_begin_epoch(now, state)
        elif isinstance(state, Follower):
            if now >= state.fetch_deadline:
                if self.is_voter:
                    self._enter_prospective(now, state.epoch, state.voted_id, state.leader_id)
                else:
                    self._become_unattached(now, state.epoch, state.voted_id)
            elif state.inflight_id is not None and now >= state.inflight_sent_ms + self.config.request_timeout_ms:
                state.inflight_id = None  # lost request: the next poll sends a new one
        elif isinstance(state, Unattached) and now >= state.election_deadline:
            if self.is_voter:
                self._enter_prospective(now, state.epoch, state.voted_id, None)
            else:
                self._ask_for_leader(now, state)
        elif isinstance(state, Prospective | Candidate):
            if now >= state.election_deadline:
                self._after_election_loss(now)
        elif isinstance(state, Resigned) and now >= state.election_deadline:
            # a leader that removed itself is an observer now: bumping the epoch would only disturb the quorum
            self._become_unattached(now, state.epoch + (1 if self.is_voter else 0), None)
        self._poll(now)

    def handle(self, now: float, source: int, message: RaftMessage) -> None:
        if isinstance(message, VoteRequest):
            self._on_vote_request(now, source, message)
        elif isinstance(message, VoteResponse):
            self._on_vote_response(now, source, message)
        elif isinstance(message, BeginQuorumEpochRequest):
            self._on_begin_epoch(now, source, message)
        elif isinstance(message, BeginQuorumEpochResponse):
            self._on_begin_epoch_response(now, message)
        elif isinstance(message, EndQuorumEpochRequest):
            self._on_end_epoch(now, message)
        elif isinstance(message, FetchRequest):
            self._on_fetch(now, source, message)
        elif isinstance(message, FetchResponse):
            self._on_fetch_response(now, source, message)
        elif isinstance(message, FetchSnapshotRequest):
            self._on_fetch_snapshot(now, source, message)
        elif isinstance(message, FetchSnapshotResponse):
            self._on_fetch_snapshot_response(now, message)
        self._poll(now)

    def on_flushed(self, now: float) -> None:
        """The driver made the log durable up to `log.flushed_end_offset`."""
        if isinstance(self.state, Leader):
            self._maybe_advance_leader_hw(self.state)
        self._poll(now)

    def append(
        self,
        now: float,
        messages: Sequence[Any],
        timestamp_ms: int | None = None,
        versions: Mapping[type, int] | None = None,
    ) -> int:
        """Append one batch of metadata records as leader; returns its last offset (committed later).

        `versions` picks each record type's schema version (the writer's metadata.version decides which it
        may use); a type it does not name is written at its latest version."""
        state = self.state
        if not isinstance(state, Leader):
            raise NotLeaderError(self.leader_id, self.epoch)
        timestamp = self.timestamp_of(now) if timestamp_ms is None else timestamp_ms
        last = self._append_as_leader(state, messages, timestamp, False, versions)
        self._poll(now)
        return last

    def append_encoded(self, now: float, data: bytes) -> LogEntry:
        """Append one batch the caller encoded itself (a big one is best encoded off the driver's thread): it
        must start at the log end and carry this leader's epoch, else ValueError (the log moved on)."""
        state = self.state
        if not isinstance(state, Leader):
            raise NotLeaderError(self.leader_id, self.epoch)
        entry = entry_from_bytes(data)
        if entry.base_offset != self.log.end_offset or entry.epoch != state.epoch:
            raise ValueError(
                f"a batch at offset {entry.base_offset} of epoch {entry.epoch} does not continue the log at "
                f"{self.log.end_offset} in epoch {state.epoch}"
            )
        self._append_entry(entry)
        self._poll(now)
        return entry

    def resign(self, now: float) -> None:
        """Step down (graceful shutdown or lost check-quorum), naming successors most caught up first."""
        state = self.state
        if not isinstance(state, Leader):
            return
        successors = tuple(
            sorted(state.replicas, key=lambda voter: (-state.replicas[voter].end_offset, voter))
        )
        self.state = Resigned(state.epoch, self._election_deadline(now), successors)
        for voter in successors:
            self._send(voter, EndQuorumEpochRequest(state.epoch, self.config.node_id, successors))
        self._poll(now)

    # -- reconfiguration (KIP-853) -------------------------------------------------------------------------

    def add_voter(self, now: float, key: VoterKey) -> int:
        """AddRaftVoter: append the voter set with `key` added; returns the VotersRecord's offset. The change
        is done once the high watermark passes that offset, counted on the new set's majority."""
        state = self._leader_ready_for_voter_change()
        if key.node_id in self.voters:
            raise VoterChangeError("DUPLICATE_VOTER", f"node {key.node_id} is already a voter")
        progress = state.observers.get(key.node_id)
        if progress is None or progress.directory_id != key.directory_id:
            raise VoterChangeError("REQUEST_TIMED_OUT", f"{key} has not fetched from the leader in epoch {self.epoch}")
        caught_up = (
            progress.end_offset >= self.high_watermark
            and progress.last_fetch_ms is not None
            and now - progress.last_fetch_ms <= self.config.fetch_timeout_ms
        )
        if not caught_up:
            raise VoterChangeError(
                "REQUEST_TIMED_OUT",
                f"{key} is not caught up (at {progress.end_offset}, high watermark {self.high_watermark})",
            )
        return self._append_voters(now, state, self.voters.with_voter(key, self.config.endpoints_of(key.node_id)))

    def remove_voter(self, now: float, key: VoterKey) -> int:
        """RemoveRaftVoter: append the voter set without `key`; a leader removing itself leads until the
        change commits (without counting itself), then resigns."""
        state = self._leader_ready_for_voter_change()
        if self.voters.key_of(key.node_id) != key:
            voters = ", ".join(map(str, self.voters.keys))
            raise VoterChangeError("VOTER_NOT_FOUND", f"{key} is not a voter (voters: {voters})")
        if len(self.voters.keys) == 1:
            raise VoterChangeError("INVALID_REQUEST", "the last voter cannot be removed")
        return self._append_voters(now, state, self.voters.without_voter(key))

    def update_voter(self, now: float, key: VoterKey) -> int:
        """UpdateRaftVoter: a voter re-registers under the same node id and directory id (in Kafka, with new
        endpoints or supported kraft.version range); rewrites the VotersRecord, one change at a time too."""
        state = self._leader_ready_for_voter_change()
        if self.voters.key_of(key.node_id) != key:
            raise VoterChangeError("VOTER_NOT_FOUND", f"{key} is not a voter")
        return self._append_voters(now, state, self.voters)

    def observer_key(self, node_id: int) -> VoterKey:
        """The key (node id + the directory id it fetched with) of an observer that fetched in this epoch."""
        state = self.state
        if not isinstance(state, Leader):
            raise NotLeaderError(self.leader_id, self.epoch)
        progress = state.observers.get(node_id)
        if progress is None:
            raise VoterChangeError("REQUEST_TIMED_OUT", f"node {node_id} has not fetched from the leader in epoch "
                                                        f"{self.epoch}")
        return VoterKey(node_id, progress.directory_id)

    def _leader_ready_for_voter_change(self) -> Leader:
        state = self.state
        if not isinstance(state, Leader):
            raise NotLeaderError(self.leader_id, self.epoch)
        if self.kraft_version < KRAFT_VERSION_DYNAMIC:
            raise VoterChangeError("UNSUPPORTED_VERSION", "the quorum runs kraft.version 0 (static voters)")
        if self.high_watermark <= state.epoch_start_offset:
            raise VoterChangeError("REQUEST_TIMED_OUT", f"epoch {state.epoch} has not committed its first batch yet")
        if self.voter_history.latest_offset >= self.high_watermark and not self.bugs.concurrent_voter_changes:
            raise VoterChangeError(
                "REQUEST_TIMED_OUT",
                f"the voter change at offset {self.voter_history.latest_offset} is not committed yet",
            )
        return state

    def _append_voters(self, now: float, state: Leader, voters: VoterSet) -> int:
        offset = self._append_as_leader(state, [voters_record(voters)], self.timestamp_of(now), True)
        self._maybe_advance_leader_hw(state)
        self._poll(now)
        return offset

    @property
    def voter_change_pending(self) -> bool:
        """A VotersRecord above the high watermark: the next change must wait for it."""
        return self.voter_history.latest_offset >= self.high_watermark

    def snapshot_id(self, end_offset: int) -> SnapshotRef:
        """The id a snapshot of [0, end_offset) would get; ValueError unless `end_offset` is committed, a batch
        boundary in the log, and past the latest snapshot."""
        if end_offset > self.high_watermark:
            raise ValueError(f"snapshot end offset {end_offset} is above the high watermark {self.high_watermark}")
        latest = self.log.snapshot.end_offset if self.log.snapshot else 0
        if end_offset <= max(latest, self.log.start_offset) or not self.log.is_batch_boundary(end_offset):
            raise ValueError(
                f"snapshot end offset {end_offset} is not a batch boundary after the log start and the latest "
                f"snapshot ({latest})"
            )
        return SnapshotRef(end_offset, self.log.epoch_before(end_offset))

    def create_snapshot(self, end_offset: int, records: Sequence[tuple[Any, int]], timestamp_ms: int) -> SnapshotRef:
        """Write the state machine's (record, version) pairs as the snapshot of [0, end_offset). The log prefix
        it covers stays until `delete_log_prefix` (the driver decides when it may go)."""
        snapshot = self.snapshot_id(end_offset)
        header = self.snapshot_quorum_records(end_offset)
        self.save_snapshot(snapshot, encode_snapshot(snapshot.epoch, records, timestamp_ms, header))
        return snapshot

    def snapshot_quorum_records(self, end_offset: int) -> tuple[Any, ...]:
        """What a snapshot of [0, end_offset) carries in its header batch besides SnapshotHeader: the
        kraft.version and voter set in force at its last offset (nothing under kraft.version 0)."""
        level = self.voter_history.kraft_version_at(end_offset - 1)
        if level < KRAFT_VERSION_DYNAMIC:
            return ()
        return (kraft_version_record(level), voters_record(self.voter_history.voters_at(end_offset - 1)))

    def save_snapshot(self, snapshot: SnapshotRef, data: bytes) -> None:
        """Keep an already encoded snapshot (from `snapshot_id` + `encode_snapshot`, e.g. encoded on another
        thread); checked again, as the log may have moved on meanwhile."""
        if self.snapshot_id(snapshot.end_offset) != snapshot:
            raise ValueError(f"snapshot {snapshot} no longer matches the log")
        self.log.save_snapshot(snapshot, data)

    def delete_log_prefix(self, offset: int) -> int:
        """Forget the log below `offset` (never past the latest snapshot); returns the new log start offset."""
        return self.log.delete_prefix(offset)

    # -- elections -----------------------------------------------------------------------------------------

    def _election_deadline(self, now: float) -> float:
        timeout = self.config.election_timeout_ms
        return now + timeout + self.rng.random() * timeout

    def _unattached_deadline(self, now: float) -> float:
        """A voter waits an election timeout before canvassing; an observer asks a voter for the leader at once."""
        return self._election_deadline(now) if self.is_voter else now

    def _ask_for_leader(self, now: float, state: Unattached) -> None:
        """An observer without a leader fetches from a random voter: a non-leader answers with the leader and
        epoch it knows (KRaft's NOT_LEADER_OR_FOLLOWER), the leader with data; either makes it a Follower."""
        request_id = self._next_request_id
        self._next_request_id += 1
        voter = self.rng.choice(self._other_voters() or list(self.voters.ids))
        self._send(voter, FetchRequest(state.epoch, self.config.node_id, self.log.end_offset, self.log.last_epoch,
                                       request_id, self.config.key.directory_id))
        state.election_deadline = now + self.config.bootstrap_retry_ms

    def _persist(self, election: ElectionState) -> None:
        """Durable before the transition takes effect; skipped when nothing persisted would change."""
        if election != self._persisted:
            self.store.write(election)
            self._persisted = election

    def _become_unattached(self, now: float, epoch: int, voted_id: int | None) -> None:
        self._persist(ElectionState(epoch, None, voted_id))
        self.state = Unattached(epoch, voted_id, self._unattached_deadline(now))

    def _become_follower(self, now: float, epoch: int, leader_id: int, voted_id: int | None) -> None:
        self._persist(ElectionState(epoch, leader_id, voted_id))
        self.state = Follower(epoch, leader_id, voted_id, now + self.config.fetch_timeout_ms)

    def _voted_in_current_epoch(self) -> int | None:
        state = self.state
        if isinstance(state, Unattached | Prospective | Follower):
            return state.voted_id
        if isinstance(state, Candidate | Leader | Resigned):
            return self.config.node_id
        return None

    def _observe_epoch(self, now: float, epoch: int, leader_id: int | None) -> None:
        """Any message may reveal a newer epoch or the leader of the current one: follow it."""
        me = self.config.node_id
        if epoch > self.epoch:
            if leader_id is not None and leader_id != me:
                self._become_follower(now, epoch, leader_id, None)
            else:
                self._become_unattached(now, epoch, None)
        elif (
            epoch == self.epoch
            and leader_id is not None
            and leader_id != me
            and isinstance(self.state, Unattached | Prospective | Candidate)
            and not (isinstance(self.state, Prospective) and self.state.leader_id == leader_id)
        ):
            self._become_follower(now, epoch, leader_id, self._voted_in_current_epoch())

    def _log_is_at_least_as_up_to_date(self, last_epoch: int, end_offset: int) -> bool:
        if self.bugs.vote_without_log_check:
            return True
        return (last_epoch, end_offset) >= (self.log.last_epoch, self.log.end_offset)

    def _enter_prospective(self, now: float, epoch: int, voted_id: int | None, leader_id: int | None) -> None:
        state = Prospective(epoch, voted_id, leader_id, self._election_deadline(now), granted={self.config.node_id})
        self.state = state
        request = VoteRequest(epoch, self.config.node_id, self.log.last_epoch, self.log.end_offset, True)
        for voter in self._other_voters():
            self._send(voter, request)
        self._tally(now)

    def _enter_candidate(self, now: float) -> None:
        epoch = self.epoch + 1
        self._persist(ElectionState(epoch, None, self.config.node_id))
        self.state = Candidate(epoch, self._election_deadline(now), granted={self.config.node_id})
        request = VoteRequest(epoch, self.config.node_id, self.log.last_epoch, self.log.end_offset, False)
        for voter in self._other_voters():
            self._send(voter, request)
        self._tally(now)

    def _tally(self, now: float) -> None:
        state = self.state
        if not isinstance(state, Prospective | Candidate):
            return
        voters = self.voters
        granted = state.granted & set(voters.ids)
        majority = voters.majority
        if len(granted) >= majority:
            if isinstance(state, Prospective):
                self._enter_candidate(now)
            else:
                self._become_leader(now, state)
        elif len(voters.keys) - len(state.rejected & set(voters.ids)) < majority:
            self._after_election_loss(now)

    def _after_election_loss(self, now: float) -> None:
        """A lost pre-vote falls back to the known leader or Unattached; a lost or stalled vote retries via
        Prospective (KIP-996), so a failed candidate never bumps the epoch again without a majority."""
        state = self.state
        if isinstance(state, Prospective):
            if state.leader_id is not None:
                self._become_follower(now, state.epoch, state.leader_id, state.voted_id)
            else:
                self.state = Unattached(state.epoch, state.voted_id, self._election_deadline(now))
        elif isinstance(state, Candidate) and now >= state.election_deadline:
            self._enter_prospective(now, state.epoch, self.config.node_id, None)

    def _on_vote_request(self, now: float, source: int, request: VoteRequest) -> None:
        if not self.is_voter and self.kraft_version < KRAFT_VERSION_DYNAMIC:
            return  # a static quorum's observer never votes
        # Under kraft.version 1 our voter set may be stale both ways (as in Kafka, the request is what says
        # who votes): a lagging newcomer must vote or a quorum that needs it could never elect a leader. Nor is
        # the nominee checked against our set: a removed voter is fenced because it stops canvassing once its
        # log says so, and before that its pre-votes fail against voters that still fetch from the leader.
        log_ok = self._log_is_at_least_as_up_to_date(request.last_epoch, request.end_offset)
        if request.pre_vote:
            granted = request.epoch >= self.epoch and self._can_grant_pre_vote(log_ok)
            self._send(source, VoteResponse(self.epoch, self.config.node_id, granted, True, self.leader_id))
            return
        if request.epoch > self.epoch:
            self._observe_epoch(now, request.epoch, None)
        granted = False
        state = self.state
        if request.epoch == self.epoch:
            if isinstance(state, Unattached | Prospective):
                if state.voted_id in (None, request.candidate_id) and log_ok:
                    granted = True
                    self._persist(ElectionState(state.epoch, None, request.candidate_id))
                    self.state = Unattached(state.epoch, request.candidate_id, self._election_deadline(now))
            elif isinstance(state, Follower):
                granted = state.voted_id == request.candidate_id
        self._send(source, VoteResponse(self.epoch, self.config.node_id, granted, False, self.leader_id))

    def _can_grant_pre_vote(self, log_ok: bool) -> bool:
        state = self.state
        if isinstance(state, Leader):
            return False
        if isinstance(state, Follower):
            return log_ok and not state.has_fetched
        return log_ok

    def _on_vote_response(self, now: float, source: int, response: VoteResponse) -> None:
        if response.epoch >= self.epoch:
            self._observe_epoch(now, response.epoch, response.leader_id)
        state = self.state
        if source not in self.voters or response.epoch > state.epoch:
            return
        # A pre-vote answer may come from a voter still in an older epoch: it knows of no newer leader.
        counts = (isinstance(state, Prospective) and response.pre_vote) or (
            isinstance(state, Candidate) and not response.pre_vote and response.epoch == state.epoch
        )
        if counts:
            assert isinstance(state, Prospective | Candidate)
            (state.granted if response.granted else state.rejected).add(source)
            self._tally(now)

    # -- leadership ----------------------------------------------------------------------------------------

    def _other_voters(self) -> list[int]:
        return [voter for voter in self.voters.ids if voter != self.config.node_id]

    def _become_leader(self, now: float, candidate: Candidate) -> None:
        me = self.config.node_id
        self._persist(ElectionState(candidate.epoch, me, me))
        state = Leader(
            candidate.epoch,
            epoch_start_offset=self.log.end_offset,
            check_quorum_deadline=now + self.config.check_quorum_timeout_ms,
            begin_epoch_resend_at=now,
            replicas={voter: ReplicaProgress() for voter in self._other_voters()},
        )
        self.state = state
        # The LeaderChange control batch opens the epoch: committing it is what lets the high watermark move.
        change = LeaderChangeMessage(
            version=0,
            leader_id=me,
            voters=tuple(Voter(voter_id=voter) for voter in self.voters.ids),
            granting_voters=tuple(Voter(voter_id=voter) for voter in sorted(candidate.granted)),
        )
        self._append_as_leader(state, [change], self.timestamp_of(now), True)
        if self.config.kraft_version >= KRAFT_VERSION_DYNAMIC and self.kraft_version < KRAFT_VERSION_DYNAMIC:
            # kraft.version 1 bootstrap: the log itself says which voters are in force from here on
            bootstrap = [kraft_version_record(KRAFT_VERSION_DYNAMIC), voters_record(self.voters)]
            self._append_as_leader(state, bootstrap, self.timestamp_of(now), True)
        self._send_begin_epoch(now, state)

    def _append_as_leader(
        self,
        state: Leader,
        messages: Sequence[Any],
        timestamp_ms: int,
        control: bool,
        versions: Mapping[type, int] | None = None,
    ) -> int:
        batch = make_batch(self.log.end_offset, state.epoch, timestamp_ms, messages, control=control,
                           versions=versions)
        entry = LogEntry(batch.base_offset, batch.last_offset, state.epoch, encode_batch(batch))
        self._append_entry(entry)
        return entry.last_offset

    def _send_begin_epoch(self, now: float, state: Leader) -> None:
        for voter, progress in state.replicas.items():
            if not progress.acknowledged:
                self._send(voter, BeginQuorumEpochRequest(state.epoch, self.config.node_id))
        state.begin_epoch_resend_at = now + self.config.fetch_timeout_ms / 2

    def _on_begin_epoch(self, now: float, source: int, request: BeginQuorumEpochRequest) -> None:
        if request.epoch >= self.epoch:
            self._observe_epoch(now, request.epoch, request.leader_id)
        self._send(source, BeginQuorumEpochResponse(self.epoch, self.config.node_id))

    def _on_begin_epoch_response(self, now: float, response: BeginQuorumEpochResponse) -> None:
        if response.epoch > self.epoch:
            self._observe_epoch(now, response.epoch, None)
            return
        state = self.state
        if isinstance(state, Leader) and response.epoch == state.epoch and response.voter_id in state.replicas:
            state.replicas[response.voter_id].acknowledged = True

    def _on_end_epoch(self, now: float, request: EndQuorumEpochRequest) -> None:
        if request.epoch > self.epoch:
            self._observe_epoch(now, request.epoch, None)
            return
        state = self.state
        if isinstance(state, Follower) and request.epoch == state.epoch and state.leader_id == request.leader_id:
            # The leader is gone: our fetches no longer vouch for it, and the most caught-up voter should
            # run first (strict exponential backoff by position, like Kafka's endEpochElectionBackoff).
            state.has_fetched = False
            if self.config.node_id in request.preferred_successors:
                position = request.preferred_successors.index(self.config.node_id)
                backoff = min(self.config.election_backoff_max_ms, self.config.retry_backoff_ms * 2**position)
            else:
                backoff = self.config.election_backoff_max_ms
            state.fetch_deadline = min(state.fetch_deadline, now + backoff)

    # -- replication: leader side ----------------------------------------------------------------------------

    def _on_fetch(self, now: float, source: int, request: FetchRequest) -> None:
        if request.epoch > self.epoch:
            self._observe_epoch(now, request.epoch, None)
        state = self.state
        if not isinstance(state, Leader) or request.epoch != state.epoch:
            error = "fenced_leader_epoch" if request.epoch < self.epoch else "not_leader"
            self._send(source, FetchResponse(self.epoch, self.leader_id, request.fetch_id, -1, error=error))
            return
        progress = state.replicas.get(source)
        if progress is not None:
            progress.acknowledged = True
            state.fetched_since_check.add(source)
            own = 1 if self.is_voter else 0
            if len(state.fetched_since_check) + own >= self.voters.majority:
                state.check_quorum_deadline = now + self.config.check_quorum_timeout_ms
                state.fetched_since_check.clear()
        elif source != self.config.node_id:
            # An observer: tracked for describe only, never part of check-quorum or the high watermark.
            progress = state.observers.setdefault(source, ReplicaProgress())
        if progress is not None:
            progress.last_fetch_ms = now
            progress.directory_id = request.replica_directory_id
        epoch, end = self.log.end_offset_for_epoch(request.last_fetched_epoch)
        below_start = request.fetch_offset < self.log.start_offset or end < self.log.start_offset
        if self.log.snapshot is not None and below_start:
            # Below the log start (or diverging before it): only the snapshot can bring this replica back.
            self._send(source, FetchResponse(
                state.epoch, self.config.node_id, request.fetch_id, self.high_watermark, snapshot=self.log.snapshot
            ))
            return
        if epoch != request.last_fetched_epoch or request.fetch_offset > end:
            self._send(source, FetchResponse(
                state.epoch, self.config.node_id, request.fetch_id, self.high_watermark,
                diverging_epoch=DivergingEpoch(epoch, end),
            ))
            return
        if progress is not None:
            progress.end_offset = request.fetch_offset
            if source in state.replicas:
                self._maybe_advance_leader_hw(state)
        if request.fetch_offset >= self.log.end_offset and self.config.fetch_max_wait_ms > 0:
            state.parked[source] = ParkedFetch(request, now + self.config.fetch_max_wait_ms, self.high_watermark)
            return
        state.parked.pop(source, None)
        self._answer_fetch(state, source, request)

    def _answer_fetch(self, state: Leader, source: int, request: FetchRequest) -> None:
        batches = self.log.read(request.fetch_offset, self.config.fetch_max_bytes)
        self._send(source, FetchResponse(
            state.epoch, self.config.node_id, request.fetch_id, self.high_watermark, batches=batches
        ))

    def _maybe_advance_leader_hw(self, state: Leader) -> None:
        """HW = the end offset a majority has durably reached, once it covers this epoch's first batch."""
        # the majority is counted on the latest voter set, which is in force at every uncommitted offset
        # because only one change is ever pending
        voters = self.voter_history.previous_set() if self.bugs.count_old_majority else self.voters
        ends = sorted((self._end_offset_of(state, voter) for voter in voters.ids), reverse=True)
        majority_end = ends[voters.majority - 1]
        own_epoch_committed = majority_end > state.epoch_start_offset
        if majority_end > self.high_watermark and (own_epoch_committed or self.bugs.commit_prior_epoch_entries):
            self.high_watermark = majority_end

    def _on_fetch_snapshot(self, now: float, source: int, request: FetchSnapshotRequest) -> None:
        state = self.state
        snapshot = self.log.snapshot
        if not isinstance(state, Leader) or request.epoch != state.epoch:
            error = "not_leader"
        elif snapshot != request.snapshot or self.log.snapshot_data is None:
            error = "snapshot_not_found"
        else:
            error = None
        if error is not None:
            self._send(source, FetchSnapshotResponse(
                self.epoch, self.leader_id, request.snapshot, request.position, 0, b"", error
            ))
            return
        assert isinstance(state, Leader) and self.log.snapshot_data is not None
        progress = state.replicas.get(source) or state.observers.get(source)
        if progress is not None:
            progress.last_fetch_ms = now
        data = self.log.snapshot_data
        chunk = data[request.position:request.position + self.config.snapshot_chunk_bytes]
        self._send(source, FetchSnapshotResponse(
            state.epoch, self.config.node_id, request.snapshot, request.position, len(data), chunk
        ))

    # -- replication: follower side --------------------------------------------------------------------------

    def _on_fetch_response(self, now: float, source: int, response: FetchResponse) -> None:
        if response.epoch > self.epoch or (response.epoch == self.epoch and isinstance(self.state, Unattached)):
            # A newer epoch, or (an observer's question) the leader of this one: follow it, then fetch afresh.
            self._observe_epoch(now, response.epoch, response.leader_id)
            return
        state = self.state
        if (
            not isinstance(state, Follower)
            or response.epoch != state.epoch
            or response.fetch_id != state.inflight_id
            or source != state.leader_id
        ):
            return  # stale, duplicated or reordered: only the single in-flight fetch's answer counts
        state.inflight_id = None
        if response.error is not None:
            state.next_fetch_at = now + self.config.retry_backoff_ms
            return
        state.has_fetched = True
        state.fetch_deadline = now + self.config.fetch_timeout_ms
        if response.diverging_epoch is not None:
            self._truncate_to_divergence(response.diverging_epoch)
            return
        if response.snapshot is not None:
            state.download = SnapshotDownload(response.snapshot)
            return
        for data in response.batches:
            entry = entry_from_bytes(data)
            if entry.base_offset != self.log.end_offset:
                break
            self._append_entry(entry)
        self._advance_follower_hw(min(response.high_watermark, self.log.end_offset))

    def _advance_follower_hw(self, candidate: int) -> None:
        if candidate > self.high_watermark:
            self.high_watermark = candidate

    def _truncate_to_divergence(self, diverging: DivergingEpoch) -> None:
        local_epoch, local_end = self.log.end_offset_for_epoch(diverging.epoch)
        target = min(local_end, diverging.end_offset)
        if self.bugs.truncate_below_high_watermark:
            target = min(target, self.log.epoch_start_offset(local_epoch))
        elif target < self.high_watermark:
            raise SafetyError(
                f"node {self.config.node_id}: divergence at {target} is below the high watermark {self.high_watermark}"
            )
        self.voter_history.truncate(self.log.truncate_to(target))

    def _on_fetch_snapshot_response(self, now: float, response: FetchSnapshotResponse) -> None:
        if response.epoch > self.epoch:
            self._observe_epoch(now, response.epoch, response.leader_id)
            return
        state = self.state
        if not isinstance(state, Follower) or state.download is None or response.epoch != state.epoch:
            return
        download = state.download
        if response.snapshot != download.snapshot or response.position != len(download.received):
            return
        state.inflight_id = None
        if response.error is not None:
            state.download = None  # the leader moved on to a newer snapshot: start over with a Fetch
            state.next_fetch_at = now + self.config.retry_backoff_ms
            return
        state.fetch_deadline = now + self.config.fetch_timeout_ms
        download.received += response.chunk
        if len(download.received) >= response.total_size:
            self.log.install_snapshot(download.snapshot, bytes(download.received))
            self._rebuild_voter_history()
            self._advance_follower_hw(download.snapshot.end_offset)
            state.download = None

    # -- the poll step after every input ---------------------------------------------------------------------

    def _poll(self, now: float) -> None:
        state = self.state
        if isinstance(state, Leader) and not self.is_voter and not self.voter_change_pending:
            self.resign(now)  # it removed itself and that change is committed: let the voters elect a leader
            return
        if isinstance(state, Leader):
            for replica, parked in list(state.parked.items()):
                if (
                    self.log.end_offset > parked.request.fetch_offset
                    or self.high_watermark != parked.high_watermark
                    or now >= parked.deadline
                ):
                    del state.parked[replica]
                    self._answer_fetch(state, replica, parked.request)
        elif isinstance(state, Follower):
            self._maybe_send_fetch(now, state)

    def _maybe_send_fetch(self, now: float, state: Follower) -> None:
        """One request in flight at most, and only once everything received so far is durable."""
        if state.inflight_id is not None or now < state.next_fetch_at:
            return
        if self.log.flushed_end_offset != self.log.end_offset:
            return
        request_id = self._next_request_id
        self._next_request_id += 1
        state.inflight_id = request_id
        state.inflight_sent_ms = now
        if state.download is not None:
            self._send(state.leader_id, FetchSnapshotRequest(
                state.epoch, self.config.node_id, state.download.snapshot, len(state.download.received)
            ))
            return
        self._send(state.leader_id, FetchRequest(
            state.epoch, self.config.node_id, self.log.end_offset, self.log.last_epoch, request_id,
            self.config.key.directory_id,
        ))

    def _send(self, destination: int, message: RaftMessage) -> None:
        self.outbox.append(Envelope(self.config.node_id, destination, message))

    def take_outbox(self) -> list[Envelope]:
        out, self.outbox = self.outbox, []
        return out


def _first_batch_size(data: bytes) -> int:
    """A snapshot's header batch (KRaftVersion and Voters records ride in it) ends here."""
    return 12 + int.from_bytes(data[8:12], "big")
