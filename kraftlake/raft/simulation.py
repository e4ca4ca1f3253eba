"""Deterministic simulation: every node's Raft core in one process on a seeded scheduler, a simulated
network and simulated disks, with faults, and the safety and liveness invariants checked after every event.

A scenario is a pure function of its seed, so a failing seed is re-run with tracing on to print what
happened. Faults run for a while, then heal (no partitions, every node up, no message loss); from then on a
leader must be elected and a new write committed within `liveness_bound_ms`.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kraftlake.raft.core import BugFlags, RaftConfig, RaftNode, SafetyError, VoterChangeError
from kraftlake.raft.election_state import MemoryElectionStore
from kraftlake.raft.log import LogEntry, RaftLog, SimulatedDisk
from kraftlake.raft.messages import BeginQuorumEpochRequest, EndQuorumEpochRequest, Envelope, VoteRequest, VoteResponse
from kraftlake.raft.roles import Candidate, Prospective, Role
from kraftlake.records.metadata_types import NoOpRecord


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    seed: int
    violations: tuple[str, ...]
    trace: tuple[str, ...]
    committed_offsets: int
    max_epoch: int
    voter_changes: int = 0  # VotersRecords the leaders accepted (reconfiguration scenarios)


@dataclass(slots=True)
class SimNode:
    """A node's durable parts (disk, quorum-state) outlive its core, which a crash throws away."""

    node_id: int
    disk: SimulatedDisk = field(default_factory=SimulatedDisk)
    store: MemoryElectionStore = field(default_factory=MemoryElectionStore)
    core: RaftNode | None = None
    incarnation: int = 0
    timer_token: int = 0
    flush_pending: bool = False


@dataclass(frozen=True, slots=True)
class NetworkFaults:
    drop_rate: float
    duplicate_rate: float
    reorder_rate: float


NO_NETWORK_FAULTS = NetworkFaults(0.0, 0.0, 0.0)


