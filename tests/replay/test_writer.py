"""Images written back as records: ImageDowngradeTest (ID1, ID2: losses named, record versions chosen by
metadata.version), TopicsImageTest TI12 round trips, snapshot record order, and every written record
surviving the codec at the version it was written at."""

from __future__ import annotations

from typing import Any

import pytest

from kraftlake.image_schema.canonical import canonical_json
from kraftlake.records import decode_batch, encode_batch, make_batch
from kraftlake.records import metadata_types as mt
from kraftlake.replay.features import FeaturesImage
from kraftlake.replay.image import EMPTY_IMAGE, MetadataImage
from kraftlake.replay.writer import image_records, quorum_records
from tests.replay.builders import MV, P, T, apply_records, change, rich_records, uuid
from tests.replay.test_topics import image1

LATEST_MV = 29
FOO_ID = "5JPuABiJTPu2pQjpZWM6_A"


def replayed(records: list[tuple[Any, int]]) -> MetadataImage:
    return apply_records([message for message, _ in records])


def test_id1_pre_zk_migration_support_version() -> None:
    image = apply_records([
        MV(8),
        mt.RegisterBrokerRecord(broker_id=123, incarnation_id="XgjKo16hRWeWrTui0iR5Nw", broker_epoch=456, rack=None,
                                fenced=False, in_controlled_shutdown=True, is_migrating_zk_broker=True),
        T("foo", FOO_ID),
        mt.PartitionRecord(partition_id=0, topic_id=FOO_ID, replicas=(0, 1), isr=(0, 1), leader=0, leader_epoch=1,
                           partition_epoch=2),
    ])
    writer = image_records(image, 7)
    assert writer.losses == ["the isMigratingZkBroker state of one or more brokers"]
    assert writer.records == [
        (MV(7), 0),
        (mt.RegisterBrokerRecord(broker_id=123, incarnation_id="XgjKo16hRWeWrTui0iR5Nw", broker_epoch=456,
                                 rack=None, fenced=False, in_controlled_shutdown=True), 1),
        (T("foo", FOO_ID), 0),
        (mt.PartitionRecord(partition_id=0, topic_id=FOO_ID, replicas=(0, 1), isr=(0, 1), leader=0, leader_epoch=1,
                            partition_epoch=2), 0),
    ]


def test_id2_directory_assignment_state() -> None:
    dirs = ("c7QfSi6xSIGQVh3Qd5RJxA", "rWaCHejCRRiptDMvW5Xw0g")
    image = apply_records([
        MV(15),
        T("foo", FOO_ID),
        mt.PartitionRecord(partition_id=0, topic_id=FOO_ID, replicas=(0, 1), isr=(0, 1), leader=0, leader_epoch=1,
                           partition_epoch=2, directories=dirs),
    ])
    writer = image_records(image, 15)
    assert writer.losses == ["the directory assignment state of one or more replicas"]
    assert writer.records == [
        (MV(15), 0),
        (T("foo", FOO_ID), 0),
        (mt.PartitionRecord(partition_id=0, topic_id=FOO_ID, replicas=(0, 1), isr=(0, 1), leader=0, leader_epoch=1,
                            partition_epoch=2, directories=()), 0),
    ]


@pytest.mark.parametrize(
    ("level", "broker_version", "partition_version"),
    [(7, 1, 0), (8, 2, 0), (16, 2, 0), (17, 3, 1), (22, 3, 1), (23, 3, 2), (LATEST_MV, 3, 2), (30, 4, 2)],
)
def test_record_versions_follow_the_metadata_version(level: int, broker_version: int, partition_version: int) -> None:
    versions = {type(message): version for message, version in image_records(apply_records(rich_records()), level)
                .records}
    assert versions[mt.RegisterBrokerRecord] == broker_version
    assert versions[mt.PartitionRecord] == partition_version
    assert versions[mt.FeatureLevelRecord] == 0


def test_older_versions_name_what_they_lose() -> None:
    image = apply_records([*rich_records(), change("audit", 0, topic_id=uuid(801), eligible_leader_replicas=(0,))])
    assert image_records(image, LATEST_MV).losses == []
    assert image_records(image, 21).losses == ["the eligible leader replicas of one or more partitions"]
    assert set(image_records(image, 14).losses) == {
        "the directory assignment state of one or more brokers",
        "controller registrations",
        "the eligible leader replicas of one or more partitions",
    }
    assert mt.RegisterControllerRecord not in {type(m) for m, _ in image_records(image, 14).records}


def test_cordoned_directories_need_4_3_iv0() -> None:
    """Kafka's BrokerRegistration.toRecord: RegisterBrokerRecord v4 carries them from 4.3-IV0 (level 30);
    below, reported ones are a named loss, unreported ones (None) no loss."""
    cordoned = [mt.BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=20, cordoned_log_dirs=(uuid(9),))]
    image = apply_records([*rich_records(), *cordoned])
    written = {m.broker_id: m.cordoned_log_dirs for m, _ in image_records(image, 30).records
               if isinstance(m, mt.RegisterBrokerRecord)}
    assert written == {0: (uuid(9),), 1: None}  # broker 2 is unregistered by then
    assert image_records(image, 29).losses == ["the cordoned log directories of one or more brokers"]
    assert image_records(apply_records(rich_records()), 29).losses == []


