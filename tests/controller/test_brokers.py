"""Broker lifecycle: registration and its epoch, unfencing once caught up, fencing on session expiry,
controlled shutdown, re-registration, unregistration."""

from __future__ import annotations

import pytest

from kraftlake.controller import BrokerRegistrationRequest, BrokerState, Listener, NewTopic
from kraftlake.controller.errors import (
    BrokerNotRegisteredError,
    DuplicateBrokerRegistrationError,
    InvalidRequestError,
    StaleBrokerEpochError,
    UnsupportedVersionError,
)
from kraftlake.records import metadata_types as mt
from tests.controller.conftest import Harness, incarnation


def test_broker_epoch_is_the_offset_of_its_registration(harness: Harness) -> None:
    mark = harness.offset()
    epoch = harness.register(4, rack="r1", unfence=False)
    [record] = harness.records_after(mark)
    assert type(record) is mt.RegisterBrokerRecord
    assert epoch == record.broker_epoch == mark + 1
    assert (record.broker_id, record.rack, record.fenced) == (4, "r1", True)
    assert record.end_points[0].port == 9004
    assert {f.name for f in record.features} >= {"metadata.version"}
    assert harness.image.cluster.brokers[4].fenced


def test_unfenced_only_once_caught_up(harness: Harness) -> None:
    epoch = harness.register(1, unfence=False)
    reply = harness.wait(harness.controller.broker_heartbeat(1, epoch, epoch - 1))
    assert reply.state is BrokerState.FENCED and not reply.is_caught_up
    mark = harness.offset()
    reply = harness.wait(harness.controller.broker_heartbeat(1, epoch, epoch))
    assert reply.state is BrokerState.UNFENCED
    assert harness.records_after(mark) == [
        mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=epoch, fenced=-1, in_controlled_shutdown=0)
    ]
    assert not harness.image.cluster.brokers[1].fenced
    mark = harness.offset()
    assert harness.heartbeat(1).state is BrokerState.UNFENCED
    assert harness.records_after(mark) == []  # a steady heartbeat writes nothing


def test_registration_is_checked(harness: Harness) -> None:
    def request(**overrides: object) -> BrokerRegistrationRequest:
        fields: dict[str, object] = {
            "broker_id": 3, "incarnation_id": incarnation(3), "listeners": [Listener("PLAINTEXT", "h", 1)],
            "features": {"metadata.version": (7, 29), "group.version": (0, 1), "transaction.version": (0, 2),
                         "share.version": (0, 1), "streams.version": (0, 1),
                         "eligible.leader.replicas.version": (0, 1)},
        }
        return BrokerRegistrationRequest(**{**fields, **overrides})  # type: ignore[arg-type]

    with pytest.raises(InvalidRequestError):
        harness.wait(harness.controller.register_broker(request(broker_id=-1)))
    with pytest.raises(InvalidRequestError):
        harness.wait(harness.controller.register_broker(request(listeners=[])))
    with pytest.raises(InvalidRequestError, match="incarnation"):
        harness.wait(harness.controller.register_broker(request(incarnation_id="not-a-uuid")))
    full = request().features
    with pytest.raises(UnsupportedVersionError, match=r"metadata\.version levels 7\.\.20"):
        harness.wait(harness.controller.register_broker(request(features={**full, "metadata.version": (7, 20)})))
    with pytest.raises(UnsupportedVersionError, match=r"eligible\.leader\.replicas\.version"):
        harness.wait(harness.controller.register_broker(request(features={"metadata.version": (7, 29)})))
    assert harness.wait(harness.controller.register_broker(request())) > 0


def test_heartbeats_are_checked(harness: Harness) -> None:
    epoch = harness.register(1)
    with pytest.raises(BrokerNotRegisteredError):
        harness.wait(harness.controller.broker_heartbeat(9, epoch, 0))
    with pytest.raises(StaleBrokerEpochError):
        harness.wait(harness.controller.broker_heartbeat(1, epoch - 1, 0))


def _cluster_with_topic(h: Harness) -> str:
    for b in range(3):
        h.register(b)
    h.wait(h.controller.create_topics([NewTopic("t", 6, 3)]))
    return h.image.topics.by_name["t"].topic_id


