"""Deterministic simulation: every node's Raft core in one process on a seeded scheduler, a simulated
network and simulated disks, with faults, and the safety and liveness invariants checked after every event.

A scenario is a pure function of its seed, so a failing seed is re-run with tracing on to print what
happened. Faults run for a while, then heal (no partitions, every node up, no message loss); from then on a
leader must be elected and a new write committed within `liveness_bound_ms`.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from quorum.log import RaftLog, SimulatedDisk
from quorum.messages import Envelope
from quorum.quorum_state import MemoryElectionStore
from quorum.raft import BugFlags, RaftConfig, RaftNode, SafetyError
from quorum.state import Role
from records.metadata_types import NoOpRecord


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    seed: int
    violations: tuple[str, ...]
    trace: tuple[str, ...]
    committed_offsets: int
    max_epoch: int


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
    last_high_watermark: int = 0
    leader_checked_epoch: int = -1


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
    ) -> None:
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
        self.nodes = {node_id: SimNode(node_id) for node_id in self.voters}
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
        self.leaders_by_epoch: dict[int, int] = {}
        self.committed: dict[int, tuple[int, bytes]] = {}
        self.post_heal_writes: set[bytes] = set()
        # Small fetches make more interleavings reachable (a follower can hold half of a leader's tail).
        self.fetch_max_bytes = self.rng.choice((1, 200, 1024 * 1024))

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
        self._at(self.fault_ms, self._heal)
        self._at(0.0, self._write)
        end = self.fault_ms + self.liveness_bound_ms
        while self._queue and not self.violations:
            time, _, action = heapq.heappop(self._queue)
            if time > end or (self.live_after_heal and time > (self.healed_at or 0) + self.liveness_bound_ms / 3):
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
            self._check_leader_completeness_at_end()
        return ScenarioResult(
            self.seed,
            tuple(self.violations),
            tuple(self.trace),
            len(self.committed),
            max(self.leaders_by_epoch, default=0),
        )

    # -- nodes -----------------------------------------------------------------------------------------------

    def _config(self, node_id: int) -> RaftConfig:
        return RaftConfig(node_id=node_id, voters=self.voters, fetch_max_bytes=self.fetch_max_bytes)

    def _start(self, node: SimNode) -> None:
        node.incarnation += 1
        node.last_high_watermark = 0
        node.leader_checked_epoch = -1
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
        """A state machine snapshotting its committed state, which drops the log prefix behind it."""
        live = [n for n in self.nodes.values() if n.core is not None]
        node = self.rng.choice(live) if live else None
        if node is None or node.core is None:
            return
        core = node.core
        boundaries = [e.end_offset for e in core.log.entries if e.end_offset <= core.high_watermark]
        if boundaries:
            end = self.rng.choice(boundaries)
            snapshot = core.create_snapshot(end, [NoOpRecord()], int(self.now))
            self._log(f"node {node.node_id} snapshots at {snapshot.end_offset}-{snapshot.epoch}")

    def _schedule_faults(self) -> None:
        for _ in range(self.rng.randint(0, 8)):
            start = self.rng.uniform(0.0, self.fault_ms)
            kind = self.rng.choice(("partition", "isolate", "crash", "crash", "resign"))
            duration = self.rng.uniform(100.0, 3000.0)
            victim = self.rng.choice(self.voters)
            if kind == "crash":
                lose = self.rng.random() < 0.5
                self._at(start, lambda v=victim, lose=lose: self._crash(v, lose))
                self._at(min(start + duration, self.fault_ms), lambda v=victim: self._restart(v))
            elif kind == "resign":
                self._at(start, self._resign_leader)
            else:
                if kind == "isolate":
                    side = {victim}
                else:
                    side = set(self.rng.sample(self.voters, self.rng.randint(1, len(self.voters) - 1)))
                self._at(start, lambda side=frozenset(side): self._partition(side))
                self._at(min(start + duration, self.fault_ms), self._unpartition)

    def _partition(self, side: frozenset[int]) -> None:
        self._log(f"partition {sorted(side)} | {sorted(set(self.voters) - side)}")
        self.blocked = {(a, b) for a in self.voters for b in self.voters if (a in side) != (b in side)}

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
        for node_id in self.voters:
            self._restart(node_id)

    # -- invariants --------------------------------------------------------------------------------------------

    def _violation(self, text: str) -> None:
        self._log(f"VIOLATION: {text}")
        self.violations.append(f"t={self.now:.1f}ms: {text}")

    def _check(self, node: SimNode) -> None:
        core = node.core
        assert core is not None
        me = node.node_id
        if core.role is Role.LEADER:
            holder = self.leaders_by_epoch.setdefault(core.epoch, me)
            if holder != me:
                self._violation(f"two leaders in epoch {core.epoch}: nodes {holder} and {me}")
            if node.leader_checked_epoch != core.epoch:
                node.leader_checked_epoch = core.epoch
                self._check_holds_committed(node, f"new leader {me} of epoch {core.epoch}")
        hw = core.high_watermark
        if hw < node.last_high_watermark:
            self._violation(f"node {me}: high watermark went back from {node.last_high_watermark} to {hw}")
        if core.log.end_offset < hw:
            self._violation(f"node {me}: log ends at {core.log.end_offset}, below its high watermark {hw}")
        if hw > node.last_high_watermark:
            start = max(node.last_high_watermark, core.log.start_offset)
            for entry in core.log.entries_between(start, hw):
                known = self.committed.setdefault(entry.base_offset, (entry.epoch, entry.data))
                if known[1] != entry.data:
                    self._violation(f"node {me}: committed batch at offset {entry.base_offset} changed")
                elif entry.data in self.post_heal_writes and not self.live_after_heal:
                    self.live_after_heal = True
                    self._log(f"post-heal write at offset {entry.base_offset} committed")
            node.last_high_watermark = hw

    def _check_holds_committed(self, node: SimNode, who: str) -> None:
        """Leader completeness: a leader's log holds every batch committed in its epoch or an earlier one."""
        core = node.core
        assert core is not None
        held = {e.base_offset: e.data for e in core.log.entries}
        for base, (epoch, data) in self.committed.items():
            if base < core.log.start_offset or epoch > core.epoch:
                continue
            if held.get(base) != data:
                self._violation(f"{who} lacks committed batch at offset {base}")
                return

    def _check_leader_completeness_at_end(self) -> None:
        leaders = [n for n in self.nodes.values() if n.core is not None and n.core.role is Role.LEADER]
        if leaders:
            newest = max(leaders, key=lambda n: n.core.epoch if n.core else -1)
            self._check_holds_committed(newest, f"final leader {newest.node_id}")


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


def run_seeds(
    count: int, start_seed: int = 0, bugs: BugFlags | None = None
) -> tuple[int, list[ScenarioResult]]:
    """Run `count` scenarios; returns (scenarios run, failing results without traces)."""
    failures = []
    for seed in range(start_seed, start_seed + count):
        result = Simulation(seed, bugs=bugs).run()
        if result.violations:
            failures.append(result)
    return count, failures