class Simulation:
    """One seeded scenario. `run()` returns the violations found (empty when every invariant held)."""

    def __init__(
        self,
        seed: int,
        *,
        bugs: BugFlags | None = None,
        trace: bool = False,
        fault_ms: float = 6000.0,
        liveness_bound_ms: float = 15000.0,
        voter_count: int | None = None,
        observer: bool | None = None,
        reconfigure: bool | None = None,
    ) -> None:
        """`observer`: add one observer node (None: a seeded coin decides). `reconfigure`: run kraft.version 1
        and add and remove voters while the faults happen (None: a seeded coin decides; implies an observer,
        the usual node to add)."""
        self.seed = seed
        self.rng = random.Random(seed)
        self.bugs = bugs or BugFlags()
        self.tracing = trace
        self.trace: list[str] = []
        self.violations: list[str] = []
        self.now = 0.0
        self.fault_ms = fault_ms
        self.liveness_bound_ms = liveness_bound_ms
        count = voter_count or self.rng.choice((3, 3, 3, 5))
        self.voters = tuple(range(1, count + 1))
        self.reconfigure = self.rng.random() < 0.5 if reconfigure is None else reconfigure
        with_observer = self.rng.random() < 0.5 if observer is None else observer
        with_observer = with_observer or self.reconfigure
        self.observers: tuple[int, ...] = (count + 1,) if with_observer else ()
        self.node_ids = self.voters + self.observers
        self.nodes = {node_id: SimNode(node_id) for node_id in self.node_ids}
        self.faults = NetworkFaults(
            drop_rate=self.rng.choice((0.0, 0.01, 0.05, 0.2)),
            duplicate_rate=self.rng.choice((0.0, 0.02, 0.1)),
            reorder_rate=self.rng.choice((0.0, 0.05, 0.2)),
        )
        self.blocked: set[tuple[int, int]] = set()
        self.healed_at: float | None = None
        self.live_after_heal = False
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._sequence = itertools.count()
        self._write_ids = itertools.count(1)
        # under reconfiguration any node may become a voter: the static observer rules apply to none
        self.checker = InvariantChecker(self.node_ids if self.reconfigure else self.voters)
        self.post_heal_writes: set[bytes] = set()
        self.first_post_heal_commit: int | None = None  # the end offset of the first post-heal write committed
        # Small fetches make more interleavings reachable (a follower can hold half of a leader's tail).
        self.fetch_max_bytes = self.rng.choice((1, 200, 1024 * 1024))
        # node -> (epoch it leads, the high watermark last checked); reset by a restart
        self.voter_changes = 0
        self._checked_majority: dict[int, tuple[int, int]] = {}

    # -- scheduling ------------------------------------------------------------------------------------------

    def _at(self, time: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (time, next(self._sequence), action))

    def _log(self, text: str) -> None:
        if self.tracing:
            self.trace.append(f"{self.now:9.1f} {text}")

    def run(self) -> ScenarioResult:
        for node in self.nodes.values():
            self._start(node)
        self._schedule_faults()
        if self.reconfigure:
            self._schedule_reconfigurations()
        self._at(self.fault_ms, self._heal)
        self._at(0.0, self._write)
        end = self.fault_ms + self.liveness_bound_ms
        while self._queue and not self.violations:
            time, _, action = heapq.heappop(self._queue)
            settled = self.live_after_heal and time > (self.healed_at or 0) + self.liveness_bound_ms / 3
            # observers get until `end`: one may follow a removed voter that does not know it yet
            if time > end or (settled and self._observers_caught_up()):
                break
            self.now = time
            try:
                action()
            except SafetyError as error:
                self._violation(f"safety check failed: {error}")
        if not self.violations:
            if not self.live_after_heal:
                bound = f"{self.liveness_bound_ms:.0f} ms"
                self._violation(f"no new write committed within {bound} after the faults healed")
            live = {n.node_id: n.core for n in self.nodes.values() if n.core is not None}
            for text in self.checker.check_final_leader(live):
                self._violation(text)
            for observer in self.observers:
                self._check_observer_caught_up(observer)
        return ScenarioResult(
            self.seed,
            tuple(self.violations),
            tuple(self.trace),
            len(self.checker.committed),
            max(self.checker.leaders_by_epoch, default=0),
            self.voter_changes,
        )

    # -- nodes -----------------------------------------------------------------------------------------------

    def _config(self, node_id: int) -> RaftConfig:
        return RaftConfig(
            node_id=node_id, voters=self.voters, fetch_max_bytes=self.fetch_max_bytes,
            kraft_version=1 if self.reconfigure else 0,
        )

    def _start(self, node: SimNode) -> None:
        node.incarnation += 1
        self.checker.restarted(node.node_id)
        self._checked_majority.pop(node.node_id, None)
        node.flush_pending = False
        node_rng = random.Random(self.rng.getrandbits(64))
        node.core = RaftNode(
            self._config(node.node_id), RaftLog(node.disk), node.store, node_rng, self.now, self.bugs
        )
        self._log(f"node {node.node_id} starts as {node.core.role.value} in epoch {node.core.epoch}")
        self._after(node)

    def _after(self, node: SimNode) -> None:
        """Ship the core's messages, arrange its flush and next timer, then check every invariant."""
        core = node.core
        assert core is not None
        for envelope in core.take_outbox():
            self._send(envelope)
        if not node.flush_pending and core.log.flushed_end_offset < core.log.end_offset:
            node.flush_pending = True
            incarnation = node.incarnation
            self._at(self.now + self.rng.uniform(0.1, 3.0), lambda: self._flush(node, incarnation))
        node.timer_token += 1
        token = node.timer_token
        incarnation = node.incarnation
        deadline = core.next_deadline(self.now)
        if deadline != float("inf"):
            self._at(max(deadline, self.now), lambda: self._tick(node, incarnation, token))
        self._check(node)
        if core.role is Role.LEADER:
            self._check_voter_changes(node.node_id, core)

    def _live(self, node: SimNode, incarnation: int) -> RaftNode | None:
        return node.core if node.core is not None and node.incarnation == incarnation else None

    def _tick(self, node: SimNode, incarnation: int, token: int) -> None:
        core = self._live(node, incarnation)
        if core is None or token != node.timer_token:
            return
        before = (core.role, core.epoch)
        core.tick(self.now)
        if (core.role, core.epoch) != before:
            self._log(f"node {node.node_id} timer: {before[0].value}@{before[1]} -> {core.role.value}@{core.epoch}")
        self._after(node)

    def _flush(self, node: SimNode, incarnation: int) -> None:
        core = self._live(node, incarnation)
        if core is None:
            return
        node.flush_pending = False
        core.log.flush()
        core.on_flushed(self.now)
        self._after(node)

    def _crash(self, node_id: int, lose_unflushed: bool) -> None:
        node = self.nodes[node_id]
        if node.core is None:
            return
        self._log(f"node {node_id} crashes ({'losing' if lose_unflushed else 'keeping'} unflushed writes)")
        node.core = None
        node.disk.crash(lose_unflushed)

    def _restart(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.core is None:
            self._start(node)

    # -- network ---------------------------------------------------------------------------------------------

    def _send(self, envelope: Envelope) -> None:
        for text in self.checker.check_message(envelope):
            self._violation(text)
        faults = self.faults
        if (envelope.source, envelope.destination) in self.blocked or self.rng.random() < faults.drop_rate:
            return
        copies = 2 if self.rng.random() < faults.duplicate_rate else 1
        for _ in range(copies):
            delay = self.rng.uniform(0.2, 2.0)
            if self.rng.random() < faults.reorder_rate:
                delay += self.rng.uniform(0.0, 300.0)
            self._at(self.now + delay, lambda: self._deliver(envelope))

    def _deliver(self, envelope: Envelope) -> None:
        node = self.nodes[envelope.destination]
        if node.core is None or (envelope.source, envelope.destination) in self.blocked:
            return
        core = node.core
        before = (core.role, core.epoch)
        core.handle(self.now, envelope.source, envelope.message)
        if self.tracing:
            self._log(f"{envelope.source} -> {envelope.destination} {_short(envelope.message)}")
            if (core.role, core.epoch) != before:
                self._log(f"node {node.node_id}: {before[0].value}@{before[1]} -> {core.role.value}@{core.epoch}")
        self._after(node)

    # -- workload and faults -----------------------------------------------------------------------------------

    def _write(self) -> None:
        leaders = [n for n in self.nodes.values() if n.core is not None and n.core.role is Role.LEADER]
        if leaders:
            node = self.rng.choice(leaders)
            assert node.core is not None
            write_id = next(self._write_ids)
            node.core.append(self.now, [NoOpRecord()], timestamp_ms=write_id)
            if self.healed_at is not None:
                self.post_heal_writes.add(node.core.log.entries[-1].data)
            self._after(node)
        if self.rng.random() < 0.02:
            self._snapshot()
        self._at(self.now + self.rng.uniform(10.0, 120.0), self._write)

    def _snapshot(self) -> None:
        """A state machine snapshotting its committed state; the driver drops some or all of the prefix behind it."""
        live = [n for n in self.nodes.values() if n.core is not None]
        node = self.rng.choice(live) if live else None
        if node is None or node.core is None:
            return
        core = node.core
        boundaries = [
            e.end_offset for e in core.log.entries if core.log.snapshot_end_offset < e.end_offset <= core.high_watermark
        ]
        if boundaries:
            end = self.rng.choice(boundaries)
            snapshot = core.create_snapshot(end, [(NoOpRecord(), 0)], int(self.now))
            start = core.delete_log_prefix(self.rng.randint(core.log.start_offset, end))  # may hold some back
            self._log(f"node {node.node_id} snapshots at {snapshot.end_offset}-{snapshot.epoch}, log starts at {start}")

    def _schedule_faults(self) -> None:
        for _ in range(self.rng.randint(0, 8)):
            start = self.rng.uniform(0.0, self.fault_ms)
            kind = self.rng.choice(("partition", "isolate", "crash", "crash", "resign"))
            duration = self.rng.uniform(100.0, 3000.0)
            victim = self.rng.choice(self.node_ids)
            if kind == "crash":
                lose = self.rng.random() < 0.5
                self._at(start, functools.partial(self._crash, victim, lose))
                self._at(min(start + duration, self.fault_ms), functools.partial(self._restart, victim))
            elif kind == "resign":
                self._at(start, self._resign_leader)
            else:
                if kind == "isolate":
                    side = {victim}
                else:
                    side = set(self.rng.sample(self.node_ids, self.rng.randint(1, len(self.node_ids) - 1)))
                self._at(start, functools.partial(self._partition, frozenset(side)))
                self._at(min(start + duration, self.fault_ms), self._unpartition)

    def _schedule_reconfigurations(self) -> None:
        """Voter changes every few hundred ms, during faults and a little after: many land while the previous
        change is still uncommitted (and must then be refused)."""
        time = self.rng.uniform(200.0, 800.0)
        while time < self.fault_ms + self.liveness_bound_ms / 6:
            self._at(time, self._reconfigure)
            time += self.rng.uniform(150.0, 900.0)

    def _reconfigure(self) -> None:
        leaders = [n for n in self.nodes.values() if n.core is not None and n.core.role is Role.LEADER]
        if not leaders:
            return
        node = max(leaders, key=lambda n: n.core.epoch if n.core else -1)
        core = node.core
        assert core is not None
        voters = core.voters
        outside = [n for n in self.node_ids if n not in voters]
        try:
            if outside and (len(voters.keys) < 3 or self.rng.random() < 0.5):
                newcomer = self.nodes[self.rng.choice(outside)]
                key = newcomer.core.config.key if newcomer.core else self._config(newcomer.node_id).key
                offset = core.add_voter(self.now, key)
                self.voter_changes += 1
                self._log(f"leader {node.node_id} adds voter {key.node_id} at offset {offset}")
            else:
                key = self.rng.choice(voters.keys)
                offset = core.remove_voter(self.now, key)
                self.voter_changes += 1
                self._log(f"leader {node.node_id} removes voter {key.node_id} at offset {offset}")
        except VoterChangeError as error:
            self._log(f"leader {node.node_id} refuses a voter change: {error}")
        self._after(node)

    def _check_voter_changes(self, me: int, core: RaftNode) -> None:
        """KIP-853's safety: at most one voter change uncommitted in a leader's log (so the old and the new
        majorities always intersect), and every advance of the high watermark backed by a durable majority of
        the voter set in force where the leader's log ends (the newest set: with one change pending, any
        majority of it meets any majority of the set before, so any future leader holds the batch)."""
        committed_end = self.checker.max_leader_high_watermark
        pending = [o for o in core.voter_history.record_offsets if o >= committed_end]
        if len(pending) > 1:
            self._violation(f"leader {me}: voter changes at offsets {pending} are uncommitted at once")
        hw = core.high_watermark
        epoch, checked = self._checked_majority.get(me, (-1, 0))
        if epoch != core.epoch:  # what it knew as a follower was committed by earlier leaders
            self._checked_majority[me] = (core.epoch, hw)
            return
        if hw <= checked or hw <= core.log.start_offset:
            return
        self._checked_majority[me] = (core.epoch, hw)
        entry = core.log.entries_between(hw - 1, hw)[0]
        voters = core.voters
        holders = [v for v in voters.ids if self._durably_holds(v, entry)]
        if len(holders) < voters.majority:
            self._violation(
                f"leader {me}: high watermark {hw} committed by {holders}, not a majority of the voters "
                f"{list(voters.ids)} in force at its log end {core.log.end_offset}"
            )

    def _durably_holds(self, node_id: int, entry: LogEntry) -> bool:
        disk = self.nodes[node_id].disk
        if disk.snapshot is not None and disk.snapshot.end_offset >= entry.end_offset:
            return True
        return any(e.base_offset == entry.base_offset and e.data == entry.data for e in disk.durable)

    def _partition(self, side: frozenset[int]) -> None:
        self._log(f"partition {sorted(side)} | {sorted(set(self.node_ids) - side)}")
        self.blocked = {(a, b) for a in self.node_ids for b in self.node_ids if (a in side) != (b in side)}

    def _unpartition(self) -> None:
        self._log("partition healed")
        self.blocked = set()

    def _resign_leader(self) -> None:
        for node in self.nodes.values():
            if node.core is not None and node.core.role is Role.LEADER:
                self._log(f"node {node.node_id} resigns gracefully")
                node.core.resign(self.now)
                self._after(node)

    def _heal(self) -> None:
        self._log("all faults heal")
        self.blocked = set()
        self.faults = NO_NETWORK_FAULTS
        self.healed_at = self.now
        for node_id in self.node_ids:
            self._restart(node_id)

    # -- invariants --------------------------------------------------------------------------------------------

    def _observers_caught_up(self) -> bool:
        goal = self.first_post_heal_commit or 0
        cores = [self.nodes[observer].core for observer in self.observers]
        return all(core is None or core.high_watermark >= goal for core in cores)

    def _check_observer_caught_up(self, observer: int) -> None:
        """Liveness for an observer: by the end it has learned the commit of the first post-heal write."""
        core = self.nodes[observer].core
        goal = self.first_post_heal_commit
        if core is not None and goal is not None and core.high_watermark < goal:
            self._violation(f"observer {observer}: high watermark {core.high_watermark} never reached {goal}")

    def _violation(self, text: str) -> None:
        self._log(f"VIOLATION: {text}")
        self.violations.append(f"t={self.now:.1f}ms: {text}")

    def _check(self, node: SimNode) -> None:
        assert node.core is not None
        violations, newly_committed = self.checker.check(node.node_id, node.core)
        for text in violations:
            self._violation(text)
        post_heal = [entry.end_offset for entry in newly_committed if entry.data in self.post_heal_writes]
        if not self.live_after_heal and post_heal:
            self.live_after_heal = True
            self.first_post_heal_commit = max(post_heal)
            self._log("a write appended after the heal is committed")


class InvariantChecker:
    """The safety invariants, checked on a node after each of its steps; usable by scripted tests too.

    - at most one leader per epoch;
    - a committed batch (below some node's high watermark) never changes, and no node truncates below its
      own high watermark (so logs agree on every committed prefix);
    - a node's high watermark never goes back (within one incarnation: it is not persisted);
    - leader completeness: a node that becomes leader of epoch E holds every batch committed in epochs <= E;
    - an observer (a node outside `voters`) is only ever Unattached or Follower, never casts a vote, and its
      high watermark is never ahead of the highest one a leader has had; elections and the leader's voter
      messages never involve it (`check_message`).
    """

    def __init__(self, voters: tuple[int, ...]) -> None:
        self.voters = voters
        self.max_leader_high_watermark = 0
        self.leaders_by_epoch: dict[int, int] = {}
        self.committed: dict[int, tuple[int, bytes]] = {}
        self._last_high_watermark: dict[int, int] = {}
        self._leader_checked_epoch: dict[int, int] = {}

    def restarted(self, node_id: int) -> None:
        self._last_high_watermark[node_id] = 0
        self._leader_checked_epoch[node_id] = -1

    def check(self, me: int, core: RaftNode) -> tuple[list[str], list[LogEntry]]:
        """Violations found, and the batches this step newly committed."""
        violations: list[str] = []
        if core.role is Role.LEADER:
            holder = self.leaders_by_epoch.setdefault(core.epoch, me)
            if holder != me:
                violations.append(f"two leaders in epoch {core.epoch}: nodes {holder} and {me}")
            if self._leader_checked_epoch.get(me) != core.epoch:
                self._leader_checked_epoch[me] = core.epoch
                violations += self.holds_committed(core, f"new leader {me} of epoch {core.epoch}")
        hw = core.high_watermark
        if core.role is Role.LEADER:
            self.max_leader_high_watermark = max(self.max_leader_high_watermark, hw)
        elif isinstance(core.state, Prospective | Candidate) and not (core.state.granted | core.state.rejected) <= set(
            self.voters
        ):
            violations.append(f"node {me}: an election in epoch {core.epoch} counted a non-voter")
        if me not in self.voters:
            violations += self._check_observer(me, core)
        last = self._last_high_watermark.get(me, 0)
        if hw < last:
            violations.append(f"node {me}: high watermark went back from {last} to {hw}")
        if core.log.end_offset < hw:
            violations.append(f"node {me}: log ends at {core.log.end_offset}, below its high watermark {hw}")
        newly_committed: list[LogEntry] = []
        if hw > last:
            for entry in core.log.entries_between(max(last, core.log.start_offset), hw):
                known = self.committed.setdefault(entry.base_offset, (entry.epoch, entry.data))
                if known[1] != entry.data:
                    violations.append(f"node {me}: committed batch at offset {entry.base_offset} changed")
                newly_committed.append(entry)
            self._last_high_watermark[me] = hw
        return violations, newly_committed

    def _check_observer(self, me: int, core: RaftNode) -> list[str]:
        violations = []
        if core.role not in (Role.UNATTACHED, Role.FOLLOWER):
            violations.append(f"observer {me} became {core.role.value} in epoch {core.epoch}")
        persisted = core.store.read()
        if persisted is not None and persisted.voted_id is not None:
            violations.append(f"observer {me} voted in epoch {core.epoch}")
        if core.high_watermark > self.max_leader_high_watermark:
            violations.append(
                f"observer {me}: high watermark {core.high_watermark} is ahead of any leader's "
                f"({self.max_leader_high_watermark})"
            )
        return violations

    def check_message(self, envelope: Envelope) -> list[str]:
        """No vote, vote answer or voter-set RPC goes to or comes from a non-voter."""
        message = envelope.message
        if isinstance(message, VoteRequest | VoteResponse | BeginQuorumEpochRequest | EndQuorumEpochRequest):
            outsiders = {envelope.source, envelope.destination} - set(self.voters)
            if outsiders:
                return [f"{type(message).__name__} from {envelope.source} to {envelope.destination} involves "
                        f"non-voter {min(outsiders)}"]
        return []

    def holds_committed(self, core: RaftNode, who: str) -> list[str]:
        held = {e.base_offset: e.data for e in core.log.entries}
        for base, (epoch, data) in sorted(self.committed.items()):
            if base >= core.log.start_offset and epoch <= core.epoch and held.get(base) != data:
                return [f"{who} lacks committed batch at offset {base}"]
        return []

    def check_final_leader(self, cores: dict[int, RaftNode]) -> list[str]:
        leaders = {node_id: core for node_id, core in cores.items() if core.role is Role.LEADER}
        if not leaders:
            return []
        newest = max(leaders, key=lambda node_id: leaders[node_id].epoch)
        return self.holds_committed(leaders[newest], f"final leader {newest}")


def _short(message: Any) -> str:
    """A compact trace line: batches shown by count, not bytes."""
    fields = []
    for name in message.__slots__:
        value = getattr(message, name)
        if name in ("batches",):
            value = f"<{len(value)} batches>"
        elif name == "chunk":
            value = f"<{len(value)} bytes>"
        fields.append(f"{name}={value}")
    return f"{type(message).__name__}({', '.join(fields)})"

