"""AlterPartition from partition leaders, and preferred / unclean leader elections."""

from __future__ import annotations

import pytest

from kraftlake.controller import ConfigChange, ConfigOp, Election, IsrChange, NewTopic
from kraftlake.controller.errors import (
    ElectionNotNeededError,
    FencedLeaderEpochError,
    IneligibleReplicaError,
    InvalidRequestError,
    InvalidUpdateVersionError,
    NotLeaderOrFollowerError,
    PolicyViolationError,
    StaleBrokerEpochError,
    UnknownTopicError,
)
from kraftlake.controller.replication import IsrChangeOutcome
from kraftlake.records import metadata_types as mt
from kraftlake.replay.configs import BROKER, TOPIC
from tests.controller.conftest import Harness


def _topic(h: Harness, name: str = "t", assignments: dict[int, list[int]] | None = None) -> str:
    for b in range(3):
        if b not in h.epochs:
            h.register(b)
    h.wait(h.controller.create_topics([NewTopic(name, assignments=assignments or {0: [0, 1, 2], 1: [1, 2, 0]})]))
    return h.image.topics.by_name[name].topic_id


def _shrink(
    h: Harness, topic: str, partition: int, isr: tuple[int, ...], broker: int | None = None
) -> IsrChangeOutcome:
    p = h.partition(topic, partition)
    leader = p.leader if broker is None else broker
    [outcome] = h.wait(h.controller.alter_partition(leader, h.epochs[leader], [
        IsrChange(topic, partition, p.leader_epoch, p.partition_epoch, isr)
    ]))
    return outcome


def test_isr_shrink_and_expand(harness: Harness) -> None:
    topic_id = _topic(harness)
    mark = harness.offset()
    outcome = _shrink(harness, "t", 0, (0, 1))
    assert outcome.error is None and outcome.isr == (0, 1) and outcome.partition_epoch == 1
    assert harness.records_after(mark) == [mt.PartitionChangeRecord(partition_id=0, topic_id=topic_id, isr=(0, 1))]
    assert harness.partition("t", 0).leader_epoch == 0  # no leader epoch bump on a shrink at 4.2
    outcome = _shrink(harness, "t", 0, (0, 1, 2))
    assert outcome.error is None and harness.partition("t", 0).isr == (0, 1, 2)


def test_isr_shrink_bumps_the_leader_epoch_before_3_6_iv2(make_harness) -> None:
    h = make_harness(metadata_version="3.5")
    h.elect(1)
    _topic(h)
    _shrink(h, "t", 0, (0, 1))
    assert h.partition("t", 0).leader_epoch == 1


def test_alter_partition_is_checked(harness: Harness) -> None:
    _topic(harness)
    p = harness.partition("t", 0)

    def alter(broker: int, change: IsrChange, epoch: int | None = None) -> object:
        broker_epoch = harness.epochs[broker] if epoch is None else epoch
        return harness.wait(harness.controller.alter_partition(broker, broker_epoch, [change]))[0].error

    with pytest.raises(StaleBrokerEpochError):
        alter(0, IsrChange("t", 0, 0, 0, (0,)), epoch=1)
    assert isinstance(alter(1, IsrChange("t", 0, 0, 0, (0, 1))), NotLeaderOrFollowerError)
    assert isinstance(alter(0, IsrChange("t", 0, 5, 0, (0, 1))), FencedLeaderEpochError)
    assert isinstance(alter(0, IsrChange("t", 0, 0, 9, (0, 1))), InvalidUpdateVersionError)
    assert isinstance(alter(0, IsrChange("t", 0, 0, 0, (1, 2))), InvalidRequestError)  # leader left out
    assert isinstance(alter(0, IsrChange("t", 0, 0, 0, (0, 7))), InvalidRequestError)  # not a replica
    assert isinstance(alter(0, IsrChange("t", 9, 0, 0, (0,))), UnknownTopicError)
    assert harness.partition("t", 0) == p  # nothing changed
    _shrink(harness, "t", 0, (0, 1))
    harness.heartbeat(2, want_fence=True)
    p = harness.partition("t", 0)
    assert isinstance(alter(0, IsrChange("t", 0, p.leader_epoch, p.partition_epoch, (0, 1, 2))),
                      IneligibleReplicaError)  # a fenced broker cannot join the ISR


