"""A hand-driven cluster of Raft cores for scripted scenarios: the test decides which messages, flushes,
crashes and timers happen, and the simulation's InvariantChecker judges every step."""

from __future__ import annotations

import random
from collections.abc import Callable

from kraftlake.raft.core import BugFlags, RaftConfig, RaftNode
from kraftlake.raft.election_state import ElectionState, MemoryElectionStore
from kraftlake.raft.log import LogEntry, RaftLog, SimulatedDisk
from kraftlake.raft.messages import Envelope
from kraftlake.raft.simulation import InvariantChecker
from kraftlake.records import encode_batch, make_batch
from kraftlake.records.metadata_types import NoOpRecord

VOTERS = (1, 2, 3)
OBSERVER = 4  # started only by the scenarios that want an observer
ADDRESSES = tuple((node, f"controller-{node}", 9090 + node) for node in (*VOTERS, OBSERVER))  # Raft listeners


def batch(offset: int, epoch: int) -> LogEntry:
    data = encode_batch(make_batch(offset, epoch, 1000 * epoch + offset, [NoOpRecord()]))
    return LogEntry(offset, offset, epoch, data)


class ScriptedCluster:
    def __init__(self, bugs: BugFlags, seed: int = 7) -> None:
        self.bugs = bugs
        self.rng = random.Random(seed)
        self.now = 0.0
        self.disks = {node: SimulatedDisk() for node in (*VOTERS, OBSERVER)}
        self.stores = {node: MemoryElectionStore() for node in (*VOTERS, OBSERVER)}
        self.cores: dict[int, RaftNode] = {}
        self.in_flight: list[Envelope] = []
        self.checker = InvariantChecker(VOTERS)
        self.violations: list[str] = []

    def preload(self, node: int, entries: list[LogEntry], election: ElectionState) -> None:
        self.disks[node].durable = list(entries)
        self.stores[node].state = election

    def start(self, node: int, voters: tuple[int, ...] = VOTERS, kraft_version: int = 0) -> None:
        """`voters`: the voter set this node believes in (a misconfigured node may disagree with the others);
        with `kraft_version` 1 only the bootstrap set: the log then says who votes."""
        config = RaftConfig(node_id=node, voters=voters, fetch_max_bytes=1, kraft_version=kraft_version,
                            addresses=ADDRESSES)
        self.checker.restarted(node)
        self.cores[node] = RaftNode(
            config, RaftLog(self.disks[node]), self.stores[node], random.Random(self.rng.random()), self.now, self.bugs
        )
        self._after(node)

    def append(self, node: int) -> int:
        """One NoOpRecord batch appended on `node` (the leader); returns its last offset."""
        last = self.cores[node].append(self.now, [NoOpRecord()])
        self._after(node)
        return last

    def crash(self, node: int, lose_unflushed: bool) -> None:
        del self.cores[node]
        self.disks[node].crash(lose_unflushed)

    def _after(self, node: int) -> None:
        core = self.cores[node]
        outbox = core.take_outbox()
        for envelope in outbox:
            self.violations += self.checker.check_message(envelope)
        self.in_flight += outbox
        violations, _ = self.checker.check(node, core)
        self.violations += violations

    def run(self, until: Callable[[], bool], max_steps: int = 10_000) -> bool:
        """One action at a time (deliver the oldest message, else flush a node, else fire the earliest timer)
        until `until()` holds; messages to or from nodes that are down are dropped."""
        for _ in range(max_steps):
            if until():
                return True
            if self.in_flight:
                envelope = self.in_flight.pop(0)
                if envelope.destination in self.cores and envelope.source in self.cores:
                    self.cores[envelope.destination].handle(self.now, envelope.source, envelope.message)
                    self._after(envelope.destination)
                continue
            unflushed = [n for n, c in self.cores.items() if c.log.flushed_end_offset < c.log.end_offset]
            if unflushed:
                core = self.cores[unflushed[0]]
                core.log.flush()
                core.on_flushed(self.now)
                self._after(unflushed[0])
                continue
            node = min(self.cores, key=lambda n: self.cores[n].next_deadline(self.now))
            self.now = max(self.now, self.cores[node].next_deadline(self.now))
            self.cores[node].tick(self.now)
            self._after(node)
        return until()
