"""Kafka's PartitionChangeBuilder: from a partition, a target ISR / replica set and an election policy, the
PartitionChangeRecord that moves it there (None when nothing would change).

Rules kept from Kafka, in its order:
- a reassignment completes once every adding replica is in the target ISR and some ISR member stays: the
  removing replicas leave the replicas and the ISR;
- eligible leader replicas (KIP-966, when enabled): while the target ISR is smaller than the topic's
  effective min.insync.replicas, the members that leave it join the ELR (replicas known to hold every
  committed write) unless they shut down uncleanly; the ELR is cleared once the ISR reaches min ISR again,
  and by any unclean election. With ELRs the ISR may be empty. last_known_elr holds the last known leader
  (Kafka's default useLastKnownLeaderInBalancedRecovery): set when the ISR first empties, cleared once the
  partition has a leader again;
- the current leader stays while it is in the target ISR and acceptable; otherwise the first acceptable
  replica in the ISR leads, or, when the ISR is empty, the first acceptable ELR member, which becomes the
  whole ISR; with ISR and ELR both empty, the last known leader once it is acceptable (a balanced recovery,
  elected uncleanly); an UNCLEAN election may pick any acceptable replica, which then becomes the whole
  ISR, in RECOVERING state. Without ELRs an ISR is never written empty;
- a reassignment that drops replicas, and below metadata.version 3.6-IV2 an ISR shrink, bump the leader epoch.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kraftlake.controller.versions import MV_3_6_IV2, MV_3_7_IV2
from kraftlake.records import metadata_types as mt
from kraftlake.replay.topics import NO_LEADER_CHANGE, PartitionRegistration

NO_LEADER = -1
RECOVERED = 0
RECOVERING = 1


class Election(enum.Enum):
    PREFERRED = "preferred"  # the first replica, if it is in the ISR and acceptable
    ONLINE = "online"  # any acceptable ISR member
    UNCLEAN = "unclean"  # any acceptable replica, even outside the ISR (may lose data)


@dataclass(frozen=True)
class ElrPolicy:
    """What KIP-966 needs to know about a partition's topic: whether ELRs are on (the feature), the topic's
    effective min.insync.replicas, and the brokers that just came back from an unclean shutdown."""

    enabled: bool = False
    min_isr: int = 1
    unclean_shutdown: frozenset[int] = frozenset()


NO_ELR = ElrPolicy()


@dataclass(frozen=True)
class ReplicaTarget:
    """A new assignment for the partition (a reassignment step); None fields keep the partition's."""

    replicas: tuple[int, ...] | None = None
    adding: tuple[int, ...] | None = None
    removing: tuple[int, ...] | None = None


def build_partition_change(
    topic_id: str,
    partition_id: int,
    partition: PartitionRegistration,
    *,
    target_isr: Sequence[int] | None = None,
    target: ReplicaTarget = ReplicaTarget(),
    election: Election = Election.ONLINE,
    is_acceptable_leader: Callable[[int], bool],
    metadata_version: int,
    recovery_state: int | None = None,
    elr: ElrPolicy = NO_ELR,
    default_directory: Callable[[int], str] | None = None,
) -> mt.PartitionChangeRecord | None:
    isr = tuple(partition.isr if target_isr is None else target_isr)
    replicas = partition.replicas if target.replicas is None else target.replicas
    adding = partition.adding_replicas if target.adding is None else target.adding
    removing = partition.removing_replicas if target.removing is None else target.removing
    if adding or removing:  # completeReassignmentIfNeeded
        kept_isr = tuple(b for b in isr if b not in removing)
        if kept_isr and set(adding) <= set(isr):
            isr, replicas = kept_isr, tuple(b for b in replicas if b not in removing)
            adding = removing = ()
    target_elr = _populate_elr(partition, isr, elr)

    def valid(broker_id: int) -> bool:
        return (broker_id in isr or (not isr and broker_id in target_elr)) and is_acceptable_leader(broker_id)

    last_known = _last_known_leader(partition, isr, target_elr, elr, is_acceptable_leader)
    leader, unclean = _elect(partition, replicas, election, valid, is_acceptable_leader,
                             last_known_leader=last_known)
    record_leader = NO_LEADER_CHANGE
    record_isr: tuple[int, ...] | None = None
    record_recovery = -1
    if leader != partition.leader:
        if leader in target_elr:
            isr = (leader,)
            target_elr = tuple(b for b in target_elr if b != leader)
        record_leader = leader
        if unclean:
            record_isr = (leader,)
            if partition.leader_recovery_state != RECOVERING:
                record_recovery = RECOVERING
    if record_leader == NO_LEADER_CHANGE and not set(partition.replicas) <= set(replicas):
        record_leader = partition.leader  # a reassignment that drops replicas bumps the leader epoch
    if record_isr is not None or not elr.enabled:  # an unclean election, or ELRs off: no ELR at all
        target_elr = ()
    record_elr = None if target_elr == partition.elr else target_elr
    if record_isr is None and (isr or elr.enabled) and isr != partition.isr:
        record_isr = isr
    record_last_known = _last_known_change(partition, record_isr, record_leader) if elr.enabled else None
    if (
        record_leader == NO_LEADER_CHANGE
        and record_isr is not None
        and metadata_version < MV_3_6_IV2
        and not set(partition.isr) <= set(record_isr)
    ):
        record_leader = partition.leader  # an ISR shrink bumps the leader epoch at these levels
    record_replicas = None if replicas == partition.replicas else replicas
    record_directories = None
    if record_replicas is not None and metadata_version >= MV_3_7_IV2:
        record_directories = _directories(partition, replicas, default_directory)
    if recovery_state is not None and recovery_state != partition.leader_recovery_state:
        record_recovery = recovery_state
    record = mt.PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=record_isr,
        leader=record_leader,
        replicas=record_replicas,
        removing_replicas=None if removing == partition.removing_replicas else removing,
        adding_replicas=None if adding == partition.adding_replicas else adding,
        leader_recovery_state=record_recovery,
        directories=record_directories,
        eligible_leader_replicas=record_elr,
        last_known_elr=record_last_known,
    )
    return None if record == _no_op(topic_id, partition_id) else record