def test_preferred_election(harness: Harness) -> None:
    topic_id = _topic(harness)
    harness.heartbeat(0, want_fence=True)  # partition 0 moves to broker 1
    assert harness.partition("t", 0).leader == 1
    harness.heartbeat(0)  # back, unfenced, but not in the ISR yet
    result = harness.wait(harness.controller.elect_leaders(Election.PREFERRED, [("t", 0), ("t", 1), ("x", 0)]))
    assert result["t"][0] is not None and "not in the ISR" in str(result["t"][0])
    assert isinstance(result["t"][1], ElectionNotNeededError)
    assert isinstance(result["x"][0], UnknownTopicError)
    _shrink(harness, "t", 0, (1, 2, 0))
    mark = harness.offset()
    result = harness.wait(harness.controller.elect_leaders(Election.PREFERRED))  # every imbalanced partition
    assert result == {"t": {0: None}}
    assert harness.records_after(mark) == [mt.PartitionChangeRecord(partition_id=0, topic_id=topic_id, leader=0)]


def test_unclean_election_only_where_the_topic_allows_it(harness: Harness) -> None:
    topic_id = _topic(harness, assignments={0: [0, 1]})
    _shrink(harness, "t", 0, (0,))
    harness.heartbeat(0, want_fence=True)  # the only ISR member goes away: it becomes the ELR
    p = harness.partition("t", 0)
    assert (p.leader, p.isr, p.elr) == (-1, (), (0,))
    result = harness.wait(harness.controller.elect_leaders(Election.UNCLEAN, [("t", 0)]))
    assert isinstance(result["t"][0], PolicyViolationError)
    harness.wait(harness.controller.incremental_alter_configs(
        TOPIC, "t", [ConfigChange(ConfigOp.SET, "unclean.leader.election.enable", "true")]
    ))
    mark = harness.offset()
    result = harness.wait(harness.controller.elect_leaders(Election.UNCLEAN, [("t", 0)]))
    assert result == {"t": {0: None}}
    assert harness.records_after(mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, isr=(1,), leader=1, leader_recovery_state=1,
        eligible_leader_replicas=(), last_known_elr=(),  # an unclean election clears the ELR; it has a leader
    )]
    assert harness.partition("t", 0).leader_recovery_state == 1  # RECOVERING until the leader says otherwise
    p = harness.partition("t", 0)
    [outcome] = harness.wait(harness.controller.alter_partition(1, harness.epochs[1], [
        IsrChange("t", 0, p.leader_epoch, p.partition_epoch, (1,), leader_recovery_state=0)
    ]))
    assert outcome.error is None and harness.partition("t", 0).leader_recovery_state == 0


def test_fencing_elects_uncleanly_where_the_topic_allows_it(harness: Harness) -> None:
    _topic(harness, "u", assignments={0: [0, 1]})
    harness.wait(harness.controller.incremental_alter_configs(
        TOPIC, "u", [ConfigChange(ConfigOp.SET, "unclean.leader.election.enable", "true")]
    ))
    _shrink(harness, "u", 0, (0,))
    harness.heartbeat(0, want_fence=True)
    assert (harness.partition("u", 0).leader, harness.partition("u", 0).isr) == (1, (1,))


def test_periodic_unclean_election_follows_the_cluster_default(harness: Harness) -> None:
    _topic(harness, "u", assignments={0: [0, 1]})
    _shrink(harness, "u", 0, (0,))
    harness.heartbeat(0, want_fence=True)
    harness.clock.advance(harness.config.unclean_election_interval_ms)
    harness.heartbeat(1)
    harness.heartbeat(2)
    harness.wait(harness.controller.run_periodic_tasks())
    assert harness.partition("u", 0).leader == -1  # not allowed anywhere yet
    harness.wait(harness.controller.incremental_alter_configs(
        BROKER, "", [ConfigChange(ConfigOp.SET, "unclean.leader.election.enable", "true")]
    ))
    harness.clock.advance(harness.config.unclean_election_interval_ms)
    harness.heartbeat(1)
    harness.heartbeat(2)
    harness.wait(harness.controller.run_periodic_tasks())
    assert harness.partition("u", 0).leader == 1