def test_empty_elr_lists_are_left_out_as_kafka_does() -> None:
    image = apply_records([MV(LATEST_MV), T("foo"), P("foo", 0), P("foo", 1, eligible_leader_replicas=(1,),
                                                                   last_known_elr=(2,))])
    partitions = {m.partition_id: m for m, _ in image_records(image).records if isinstance(m, mt.PartitionRecord)}
    assert (partitions[0].eligible_leader_replicas, partitions[0].last_known_elr) == (None, None)
    assert (partitions[1].eligible_leader_replicas, partitions[1].last_known_elr) == ((1,), (2,))


def test_unknown_directories_are_no_loss() -> None:
    image = apply_records([MV(14), T("foo"), P("foo", 0, (1, 2, 3))])
    assert image_records(image, 14).losses == []


def test_cordoned_directories_need_metadata_version_4_3() -> None:
    """RegisterBrokerRecord v4 from 4.3-IV0 (level 30) carries them; below, they are a loss unless never reported."""
    register = mt.RegisterBrokerRecord(broker_id=1, broker_epoch=5, incarnation_id=uuid(1), log_dirs=(uuid(2),),
                                       cordoned_log_dirs=(uuid(2),))
    image = apply_records([MV(30), register])
    written = image_records(image)
    assert written.losses == []
    assert [(m.cordoned_log_dirs, v) for m, v in written.records if type(m) is mt.RegisterBrokerRecord] == [
        ((uuid(2),), 4)]
    assert apply_records([m for m, _ in written.records]).cluster == image.cluster
    assert image_records(image, 29).losses == ["the cordoned log directories of one or more brokers"]
    never_reported = apply_records([MV(29), register._replace(cordoned_log_dirs=None)])
    assert image_records(never_reported, 29).losses == []


def test_an_image_without_metadata_version_needs_one_named() -> None:
    with pytest.raises(ValueError, match=r"no metadata\.version"):
        image_records(apply_records([T("foo")]))


GROUPS: list[set[type]] = [
    {mt.FeatureLevelRecord},
    {mt.RegisterBrokerRecord, mt.RegisterControllerRecord},
    {mt.TopicRecord, mt.PartitionRecord},
    {mt.ConfigRecord},
    {mt.ClientQuotaRecord},
    {mt.ProducerIdsRecord},
    {mt.AccessControlEntryRecord},
    {mt.UserScramCredentialRecord},
    {mt.DelegationTokenRecord},
]


def test_snapshot_record_order() -> None:
    records = [m for m, _ in image_records(apply_records(rich_records())).records]
    assert records[0] == MV(21), "metadata.version first: it decides how later records decode"
    group_of = [next(i for i, group in enumerate(GROUPS) if type(m) in group) for m in records]
    assert group_of == sorted(group_of)
    assert sorted(set(group_of)) == list(range(len(GROUPS)))
    brokers = [type(m) for m in records if type(m) in GROUPS[1]]
    assert brokers == sorted(brokers, key=lambda t: t is mt.RegisterControllerRecord)
    topic_ids_seen: list[str] = []
    for message in records:
        if isinstance(message, mt.TopicRecord):
            topic_ids_seen.append(message.topic_id)
        elif isinstance(message, mt.PartitionRecord):
            assert message.topic_id == topic_ids_seen[-1], "partitions follow their own TopicRecord"


def test_ti12_empty_image_round_trip() -> None:
    writer = image_records(EMPTY_IMAGE, LATEST_MV)
    assert writer.records == [(MV(LATEST_MV), 0)]
    assert replayed(writer.records) == MetadataImage(provenance=replayed([]).provenance,
                                                     features=FeaturesImage(LATEST_MV))


@pytest.mark.parametrize("build", [image1, lambda: apply_records(rich_records())], ids=["image1", "rich"])
def test_ti12_image_round_trip_at_the_latest_metadata_version(build: Any) -> None:
    image = build()
    writer = image_records(image, LATEST_MV)
    assert writer.losses == []
    back = replayed(writer.records)
    assert back.features.metadata_version == LATEST_MV
    for name in ("cluster", "topics", "configs", "client_quotas", "producer_ids", "acls", "scram",
                 "delegation_tokens"):
        assert getattr(back, name) == getattr(image, name), name
    assert back.features.finalized == image.features.finalized


def test_round_trip_at_the_images_own_version_is_the_identity() -> None:
    image = apply_records(rich_records(), offset=7)
    back = apply_records([*quorum_records(image), *(m for m, _ in image_records(image).records)], offset=7)
    assert back == image
    assert canonical_json(back) == canonical_json(image)


@pytest.mark.parametrize("level", [7, 8, 14, 15, 17, 21, 23, LATEST_MV])
def test_every_written_record_survives_the_codec_at_its_version(level: int) -> None:
    image = apply_records([*rich_records(), change("audit", 0, topic_id=uuid(801), eligible_leader_replicas=(0,)),
                           mt.RegisterBrokerRecord(broker_id=9, is_migrating_zk_broker=True,
                                                   in_controlled_shutdown=True, log_dirs=(uuid(1),))])
    for message, version in image_records(image, level).records:
        batch = make_batch(0, 1, 0, [message], versions={type(message): version})
        decoded = decode_batch(encode_batch(batch)).records[0]
        assert (decoded.message, decoded.version) == (message, version)
