"""Topics and partitions: Kafka's TopicsImageTest (TI1, TI2, TI4, TI7-TI10, TI13) and the
PartitionRegistration.merge rules of PartitionChangeRecord."""

from __future__ import annotations

import pytest

from kraftlake.records import metadata_types as mt
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import EMPTY_IMAGE, MetadataImage, Provenance
from kraftlake.replay.topics import (
    MIGRATING_DIRECTORY,
    PartitionRegistration,
    TopicsDelta,
    TopicsImage,
)
from tests.replay.builders import P, T, apply_records, change, remove, uuid

FOO_ID = "ThIaNwRnSM2Nt9Mx1v0RvA"
BAR_ID = "f62ptyETTjet8SL5ZeREiw"
BAZ_ID = uuid(300)
NEW_FOO_ID = uuid(301)
BAM_ID = uuid(302)


def partition(image: MetadataImage, name: str, partition_id: int) -> PartitionRegistration:
    return image.topics.by_name[name].partitions[partition_id]


def image1() -> MetadataImage:
    """TopicsImageTest's IMAGE1: foo with three partitions, bar with one under reassignment."""
    return apply_records([
        T("foo", FOO_ID),
        P("foo", 0, (2, 3, 4), topic_id=FOO_ID, leader=2, leader_epoch=1, partition_epoch=345),
        P("foo", 1, (3, 4, 5), topic_id=FOO_ID, leader=3, leader_epoch=4, partition_epoch=684),
        P("foo", 2, (2, 4, 5), topic_id=FOO_ID, isr=(2, 4), leader=2, leader_epoch=10, partition_epoch=84),
        T("bar", BAR_ID),
        P("bar", 0, (0, 1, 2, 3, 4), topic_id=BAR_ID, isr=(0, 1, 2, 3), removing_replicas=(1,),
          adding_replicas=(3, 4), leader=0, leader_epoch=1, partition_epoch=345),
    ])


def test_ti1_apply_delta() -> None:
    before = image1()
    after = apply_records([
        remove("foo", FOO_ID),
        change("bar", 0, topic_id=BAR_ID, leader=1),
        T("baz", BAZ_ID),
        P("baz", 0, (1, 2, 3, 4), topic_id=BAZ_ID, isr=(3, 4), removing_replicas=(2,), adding_replicas=(1,),
          leader=3, leader_epoch=2, partition_epoch=1),
        T("foo", NEW_FOO_ID),
        T("bam", BAM_ID),
        remove("bam", BAM_ID),
    ], before)
    assert set(after.topics.by_name) == {"foo", "bar", "baz"}
    assert set(after.topics.by_id) == {NEW_FOO_ID, BAR_ID, BAZ_ID}
    assert after.topics.by_name["foo"].topic_id == NEW_FOO_ID
    assert dict(after.topics.by_name["foo"].partitions) == {}
    old_bar = partition(before, "bar", 0)
    assert partition(after, "bar", 0) == old_bar._replace(leader=1, leader_epoch=2, partition_epoch=346)
    assert partition(after, "baz", 0) == PartitionRegistration(
        replicas=(1, 2, 3, 4), directories=(MIGRATING_DIRECTORY,) * 4, isr=(3, 4), removing_replicas=(2,),
        adding_replicas=(1,), elr=(), last_known_elr=(), leader=3, leader_recovery_state=0, leader_epoch=2,
        partition_epoch=1,
    )


def test_ti2_create_then_delete_in_one_delta_is_neither_created_nor_deleted() -> None:
    delta = TopicsDelta(TopicsImage())
    delta.replay_topic(T("test", FOO_ID))
    assert delta.created == {"test": FOO_ID}
    assert FOO_ID in delta.changed and FOO_ID not in delta.deleted
    delta.replay_remove_topic(remove("test", FOO_ID))
    assert delta.created == {} and FOO_ID not in delta.changed and FOO_ID not in delta.deleted
    assert delta.apply().is_empty()


