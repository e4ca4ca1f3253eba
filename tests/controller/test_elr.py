"""Eligible leader replicas (KIP-966): the exact PartitionChangeRecords as the ISR shrinks below the
effective min.insync.replicas, leaders are lost and elected from the ELR, replicas rejoin, a broker comes
back from an unclean shutdown, and the configs and the feature that govern ELRs change."""

from __future__ import annotations

from typing import Any

import pytest

from kraftlake.controller import ConfigChange, ConfigOp, IsrChange, NewTopic, UpgradeType
from kraftlake.controller.errors import InvalidFeatureUpdateError
from kraftlake.records import metadata_types as mt
from kraftlake.replay.configs import BROKER, TOPIC
from tests.controller.conftest import Harness


def _changes(h: Harness, mark: int) -> list[Any]:
    return [r for r in h.records_after(mark) if type(r) is mt.PartitionChangeRecord]


def _topic(h: Harness, replicas: list[int], min_isr: str | None = None) -> str:
    for b in replicas:
        if b not in h.epochs:
            h.register(b)
    configs = {} if min_isr is None else {"min.insync.replicas": min_isr}
    h.wait(h.controller.create_topics([NewTopic("t", assignments={0: replicas}, configs=configs)]))
    return h.image.topics.by_name["t"].topic_id


def _alter_isr(h: Harness, isr: tuple[int, ...]) -> Any:
    p = h.partition("t", 0)
    [outcome] = h.wait(h.controller.alter_partition(p.leader, h.epochs[p.leader], [
        IsrChange("t", 0, p.leader_epoch, p.partition_epoch, isr)
    ]))
    return outcome


def test_shrink_below_min_isr_then_leader_loss_elects_from_the_elr(harness: Harness) -> None:
    topic_id = _topic(harness, [0, 1, 2], min_isr="2")
    mark = harness.offset()
    assert _alter_isr(harness, (0,)).error is None
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, isr=(0,), eligible_leader_replicas=(1, 2),
    )]
    mark = harness.offset()
    harness.heartbeat(0, want_fence=True)  # the leader, the whole ISR, goes away
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, isr=(1,), leader=1, eligible_leader_replicas=(0, 2),
    )]
    mark = harness.offset()
    assert _alter_isr(harness, (1, 2)).error is None  # back at min ISR: the ELR is cleared
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, isr=(1, 2), eligible_leader_replicas=(),
    )]
    p = harness.partition("t", 0)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (1, (1, 2), (), ())


def test_empty_isr_waits_for_an_elr_member_and_unclean_shutdown_leaves_it(harness: Harness) -> None:
    harness.register(0)
    harness.register(1)
    harness.wait(harness.controller.incremental_alter_configs(  # the cluster-wide default this time
        BROKER, "", [ConfigChange(ConfigOp.SET, "min.insync.replicas", "2")]
    ))
    topic_id = _topic(harness, [0, 1])
    _alter_isr(harness, (0,))
    harness.heartbeat(1, want_fence=True)  # not in the ISR: nothing to change
    mark = harness.offset()
    harness.heartbeat(0, want_fence=True)
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(  # last_known_elr: the last known leader
        partition_id=0, topic_id=topic_id, isr=(), leader=-1, eligible_leader_replicas=(0, 1), last_known_elr=(0,),
    )]
    mark = harness.offset()
    harness.heartbeat(1)  # an ELR member is back: it leads, alone in the ISR, and the last known leader goes
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, isr=(1,), leader=1, eligible_leader_replicas=(0,), last_known_elr=(),
    )]
    harness.clock.advance(harness.config.session_timeout_ms + 1)
    mark = harness.offset()
    harness.register(0, generation=1, unfence=False)  # a new incarnation: the old one died uncleanly
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, eligible_leader_replicas=(),
    )]


