"""Create/delete topics and create partitions: the records written, placement, and refused requests."""

from __future__ import annotations

from collections import Counter

import pytest

from kraftlake.controller import NewTopic
from kraftlake.controller.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicExistsError,
    UnknownTopicError,
)
from kraftlake.records import metadata_types as mt
from tests.controller.conftest import Harness


def _six_brokers(h: Harness) -> None:
    for broker_id in range(6):
        h.register(broker_id, rack=f"rack-{broker_id % 3}")


def test_create_topic_writes_topic_configs_and_partitions(harness: Harness) -> None:
    _six_brokers(harness)
    mark = harness.offset()
    outcome = harness.wait(harness.controller.create_topics(
        [NewTopic("orders", 12, 3, configs={"retention.ms": "-1", "cleanup.policy": "compact"})]
    ))["orders"]
    records = harness.records_after(mark)
    assert outcome.topic_id is not None
    assert records[0] == mt.TopicRecord(name="orders", topic_id=outcome.topic_id)
    assert records[1:3] == [
        mt.ConfigRecord(resource_type=2, resource_name="orders", name="cleanup.policy", value="compact"),
        mt.ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="-1"),
    ]
    partitions = records[3:]
    assert [p.partition_id for p in partitions] == list(range(12))
    for p in partitions:
        assert type(p) is mt.PartitionRecord
        assert len(set(p.replicas)) == 3
        assert len({f"rack-{b % 3}" for b in p.replicas}) == 3  # one replica per rack
        assert p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
    assert Counter(p.leader for p in partitions) == {b: 2 for b in range(6)}  # leaders striped evenly
    assert Counter(b for p in partitions for b in p.replicas) == {b: 6 for b in range(6)}
    assert harness.image.topics.by_name["orders"].topic_id == outcome.topic_id


def test_leaders_only_on_unfenced_brokers(harness: Harness) -> None:
    harness.register(0)
    harness.register(1)
    harness.register(2, unfence=False)  # registered, still fenced
    mark = harness.offset()
    harness.wait(harness.controller.create_topics([NewTopic("t", 9, 3)]))
    partitions = [r for r in harness.records_after(mark) if type(r) is mt.PartitionRecord]
    assert all(p.leader in (0, 1) for p in partitions)
    assert all(2 in p.replicas and 2 not in p.isr for p in partitions)  # a fenced replica is not in sync


def test_refused_topics_do_not_stop_valid_ones(harness: Harness) -> None:
    harness.register(0)
    harness.wait(harness.controller.create_topics([NewTopic("a.b", 1, 1)]))
    outcomes = harness.wait(harness.controller.create_topics([
        NewTopic("ok", 2, 1),
        NewTopic("a.b", 1, 1),
        NewTopic("a_b", 1, 1),
        NewTopic("bad name!", 1, 1),
        NewTopic("x" * 250, 1, 1),
        NewTopic("rf", 1, 2),
        NewTopic("zero", 0, 1),
        NewTopic("conf", 1, 1, configs={"retention.ms": "soon"}),
        NewTopic("unknown-conf", 1, 1, configs={"no.such.config": "1"}),
    ]))
    assert outcomes["ok"].error is None and outcomes["ok"].partitions == 2
    assert isinstance(outcomes["a.b"].error, TopicExistsError)
    assert isinstance(outcomes["a_b"].error, InvalidTopicError) and "collides" in str(outcomes["a_b"].error)
    assert isinstance(outcomes["bad name!"].error, InvalidTopicError)
    assert isinstance(outcomes["x" * 250].error, InvalidTopicError)
    assert isinstance(outcomes["rf"].error, InvalidReplicationFactorError)
    assert "only 1 broker(s) are registered" in str(outcomes["rf"].error)
    assert isinstance(outcomes["zero"].error, InvalidPartitionsError)
    assert isinstance(outcomes["conf"].error, InvalidConfigError) and "integer" in str(outcomes["conf"].error)
    assert isinstance(outcomes["unknown-conf"].error, InvalidConfigError)
    assert sorted(t.name for t in harness.image.topics.by_id.values()) == ["a.b", "ok"]