def test_fencing_after_the_session_timeout(harness: Harness) -> None:
    topic_id = _cluster_with_topic(harness)
    led = {p for p, part in harness.image.topics.by_name["t"].partitions.items() if part.leader == 2}
    harness.clock.advance(5_000)
    harness.heartbeat(0)
    harness.heartbeat(1)
    harness.clock.advance(5_000)  # broker 2 last heard of 10 s ago, the others 5 s ago
    mark = harness.offset()
    harness.wait(harness.controller.run_periodic_tasks())
    records = harness.records_after(mark)
    assert records[0] == mt.BrokerRegistrationChangeRecord(
        broker_id=2, broker_epoch=harness.epochs[2], fenced=1, in_controlled_shutdown=0
    )
    changes = records[1:]
    assert sorted(c.partition_id for c in changes) == list(range(6))  # broker 2 was in every ISR
    for change in changes:
        assert type(change) is mt.PartitionChangeRecord and change.topic_id == topic_id
        assert change.isr is not None and 2 not in change.isr
        assert (change.leader != -2) == (change.partition_id in led)  # a new leader only where 2 led
    assert harness.image.cluster.brokers[2].fenced
    assert all(p.leader != 2 and 2 not in p.isr for p in harness.image.topics.by_name["t"].partitions.values())
    mark = harness.offset()
    harness.wait(harness.controller.run_periodic_tasks())
    assert harness.records_after(mark) == []  # fenced once


def test_last_isr_member_stays_in_the_isr_without_a_leader(make_harness) -> None:
    harness = make_harness(bootstrap_features={})  # without ELRs (see test_elr.py for the ISR emptying)
    harness.elect(1)
    harness.register(0)
    harness.wait(harness.controller.create_topics([NewTopic("solo", 1, 1)]))
    harness.clock.advance(10_000)
    harness.wait(harness.controller.run_periodic_tasks())
    partition = harness.partition("solo", 0)
    assert (partition.leader, partition.isr, partition.leader_epoch) == (-1, (0,), 1)
    harness.clock.advance(1)
    epoch = harness.register(0, generation=0)  # same incarnation, session expired: comes back fenced
    assert harness.image.cluster.brokers[0].epoch == epoch
    assert harness.partition("solo", 0).leader == 0  # unfencing re-elects it where it is the ISR


def test_controlled_shutdown_moves_leaders_first(harness: Harness) -> None:
    _cluster_with_topic(harness)
    mark = harness.offset()
    reply = harness.heartbeat(1, want_shutdown=True)
    assert reply.state is BrokerState.CONTROLLED_SHUTDOWN
    records = harness.records_after(mark)
    assert records[0] == mt.BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=harness.epochs[1], fenced=0, in_controlled_shutdown=1
    )
    assert all(type(r) is mt.PartitionChangeRecord and r.isr is not None and 1 not in r.isr for r in records[1:])
    assert all(p.leader != 1 for p in harness.image.topics.by_name["t"].partitions.values())
    # The others have not reported the moves yet: broker 1 must keep waiting.
    assert harness.heartbeat(1, want_shutdown=True).state is BrokerState.CONTROLLED_SHUTDOWN
    harness.heartbeat(0)
    harness.heartbeat(2)
    mark = harness.offset()
    assert harness.heartbeat(1, want_shutdown=True).state is BrokerState.SHUTDOWN_NOW
    assert harness.records_after(mark) == [mt.BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=harness.epochs[1], fenced=1, in_controlled_shutdown=0
    )]


def test_shutdown_of_a_broker_leading_nothing_is_immediate(harness: Harness) -> None:
    harness.register(0)
    assert harness.heartbeat(0, want_shutdown=True).state is BrokerState.SHUTDOWN_NOW
    assert harness.image.cluster.brokers[0].fenced


def test_a_new_incarnation_is_refused_while_the_old_one_heartbeats(harness: Harness) -> None:
    _cluster_with_topic(harness)
    with pytest.raises(DuplicateBrokerRegistrationError):
        harness.register(2, generation=1)
    harness.clock.advance(10_000)
    harness.heartbeat(0)
    harness.heartbeat(1)
    mark = harness.offset()
    harness.register(2, generation=1, unfence=False)  # the old one went silent: it crashed
    records = harness.records_after(mark)
    assert type(records[-1]) is mt.RegisterBrokerRecord and records[-1].incarnation_id == incarnation(2, 1)
    assert records[:-1] and all(
        type(r) is mt.PartitionChangeRecord and r.isr is not None and 2 not in r.isr for r in records[:-1]
    )


def test_unregister(harness: Harness) -> None:
    _cluster_with_topic(harness)
    mark = harness.offset()
    harness.wait(harness.controller.unregister_broker(0))
    records = harness.records_after(mark)
    assert records[-1] == mt.UnregisterBrokerRecord(broker_id=0, broker_epoch=harness.epochs[0])
    assert len(records) == 7  # six partitions lose broker 0 from their ISR first
    assert 0 not in harness.image.cluster.brokers
    with pytest.raises(BrokerNotRegisteredError):
        harness.wait(harness.controller.unregister_broker(0))