def test_ti4_delete_after_changes_removes_the_topic_and_its_configs() -> None:
    zoo_id = uuid(310)
    before = apply_records([
        T("zoo", zoo_id),
        P("zoo", 0, (3, 1, 2), topic_id=zoo_id),
        mt.ConfigRecord(resource_type=2, resource_name="zoo", name="retention.ms", value="1"),
        mt.ConfigRecord(resource_type=2, resource_name="other", name="retention.ms", value="2"),
    ])
    delta = MetadataDelta(before)
    delta.replay(change("zoo", 0, topic_id=zoo_id, leader=1))
    delta.replay(remove("zoo", zoo_id))
    topics = delta.deltas["topics"]
    assert topics.deleted == {zoo_id} and zoo_id not in topics.changed
    after = delta.apply(Provenance())
    assert after.topics.is_empty()
    assert [r.resource_name for r in after.configs.resources] == ["other"]


def test_removing_an_unknown_topic_fails() -> None:
    with pytest.raises(ReplayError, match=f"Unable to delete topic with id {FOO_ID}: no such topic found."):
        apply_records([remove("foo", FOO_ID)])


def test_removing_a_topic_twice_fails() -> None:
    with pytest.raises(ReplayError, match="no such topic found"):
        apply_records([remove("foo", FOO_ID), remove("foo", FOO_ID)], image1())


def test_partition_records_need_their_topic() -> None:
    with pytest.raises(ReplayError, match=f"Unable to find topic with id {FOO_ID}"):
        apply_records([P("foo", 0, topic_id=FOO_ID)])
    with pytest.raises(ReplayError, match=f"Unable to find topic with id {FOO_ID}"):
        apply_records([remove("foo", FOO_ID), P("foo", 0, topic_id=FOO_ID)], image1())


def test_partition_change_needs_its_partition() -> None:
    with pytest.raises(ReplayError, match=f"Unable to find partition {FOO_ID}:7"):
        apply_records([change("foo", 7, topic_id=FOO_ID, leader=1)], image1())


def test_a_topic_recreated_under_a_new_id_replaces_the_old_one() -> None:
    after = apply_records([T("foo", NEW_FOO_ID), P("foo", 0, (9,), topic_id=NEW_FOO_ID)], image1())
    assert FOO_ID not in after.topics.by_id
    assert after.topics.by_name["foo"] is after.topics.by_id[NEW_FOO_ID]
    assert partition(after, "foo", 0).replicas == (9,)


def test_remove_and_recreate_in_one_delta_equals_two_deltas() -> None:
    records = [remove("foo", FOO_ID), T("foo", NEW_FOO_ID), P("foo", 0, (1, 2), topic_id=NEW_FOO_ID)]
    one = apply_records(records, image1())
    two = apply_records(records[1:], apply_records(records[:1], image1()))
    assert one.topics == two.topics
    assert set(one.topics.by_id) == {NEW_FOO_ID, BAR_ID}


def test_ti13_views_by_name_and_by_id_are_read_only_and_agree() -> None:
    topics = image1().topics
    assert {name: t.topic_id for name, t in topics.by_name.items()} == {"foo": FOO_ID, "bar": BAR_ID}
    assert {tid: t.name for tid, t in topics.by_id.items()} == {FOO_ID: "foo", BAR_ID: "bar"}
    assert "baz" not in topics.by_name
    with pytest.raises(TypeError):
        topics.by_name["baz"] = topics.by_name["foo"]  # type: ignore[index]
    assert topics.partition_count() == 4


def test_untouched_topics_are_shared_between_images() -> None:
    before = image1()
    after = apply_records([change("foo", 0, topic_id=FOO_ID, isr=(2,))], before)
    assert after.topics.by_name["bar"] is before.topics.by_name["bar"]
    assert after.topics.by_name["foo"].partitions[1] is before.topics.by_name["foo"].partitions[1]
    assert after.cluster is before.cluster


# -- PartitionRecord / PartitionChangeRecord ----------------------------------------------------------


def test_partition_record_replaces_the_whole_partition() -> None:
    after = apply_records([P("foo", 0, (7, 8), topic_id=FOO_ID, leader=8, leader_epoch=50, partition_epoch=60)],
                          image1())
    assert partition(after, "foo", 0) == PartitionRegistration(
        replicas=(7, 8), directories=(MIGRATING_DIRECTORY,) * 2, isr=(7, 8), removing_replicas=(),
        adding_replicas=(), elr=(), last_known_elr=(), leader=8, leader_recovery_state=0, leader_epoch=50,
        partition_epoch=60,
    )