def test_with_isr_and_elr_empty_the_last_known_leader_recovers_the_partition(harness: Harness) -> None:
    """KIP-966's balanced recovery (Kafka's useLastKnownLeaderInBalancedRecovery, on by default): when no ISR
    or ELR member is left, the last known leader is elected once it is back, as an unclean election would
    (RECOVERING), but never any other replica."""
    topic_id = _topic(harness, [0, 1], min_isr="2")
    assert _alter_isr(harness, (0,)).error is None
    harness.clock.advance(harness.config.session_timeout_ms + 1)
    harness.heartbeat(0)
    mark = harness.offset()
    harness.register(1, generation=1, unfence=False)  # broker 1 died uncleanly: out of the ELR
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, eligible_leader_replicas=(),
    )]
    mark = harness.offset()
    harness.heartbeat(0, want_fence=True)
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, isr=(), leader=-1, eligible_leader_replicas=(0,), last_known_elr=(0,),
    )]
    harness.clock.advance(harness.config.session_timeout_ms + 1)
    mark = harness.offset()
    harness.register(0, generation=1, unfence=False)  # the leader died uncleanly too: ISR and ELR are empty
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, eligible_leader_replicas=(),
    )]
    assert harness.partition("t", 0).last_known_elr == (0,)
    mark = harness.offset()
    harness.heartbeat(0)  # the last known leader is back
    assert _changes(harness, mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, isr=(0,), leader=0, leader_recovery_state=1, last_known_elr=(),
    )]


@pytest.mark.parametrize("clean", [True, False], ids=["previous-epoch-matches", "previous-epoch-differs"])
def test_previous_broker_epoch_decides_whether_a_restart_keeps_the_elr(harness: Harness, clean: bool) -> None:
    """KIP-966 (Kafka's ClusterControlManager.registerBroker): a new incarnation naming the epoch the broker
    last held shut down cleanly and stays eligible; any other PreviousBrokerEpoch means unclean, out of the ELR."""
    topic_id = _topic(harness, [0, 1, 2], min_isr="2")
    assert _alter_isr(harness, (0,)).error is None
    assert harness.partition("t", 0).elr == (1, 2)
    last_epoch = harness.epochs[1]
    harness.clock.advance(harness.config.session_timeout_ms + 1)
    harness.heartbeat(0)  # the leader keeps its session; broker 1 lost its own
    mark = harness.offset()
    harness.register(1, generation=1, unfence=False, previous_broker_epoch=last_epoch if clean else last_epoch - 1)
    unclean = [mt.PartitionChangeRecord(partition_id=0, topic_id=topic_id, eligible_leader_replicas=(2,))]
    assert _changes(harness, mark) == ([] if clean else unclean)
    [registration] = [r for r in harness.records_after(mark) if type(r) is mt.RegisterBrokerRecord]
    assert registration.broker_id == 1 and registration.broker_epoch == harness.epochs[1] > last_epoch
    assert harness.partition("t", 0).elr == ((1, 2) if clean else (2,))


def test_min_isr_change_and_elr_feature_off_clear_the_elrs(harness: Harness) -> None:
    _topic(harness, [0, 1, 2], min_isr="3")
    _alter_isr(harness, (0, 1))
    assert harness.partition("t", 0).elr == (2,)
    mark = harness.offset()
    harness.wait(harness.controller.incremental_alter_configs(
        TOPIC, "t", [ConfigChange(ConfigOp.SET, "min.insync.replicas", "2")]
    ))
    assert harness.records_after(mark)[-1] == mt.ClearElrRecord(topic_name="t")
    assert harness.partition("t", 0).elr == ()
    _alter_isr(harness, (0,))
    assert harness.partition("t", 0).elr == (1,)
    mark = harness.offset()
    harness.wait(harness.controller.update_features(
        {"eligible.leader.replicas.version": (0, UpgradeType.SAFE_DOWNGRADE)}
    ))
    assert harness.records_after(mark) == [
        mt.FeatureLevelRecord(name="eligible.leader.replicas.version", feature_level=0),
        mt.ClearElrRecord(topic_name=""),
    ]
    assert harness.partition("t", 0).elr == ()


def test_elr_needs_metadata_version_4_0_iv1(make_harness) -> None:
    h = make_harness(metadata_version="4.0-IV0")
    h.elect(1)
    assert "eligible.leader.replicas.version" not in h.image.features.finalized  # off by default before 4.1
    with pytest.raises(InvalidFeatureUpdateError, match="needs metadata"):
        h.wait(h.controller.update_features({"eligible.leader.replicas.version": (1, UpgradeType.UPGRADE)}))