def test_no_unfenced_broker_means_no_topic(harness: Harness) -> None:
    harness.register(0, unfence=False)
    outcome = harness.wait(harness.controller.create_topics([NewTopic("t", 1, 1)]))["t"]
    assert isinstance(outcome.error, InvalidReplicationFactorError) and "fenced" in str(outcome.error)


def test_manual_assignment(harness: Harness) -> None:
    for b in range(3):
        harness.register(b)
    mark = harness.offset()
    harness.wait(harness.controller.create_topics([NewTopic("m", assignments={0: [2, 0], 1: [1, 2]})]))
    partitions = [r for r in harness.records_after(mark) if type(r) is mt.PartitionRecord]
    assert [(p.replicas, p.leader) for p in partitions] == [((2, 0), 2), ((1, 2), 1)]
    bad = harness.wait(harness.controller.create_topics([
        NewTopic("dup", assignments={0: [1, 1]}),
        NewTopic("ghost", assignments={0: [7]}),
        NewTopic("gap", assignments={0: [1], 2: [1]}),
    ]))
    assert all(isinstance(o.error, InvalidReplicaAssignmentError) for o in bad.values())


def test_delete_topics_removes_topic_and_configs(harness: Harness) -> None:
    harness.register(0)
    harness.wait(harness.controller.create_topics([NewTopic("gone", 2, 1, configs={"retention.ms": "1000"})]))
    topic_id = harness.image.topics.by_name["gone"].topic_id
    mark = harness.offset()
    outcomes = harness.wait(harness.controller.delete_topics(["gone", "never"]))
    assert outcomes["gone"].error is None
    assert isinstance(outcomes["never"].error, UnknownTopicError)
    assert harness.records_after(mark) == [mt.RemoveTopicRecord(topic_id=topic_id)]
    assert "gone" not in harness.image.topics.by_name
    assert not harness.image.configs.resources


def test_create_partitions(harness: Harness) -> None:
    for b in range(3):
        harness.register(b)
    harness.wait(harness.controller.create_topics([NewTopic("grow", 2, 2)]))
    mark = harness.offset()
    harness.wait(harness.controller.create_partitions("grow", 5))
    added = harness.records_after(mark)
    expected = [(mt.PartitionRecord, p, 2) for p in (2, 3, 4)]
    assert [(type(r), r.partition_id, len(r.replicas)) for r in added] == expected
    with pytest.raises(InvalidPartitionsError, match="currently has 5"):
        harness.wait(harness.controller.create_partitions("grow", 5))
    with pytest.raises(UnknownTopicError):
        harness.wait(harness.controller.create_partitions("nope", 5))
    with pytest.raises(InvalidReplicaAssignmentError):
        harness.wait(harness.controller.create_partitions("grow", 6, [[0]]))  # 1 replica where the topic has 2


def test_a_topic_bigger_than_a_batch_is_one_transaction(make_harness) -> None:
    h = make_harness(max_records_per_batch=100)
    h.elect(1)
    h.register(0)
    mark = h.offset()
    h.wait(h.controller.create_topics([NewTopic("big", 250, 1)]))
    records = h.records_after(mark)
    assert type(records[0]) is mt.BeginTransactionRecord and records[0].name == "createTopics"
    assert type(records[-1]) is mt.EndTransactionRecord
    assert len(records) == 1 + 1 + 250 + 1
    sizes = [len(b.records) for b in h.log.committed_batches() if b.base_offset > mark]
    assert sizes == [100, 100, 53]
    assert len(h.image.topics.by_name["big"].partitions) == 250


@pytest.mark.parametrize(("release", "partition_version", "register_version"), [
    ("3.6", 0, 2), ("3.7", 1, 3), ("4.2", 2, 3),
])
def test_record_versions_follow_the_metadata_version(make_harness, release: str, partition_version: int,
                                                    register_version: int) -> None:
    h = make_harness(metadata_version=release)
    h.elect(1)
    h.register(0)
    h.wait(h.controller.create_topics([NewTopic("v", 1, 1)]))
    versions = {type(r.message): r.version for b in h.log.committed_batches() for r in b.records}
    assert versions[mt.PartitionRecord] == partition_version
    assert versions[mt.RegisterBrokerRecord] == register_version