def test_partition_record_keeps_given_directories_and_elr() -> None:
    dirs = (uuid(1), uuid(2))
    after = apply_records([P("foo", 0, (1, 2), topic_id=FOO_ID, directories=dirs, eligible_leader_replicas=(2,),
                             last_known_elr=(1,))], image1())
    p = partition(after, "foo", 0)
    assert (p.directories, p.elr, p.last_known_elr) == (dirs, (2,), (1,))


def test_absent_change_fields_leave_the_partition_as_it_was_but_the_partition_epoch_moves() -> None:
    before = partition(image1(), "bar", 0)
    after = partition(apply_records([change("bar", 0, topic_id=BAR_ID)], image1()), "bar", 0)
    assert after == before._replace(partition_epoch=before.partition_epoch + 1)


def test_a_leader_change_bumps_the_leader_epoch_even_to_the_same_leader() -> None:
    before = partition(image1(), "foo", 0)
    after = partition(apply_records([change("foo", 0, topic_id=FOO_ID, leader=before.leader)], image1()), "foo", 0)
    assert (after.leader, after.leader_epoch, after.partition_epoch) == (
        before.leader, before.leader_epoch + 1, before.partition_epoch + 1)
    no_leader = partition(apply_records([change("foo", 0, topic_id=FOO_ID, leader=-1)], image1()), "foo", 0)
    assert (no_leader.leader, no_leader.leader_epoch) == (-1, before.leader_epoch + 1)


def test_every_present_change_field_is_applied() -> None:
    dirs = (uuid(11), uuid(12), uuid(13))
    after = partition(apply_records([change(
        "bar", 0, topic_id=BAR_ID, isr=(2, 3), replicas=(2, 3, 4), removing_replicas=(), adding_replicas=(4,),
        leader_recovery_state=1, directories=dirs, eligible_leader_replicas=(4,), last_known_elr=(0,),
    )], image1()), "bar", 0)
    assert after == PartitionRegistration(
        replicas=(2, 3, 4), directories=dirs, isr=(2, 3), removing_replicas=(), adding_replicas=(4,), elr=(4,),
        last_known_elr=(0,), leader=0, leader_recovery_state=1, leader_epoch=1, partition_epoch=346,
    )
    recovered = partition(apply_records([change("bar", 0, topic_id=BAR_ID, leader_recovery_state=0)],
                                        apply_records([change("bar", 0, topic_id=BAR_ID, leader_recovery_state=1)],
                                                      image1())), "bar", 0)
    assert recovered.leader_recovery_state == 0


def test_a_replica_change_without_directories_resizes_unknown_directories_only() -> None:
    """Before 3.7-IV2 no record carries directories: a reassignment keeps them 'unknown' for every replica."""
    resized = partition(apply_records([change("foo", 0, topic_id=FOO_ID, replicas=(1, 2))], image1()), "foo", 0)
    assert resized.directories == (MIGRATING_DIRECTORY,) * 2
    dirs = (uuid(21), uuid(22), uuid(23))
    assigned = apply_records([P("foo", 0, (2, 3, 4), topic_id=FOO_ID, directories=dirs)], image1())
    kept = partition(apply_records([change("foo", 0, topic_id=FOO_ID, replicas=(2, 3, 4))], assigned), "foo", 0)
    assert kept.directories == dirs


def test_a_replica_change_without_directories_keeps_the_directories_as_they_were() -> None:
    """Kafka's PartitionRegistration.merge (4.4, checked against Kafka's own image in test_kafka_oracle): the
    directories stay where they were, they do not follow their replicas (the controller writes them with every
    replica change from 3.7-IV2 on); a change of the replica count without them cannot apply."""
    dirs = (uuid(21), uuid(22), uuid(23))
    assigned = apply_records([P("foo", 0, (2, 3, 4), topic_id=FOO_ID, directories=dirs)], image1())
    moved = partition(apply_records([change("foo", 0, topic_id=FOO_ID, replicas=(4, 2, 5))], assigned), "foo", 0)
    assert moved.directories == dirs
    with pytest.raises(ReplayError, match="The lengths for replicas and directories do not match"):
        apply_records([change("foo", 0, topic_id=FOO_ID, replicas=(2, 3, 4, 5))], assigned)
    unchanged = partition(apply_records([change("foo", 0, topic_id=FOO_ID, isr=(2,))], assigned), "foo", 0)
    assert unchanged.directories == dirs
    given = (uuid(31), uuid(32))
    explicit = apply_records([change("foo", 0, topic_id=FOO_ID, replicas=(2, 3), directories=given)], assigned)
    assert partition(explicit, "foo", 0).directories == given


