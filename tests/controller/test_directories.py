"""JBOD (KIP-858): the exact records of AssignReplicasToDirs and of a broker reporting a failed directory,
after which leadership and ISR membership leave the replicas that directory held."""

from __future__ import annotations

import base64

from kraftlake.controller import BrokerRegistrationRequest, IsrChange, Listener, NewTopic
from kraftlake.controller.directories import DirectoryAssignment
from kraftlake.controller.errors import InvalidRequestError, NotLeaderOrFollowerError, UnknownTopicError
from kraftlake.controller.versions import SUPPORTED_FEATURES
from kraftlake.records import metadata_types as mt
from kraftlake.records.kafka_names import UNASSIGNED_DIRECTORY as U
from tests.controller.conftest import Harness, incarnation


def directory(broker_id: int, index: int) -> str:
    return base64.urlsafe_b64encode((5000 + broker_id * 10 + index).to_bytes(16, "big"))[:22].decode("ascii")


def _brokers_with_two_dirs(h: Harness) -> None:
    for b in range(3):
        request = BrokerRegistrationRequest(
            b, incarnation(b), [Listener("PLAINTEXT", "localhost", 9000 + b)], dict(SUPPORTED_FEATURES),
            log_dirs=(directory(b, 0), directory(b, 1)),
        )
        h.epochs[b] = h.wait(h.controller.register_broker(request))
        h.heartbeat(b)
    h.wait(h.controller.create_topics([NewTopic("t", assignments={0: [0, 1, 2]}),
                                       NewTopic("u", assignments={0: [1, 2]})]))


def test_replicas_are_assigned_to_directories(harness: Harness) -> None:
    _brokers_with_two_dirs(harness)
    topic_id = harness.image.topics.by_name["t"].topic_id
    other_id = harness.image.topics.by_name["u"].topic_id
    assert harness.partition("t", 0).directories == (U, U, U)  # several directories: the broker decides
    mark = harness.offset()
    result = harness.wait(harness.controller.assign_replicas_to_dirs(0, harness.epochs[0], [
        DirectoryAssignment(directory(0, 1), topic_id, 0),
        DirectoryAssignment(directory(0, 1), other_id, 0),  # broker 0 holds no replica of u-0
        DirectoryAssignment(directory(0, 1), "AAAAAAAAAAAAAAAAAAAAAw", 0),
    ]))
    assert result[topic_id][0] is None and isinstance(result[other_id][0], NotLeaderOrFollowerError)
    assert isinstance(result["AAAAAAAAAAAAAAAAAAAAAw"][0], UnknownTopicError)
    assert harness.records_after(mark) == [mt.PartitionChangeRecord(
        partition_id=0, topic_id=topic_id, directories=(directory(0, 1), U, U),
    )]
    assert harness.partition("t", 0).directories == (directory(0, 1), U, U)
    mark = harness.offset()
    result = harness.wait(harness.controller.assign_replicas_to_dirs(0, harness.epochs[0], [
        DirectoryAssignment("not-a-uuid", topic_id, 0),
    ]))
    assert isinstance(result[topic_id][0], InvalidRequestError) and harness.records_after(mark) == []


def test_a_failed_directory_moves_leadership_off_its_replicas(harness: Harness) -> None:
    _brokers_with_two_dirs(harness)
    topic_id = harness.image.topics.by_name["t"].topic_id
    harness.wait(harness.controller.assign_replicas_to_dirs(0, harness.epochs[0], [
        DirectoryAssignment(directory(0, 1), topic_id, 0),
    ]))
    assert harness.partition("t", 0).leader == 0
    mark = harness.offset()
    harness.heartbeat(0, offline_log_dirs=[directory(0, 1)])
    assert harness.records_after(mark) == [
        mt.PartitionChangeRecord(partition_id=0, topic_id=topic_id, isr=(1, 2), leader=1),
        mt.BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=harness.epochs[0], log_dirs=(directory(0, 0),)),
    ]
    assert harness.image.cluster.brokers[0].directories == (directory(0, 0),)
    mark = harness.offset()
    harness.heartbeat(0, offline_log_dirs=[directory(0, 1)])  # reported again: nothing new
    assert harness.records_after(mark) == []
    p = harness.partition("t", 0)
    [outcome] = harness.wait(harness.controller.alter_partition(1, harness.epochs[1], [  # broker 0 recovered it
        IsrChange("t", 0, p.leader_epoch, p.partition_epoch, (1, 2, 0)),
    ]))
    assert outcome.error is None
    mark = harness.offset()
    harness.wait(harness.controller.assign_replicas_to_dirs(0, harness.epochs[0], [  # into the failed one
        DirectoryAssignment(directory(0, 1), topic_id, 0),
    ]))
    assert harness.records_after(mark) == [
        mt.PartitionChangeRecord(partition_id=0, topic_id=topic_id, isr=(1, 2)),
    ]