def _no_op(topic_id: str, partition_id: int) -> mt.PartitionChangeRecord:
    return mt.PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id)


def _populate_elr(partition: PartitionRegistration, isr: tuple[int, ...], elr: ElrPolicy) -> tuple[int, ...]:
    """The target ELR before the election (maybePopulateTargetElr)."""
    if not elr.enabled:
        return partition.elr
    if len(isr) >= elr.min_isr:
        return ()
    candidates = set(partition.elr) | set(partition.isr)
    target_elr = tuple(sorted(b for b in candidates if b not in isr and b not in elr.unclean_shutdown))
    return target_elr


def _directories(
    partition: PartitionRegistration, replicas: tuple[int, ...], default_directory: Callable[[int], str] | None
) -> tuple[str, ...]:
    """Each replica keeps its directory; a new one gets the broker's default (UNASSIGNED with several)."""
    known = dict(zip(partition.replicas, partition.directories, strict=False))
    assert default_directory is not None, "a replica change needs the brokers' default directories"
    return tuple(known[b] if b in known else default_directory(b) for b in replicas)


def _last_known_leader(
    partition: PartitionRegistration,
    isr: tuple[int, ...],
    target_elr: tuple[int, ...],
    elr: ElrPolicy,
    acceptable: Callable[[int], bool],
) -> int | None:
    """The last known leader a balanced recovery may elect (Kafka's canElectLastKnownLeader, as fixed by
    KAFKA-19522): ELRs on, ISR and ELR both empty, last_known_elr holding exactly that leader, and it is back."""
    if not elr.enabled or isr or target_elr or len(partition.last_known_elr) != 1:
        return None
    last = partition.last_known_elr[0]
    return last if acceptable(last) else None


def _last_known_change(
    partition: PartitionRegistration, record_isr: tuple[int, ...] | None, record_leader: int
) -> tuple[int, ...] | None:
    """last_known_elr holds the last known leader (maybeUpdateLastKnownLeader): set the first time the ISR
    empties, cleared once the partition has a leader again; None: unchanged."""
    if record_isr == () and partition.last_known_elr != (partition.leader,):
        return (partition.leader,)
    has_leader = record_leader >= 0 or (partition.leader != NO_LEADER and record_leader != NO_LEADER)
    if has_leader and partition.last_known_elr:
        return ()
    return None


def _elect(
    partition: PartitionRegistration,
    replicas: tuple[int, ...],
    election: Election,
    valid: Callable[[int], bool],
    acceptable: Callable[[int], bool],
    last_known_leader: int | None = None,
) -> tuple[int, bool]:
    """(new leader, whether it was elected uncleanly)."""
    if election is Election.PREFERRED and replicas and valid(replicas[0]):
        return replicas[0], False
    if partition.leader >= 0 and valid(partition.leader):
        return partition.leader, False
    for replica in replicas:
        if valid(replica):
            return replica, False
    if last_known_leader is not None:
        return last_known_leader, True  # a balanced recovery: the last leader may lack nothing it acknowledged
    if election is Election.UNCLEAN:
        for replica in replicas:
            if acceptable(replica):
                return replica, True
    return NO_LEADER, False