# -- ClearElrRecord -----------------------------------------------------------------------------------


def test_ti7_clear_elr_for_one_topic_and_for_all_topics() -> None:
    first = apply_records([
        T("foo", FOO_ID), P("foo", 0, (0, 1, 2, 3), topic_id=FOO_ID),
        change("foo", 0, topic_id=FOO_ID, isr=(0, 1), eligible_leader_replicas=(2,), last_known_elr=(3,)),
    ])
    foo0 = partition(first, "foo", 0)
    assert (len(foo0.elr), len(foo0.last_known_elr)) == (1, 1)
    second = apply_records([
        T("bar", BAR_ID),
        P("bar", 0, (0, 1, 2, 3), topic_id=BAR_ID, leader=0, isr=(1,), eligible_leader_replicas=(2,),
          last_known_elr=(3,)),
        mt.ClearElrRecord(topic_name="bar"),
        mt.ClearElrRecord(topic_name=""),
    ], first)
    for name in ("foo", "bar"):
        p = partition(second, name, 0)
        assert (p.elr, p.last_known_elr) == ((), ())
    assert partition(second, "foo", 0).partition_epoch == foo0.partition_epoch + 1
    assert partition(second, "bar", 0).partition_epoch == 1, "cleared once by name; the second clear finds no ELR"


@pytest.mark.parametrize("name", ["foo", "non-exist"])
def test_ti8_clear_elr_for_a_missing_topic_fails(name: str) -> None:
    with pytest.raises(ReplayError, match=f"Unable to clear elr for topic with name {name}: no such topic found."):
        apply_records([mt.ClearElrRecord(topic_name=name)])


def test_clear_elr_of_a_topic_removed_in_the_delta_fails() -> None:
    with pytest.raises(ReplayError, match="Unable to clear elr for topic with name foo"):
        apply_records([remove("foo", FOO_ID), mt.ClearElrRecord(topic_name="foo")], image1())


@pytest.mark.parametrize("by_name", [False, True], ids=["ti9_all", "ti10_single"])
def test_ti9_ti10_clear_elr_for_topics_deleted_and_recreated_in_the_delta(by_name: bool) -> None:
    foo_id2, bar_id, bar_id2 = uuid(320), uuid(321), uuid(322)
    base = apply_records([T("foo", FOO_ID), P("foo", 0, (0, 1, 2, 3), topic_id=FOO_ID)])
    clears = [mt.ClearElrRecord(topic_name="foo"), mt.ClearElrRecord(topic_name="bar")] if by_name else [
        mt.ClearElrRecord(topic_name="")]
    after = apply_records([
        remove("foo", FOO_ID),
        T("foo", foo_id2),
        P("foo", 0, (0, 1, 2, 3), topic_id=foo_id2, isr=(0, 1), eligible_leader_replicas=(2,), last_known_elr=(3,)),
        T("bar", bar_id),
        P("bar", 0, (0, 1, 2, 3), topic_id=bar_id),
        remove("bar", bar_id),
        T("bar", bar_id2),
        P("bar", 0, (0, 1, 2, 3), topic_id=bar_id2, eligible_leader_replicas=(2,), last_known_elr=(3,)),
        *clears,
    ], base)
    assert set(after.topics.by_id) == {foo_id2, bar_id2}
    assert {t.topic_id for t in after.topics.by_name.values()} == {foo_id2, bar_id2}
    for topic_id in (foo_id2, bar_id2):
        p = after.topics.by_id[topic_id].partitions[0]
        assert (p.elr, p.last_known_elr) == ((), ())


def test_clear_elr_for_all_leaves_topics_without_elr_untouched() -> None:
    before = apply_records([
        T("foo", FOO_ID), P("foo", 0, topic_id=FOO_ID),
        T("bar", BAR_ID), P("bar", 0, topic_id=BAR_ID, eligible_leader_replicas=(1,)),
    ])
    after = apply_records([mt.ClearElrRecord(topic_name="")], before)
    assert after.topics.by_id[FOO_ID] is before.topics.by_id[FOO_ID]
    assert after.topics.by_id[BAR_ID].partitions[0].elr == ()


def test_topics_image_of_empty_image_is_empty() -> None:
    assert EMPTY_IMAGE.topics.is_empty() and EMPTY_IMAGE.topics.partition_count() == 0
