"""Replica placement after Kafka's StripedReplicaPlacer: spread every partition's replicas across racks
first, then across brokers, prefer unfenced brokers, never two replicas on one broker, and put the leader
(the first replica) only on an unfenced broker. Successive partitions rotate their starting rack and
broker, which gives the "striped" layout and an even leader count.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kraftlake.controller.errors import InvalidReplicationFactorError


@dataclass(frozen=True)
class UsableBroker:
    broker_id: int
    rack: str | None
    fenced: bool


class _Rack:
    """One rack's brokers, unfenced and fenced apart, each list walked round-robin. Leaders have their own
    cursor so that leadership rotates over the rack's brokers however many followers it also hosts."""

    def __init__(self, unfenced: list[int], fenced: list[int], rng: random.Random) -> None:
        rng.shuffle(unfenced)
        rng.shuffle(fenced)
        self.unfenced = unfenced
        self.fenced = fenced
        self.leader_cursor = 0
        self.unfenced_cursor = 0
        self.fenced_cursor = 0

    def next_leader(self) -> int:
        broker = self.unfenced[self.leader_cursor % len(self.unfenced)]
        self.leader_cursor += 1
        return broker

    def next_unfenced(self, taken: set[int]) -> int | None:
        for _ in range(len(self.unfenced)):
            broker = self.unfenced[self.unfenced_cursor % len(self.unfenced)]
            self.unfenced_cursor += 1
            if broker not in taken:
                return broker
        return None

    def next_any(self, taken: set[int]) -> int | None:
        found = self.next_unfenced(taken)
        if found is not None:
            return found
        for _ in range(len(self.fenced)):
            broker = self.fenced[self.fenced_cursor % len(self.fenced)]
            self.fenced_cursor += 1
            if broker not in taken:
                return broker
        return None


def place_replicas(
    brokers: Sequence[UsableBroker], partition_count: int, replication_factor: int, rng: random.Random
) -> list[list[int]]:
    """Replica lists for `partition_count` new partitions. Raises InvalidReplicationFactorError when the
    brokers cannot hold `replication_factor` replicas each or none is unfenced."""
    if replication_factor < 1:
        raise InvalidReplicationFactorError("the replication factor must be at least 1")
    if not any(not b.fenced for b in brokers):
        raise InvalidReplicationFactorError(
            "all brokers are currently fenced (or none is registered): no partition leader can be placed"
        )
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"the target replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered"
        )
    by_rack: dict[str | None, tuple[list[int], list[int]]] = {}
    for broker in sorted(brokers, key=lambda b: b.broker_id):
        unfenced, fenced = by_rack.setdefault(broker.rack, ([], []))
        (fenced if broker.fenced else unfenced).append(broker.broker_id)
    rack_names = sorted(by_rack, key=lambda name: "" if name is None else name)
    racks = [_Rack(*by_rack[name], rng) for name in rack_names]
    rack_offset = rng.randrange(len(racks))
    placements: list[list[int]] = []
    for _ in range(partition_count):
        taken: set[int] = set()
        replicas: list[int] = []
        leader_rack = _leader_rack(racks, rack_offset)
        rack_offset = leader_rack + 1
        leader = racks[leader_rack].next_leader()
        replicas.append(leader)
        taken.add(leader)
        position = leader_rack + 1
        while len(replicas) < replication_factor:
            found = None
            for step in range(len(racks)):
                found = racks[(position + step) % len(racks)].next_any(taken)
                if found is not None:
                    position += step + 1
                    break
            assert found is not None  # enough brokers were checked above
            replicas.append(found)
            taken.add(found)
        placements.append(replicas)
    return placements


def _leader_rack(racks: list[_Rack], start: int) -> int:
    for step in range(len(racks)):
        index = (start + step) % len(racks)
        if racks[index].unfenced:
            return index
    raise AssertionError("no rack holds an unfenced broker")
