"""Kafka's PartitionChangeBuilder, without eligible leader replicas: from a partition, a target ISR and an
election policy, the PartitionChangeRecord that moves it there (None when nothing would change).

Rules kept from Kafka: the current leader stays while it is in the target ISR and acceptable; otherwise the
first acceptable replica (in replica order) that is in the target ISR leads; an UNCLEAN election may pick an
acceptable replica outside the ISR, which then becomes the whole ISR, in RECOVERING state. Without ELRs an
ISR is never written empty: the last member stays in it and the partition is left without a leader.
Below metadata.version 3.6-IV2 an ISR shrink bumps the leader epoch.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from controller.versions import MV_3_6_IV2
from records import metadata_types as mt
from replay.topics import NO_LEADER_CHANGE, PartitionRegistration

NO_LEADER = -1
RECOVERED = 0
RECOVERING = 1


class Election(enum.Enum):
    PREFERRED = "preferred"  # the first replica, if it is in the ISR and acceptable
    ONLINE = "online"  # any acceptable ISR member
    UNCLEAN = "unclean"  # any acceptable replica, even outside the ISR (may lose data)


def build_partition_change(
    topic_id: str,
    partition_id: int,
    partition: PartitionRegistration,
    *,
    target_isr: Sequence[int] | None = None,
    election: Election = Election.ONLINE,
    is_acceptable_leader: Callable[[int], bool],
    metadata_version: int,
    recovery_state: int | None = None,
) -> mt.PartitionChangeRecord | None:
    isr = tuple(partition.isr if target_isr is None else target_isr)
    leader, unclean = _elect(partition, isr, election, is_acceptable_leader)
    record_isr: tuple[int, ...] | None = None
    record_leader = NO_LEADER_CHANGE
    record_recovery = -1
    if leader != partition.leader:
        record_leader = leader
        if unclean:
            record_isr = (leader,)
            record_recovery = RECOVERING
    if record_isr is None and isr and isr != partition.isr:
        record_isr = isr
    if recovery_state is not None and recovery_state != partition.leader_recovery_state:
        record_recovery = recovery_state
    if (
        record_leader == NO_LEADER_CHANGE
        and record_isr is not None
        and metadata_version < MV_3_6_IV2
        and not set(partition.isr) <= set(record_isr)
    ):
        record_leader = partition.leader  # an ISR shrink bumps the leader epoch at these levels
    if record_leader == NO_LEADER_CHANGE and record_isr is None and record_recovery == -1:
        return None
    return mt.PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=record_isr,
        leader=record_leader,
        leader_recovery_state=record_recovery,
    )


def _elect(
    partition: PartitionRegistration,
    isr: tuple[int, ...],
    election: Election,
    acceptable: Callable[[int], bool],
) -> tuple[int, bool]:
    """(new leader, whether it was elected uncleanly)."""

    def valid(broker_id: int) -> bool:
        return broker_id in isr and acceptable(broker_id)

    if election is Election.PREFERRED and partition.replicas and valid(partition.replicas[0]):
        return partition.replicas[0], False
    if partition.leader >= 0 and valid(partition.leader):
        return partition.leader, False
    for replica in partition.replicas:
        if valid(replica):
            return replica, False
    if election is Election.UNCLEAN:
        for replica in partition.replicas:
            if acceptable(replica):
                return replica, True
    return NO_LEADER, False
