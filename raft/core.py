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

from raft.election_state import ElectionState, ElectionStore
from raft.log import LogEntry, RaftLog, entry_from_bytes
from raft.messages import (
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
from raft.roles import (
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
from raft.snapshots import encode_snapshot
from records import encode_batch, make_batch
from records.control_types import LeaderChangeMessage, Voter


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

    @property
    def is_voter(self) -> bool:
        """A node outside `voters` is an observer: it only fetches, never votes, never counts for the majority."""
        return self.node_id in self.voters

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

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
        self.state: EpochState = self._initial_state(self._persisted, now)
        if self.config.voters == (config.node_id,):
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

    # -- public queries ------------------------------------------------------------------------------------

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
        view = {voter: progress.end_offset for voter, progress in self.state.replicas.items()}
        view[self.config.node_id] = self.log.flushed_end_offset
        return view

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
            if len(self.config.voters) > 1 and now >= state.check_quorum_deadline:
                self.resign(now)
                return
            if now >= state.begin_epoch_resend_at:
                self._send_begin_epoch(now, state)
        elif isinstance(state, Follower):
            if now >= state.fetch_deadline:
                if self.config.is_voter:
                    self._enter_prospective(now, state.epoch, state.voted_id, state.leader_id)
                else:
                    self._become_unattached(now, state.epoch, state.voted_id)
            elif state.inflight_id is not None and now >= state.inflight_sent_ms + self.config.request_timeout_ms:
                state.inflight_id = None  # lost request: the next poll sends a new one
        elif isinstance(state, Unattached) and now >= state.election_deadline:
            if self.config.is_voter:
                self._enter_prospective(now, state.epoch, state.voted_id, None)
            else:
                self._ask_for_leader(now, state)
        elif isinstance(state, Prospective | Candidate):
            if now >= state.election_deadline:
                self._after_election_loss(now)
        elif isinstance(state, Resigned) and now >= state.election_deadline:
            self._become_unattached(now, state.epoch + 1, None)
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
        self.log.append(entry)
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
        self.save_snapshot(snapshot, encode_snapshot(snapshot.epoch, records, timestamp_ms))
        return snapshot

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
        return self._election_deadline(now) if self.config.is_voter else now

    def _ask_for_leader(self, now: float, state: Unattached) -> None:
        """An observer without a leader fetches from a random voter: a non-leader answers with the leader and
        epoch it knows (KRaft's NOT_LEADER_OR_FOLLOWER), the leader with data; either makes it a Follower."""
        request_id = self._next_request_id
        self._next_request_id += 1
        voter = self.rng.choice(self.config.voters)
        self._send(voter, FetchRequest(state.epoch, self.config.node_id, self.log.end_offset, self.log.last_epoch,
                                       request_id))
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
        majority = self.config.majority
        if len(state.granted) >= majority:
            if isinstance(state, Prospective):
                self._enter_candidate(now)
            else:
                self._become_leader(now, state)
        elif len(self.config.voters) - len(state.rejected) < majority:
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
        if not self.config.is_voter:
            return
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
        if source not in self.config.voters or response.epoch > state.epoch:
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
        return [voter for voter in self.config.voters if voter != self.config.node_id]

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
            voters=tuple(Voter(voter_id=voter) for voter in self.config.voters),
            granting_voters=tuple(Voter(voter_id=voter) for voter in sorted(candidate.granted)),
        )
        self._append_as_leader(state, [change], self.timestamp_of(now), True)
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
        self.log.append(entry)
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
            if len(state.fetched_since_check) + 1 >= self.config.majority:
                state.check_quorum_deadline = now + self.config.check_quorum_timeout_ms
                state.fetched_since_check.clear()
        elif source != self.config.node_id:
            # An observer: tracked for describe only, never part of check-quorum or the high watermark.
            progress = state.observers.setdefault(source, ReplicaProgress())
        if progress is not None:
            progress.last_fetch_ms = now
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
        ends = sorted(self.replica_end_offsets().values(), reverse=True)
        majority_end = ends[self.config.majority - 1]
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
            self.log.append(entry)
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
        self.log.truncate_to(target)

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
            self._advance_follower_hw(download.snapshot.end_offset)
            state.download = None

    # -- the poll step after every input ---------------------------------------------------------------------

    def _poll(self, now: float) -> None:
        state = self.state
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
            state.epoch, self.config.node_id, self.log.end_offset, self.log.last_epoch, request_id
        ))

    def _send(self, destination: int, message: RaftMessage) -> None:
        self.outbox.append(Envelope(self.config.node_id, destination, message))

    def take_outbox(self) -> list[Envelope]:
        out, self.outbox = self.outbox, []
        return out
