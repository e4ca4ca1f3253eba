"""Incremental config changes on topics, brokers and the cluster default; feature level updates."""

from __future__ import annotations

import pytest

from kraftlake.controller import ConfigChange, ConfigOp, NewTopic, UpgradeType
from kraftlake.controller.errors import (
    BrokerNotRegisteredError,
    InvalidConfigError,
    InvalidFeatureUpdateError,
    InvalidRequestError,
    UnknownTopicError,
)
from kraftlake.records import metadata_types as mt
from kraftlake.replay.configs import BROKER, TOPIC
from tests.controller.conftest import Harness


def test_topic_config_set_delete_append_subtract(harness: Harness) -> None:
    harness.register(0)
    harness.wait(harness.controller.create_topics([NewTopic("c", 1, 1, configs={"retention.ms": "1000"})]))
    mark = harness.offset()
    result = harness.wait(harness.controller.incremental_alter_configs(TOPIC, "c", [
        ConfigChange(ConfigOp.DELETE, "retention.ms"),
        ConfigChange(ConfigOp.SET, "min.insync.replicas", "1"),
        ConfigChange(ConfigOp.APPEND, "cleanup.policy", "delete,compact"),
    ]))
    assert result == {"min.insync.replicas": "1", "cleanup.policy": "delete,compact"}
    assert harness.records_after(mark) == [
        mt.ConfigRecord(resource_type=TOPIC, resource_name="c", name="cleanup.policy", value="delete,compact"),
        mt.ConfigRecord(resource_type=TOPIC, resource_name="c", name="min.insync.replicas", value="1"),
        mt.ConfigRecord(resource_type=TOPIC, resource_name="c", name="retention.ms", value=None),
        mt.ClearElrRecord(topic_name="c"),  # the topic's ELRs were computed against the old min ISR
    ]
    harness.wait(harness.controller.incremental_alter_configs(
        TOPIC, "c", [ConfigChange(ConfigOp.SUBTRACT, "cleanup.policy", "delete")]
    ))
    expected = {"min.insync.replicas": "1", "cleanup.policy": "compact"}
    assert dict(harness.image.configs.resources[(TOPIC, "c")]) == expected
    mark = harness.offset()
    harness.wait(harness.controller.incremental_alter_configs(
        TOPIC, "c", [ConfigChange(ConfigOp.SET, "min.insync.replicas", "1")]
    ))
    assert harness.records_after(mark) == []  # unchanged value: nothing written


def test_broker_and_cluster_configs(harness: Harness) -> None:
    harness.register(3)
    harness.wait(harness.controller.incremental_alter_configs(
        BROKER, "3", [ConfigChange(ConfigOp.SET, "num.io.threads", "16")]
    ))
    harness.wait(harness.controller.incremental_alter_configs(
        BROKER, "", [ConfigChange(ConfigOp.SET, "log.retention.ms", "3600000")]
    ))
    assert dict(harness.image.configs.resources[(BROKER, "3")]) == {"num.io.threads": "16"}
    assert dict(harness.image.configs.resources[(BROKER, "")]) == {"log.retention.ms": "3600000"}


def test_bad_config_changes_are_refused(harness: Harness) -> None:
    harness.register(0)
    harness.wait(harness.controller.create_topics([NewTopic("c", 1, 1)]))
    cases = [
        (TOPIC, "missing", [ConfigChange(ConfigOp.SET, "retention.ms", "1")], UnknownTopicError),
        (BROKER, "9", [ConfigChange(ConfigOp.SET, "num.io.threads", "1")], BrokerNotRegisteredError),
        (BROKER, "abc", [ConfigChange(ConfigOp.SET, "num.io.threads", "1")], InvalidRequestError),
        (TOPIC, "c", [ConfigChange(ConfigOp.SET, "retention.ms", "x")], InvalidConfigError),
        (TOPIC, "c", [ConfigChange(ConfigOp.SET, "no.such", "1")], InvalidConfigError),
        (TOPIC, "c", [ConfigChange(ConfigOp.SET, "min.insync.replicas", "0")], InvalidConfigError),
        (TOPIC, "c", [ConfigChange(ConfigOp.SET, "cleanup.policy", "sometimes")], InvalidConfigError),
        (TOPIC, "c", [ConfigChange(ConfigOp.SET, "retention.ms", None)], InvalidRequestError),
        (TOPIC, "c", [ConfigChange(ConfigOp.SET, "retention.ms", "1"), ConfigChange(ConfigOp.DELETE, "retention.ms")],
         InvalidRequestError),
        (BROKER, "", [ConfigChange(ConfigOp.SET, "unclean.leader.election.enable", "maybe")], InvalidConfigError),
    ]
    mark = harness.offset()
    for resource_type, name, changes, error in cases:
        with pytest.raises(error):
            harness.wait(harness.controller.incremental_alter_configs(resource_type, name, changes))
    assert harness.records_after(mark) == []


def test_feature_updates(harness: Harness) -> None:
    harness.register(0)
    mark = harness.offset()
    result = harness.wait(harness.controller.update_features({
        "group.version": (0, UpgradeType.SAFE_DOWNGRADE), "transaction.version": (1, UpgradeType.UNSAFE_DOWNGRADE),
    }))
    assert result == {"group.version": 0, "transaction.version": 1}
    assert harness.records_after(mark) == [
        mt.FeatureLevelRecord(name="group.version", feature_level=0),
        mt.FeatureLevelRecord(name="transaction.version", feature_level=1),
    ]
    expected = {"eligible.leader.replicas.version": 1, "share.version": 1, "streams.version": 1,
                "transaction.version": 1}
    assert dict(harness.image.features.finalized) == expected
    harness.wait(harness.controller.update_features({"transaction.version": (2, UpgradeType.UPGRADE)}))
    assert harness.image.features.finalized["transaction.version"] == 2


def test_metadata_version_upgrade_changes_record_versions(make_harness) -> None:
    h = make_harness(metadata_version="3.6")
    h.elect(1)
    h.register(0)
    h.wait(h.controller.update_features({"metadata.version": (29, UpgradeType.UPGRADE)}))
    h.wait(h.controller.create_topics([NewTopic("after", 1, 1)]))
    batches = h.log.committed_batches()
    versions = [r.version for b in batches for r in b.records if type(r.message) is mt.PartitionRecord]
    assert versions == [2]


def test_bad_feature_updates_are_refused(harness: Harness) -> None:
    harness.register(0, features={"metadata.version": (7, 29), "group.version": (0, 1), "transaction.version": (0, 2),
                                  "share.version": (0, 1), "streams.version": (0, 1),
                                  "eligible.leader.replicas.version": (0, 1)})
    cases = [
        ({"metadata.version": (20, UpgradeType.SAFE_DOWNGRADE)}, "cannot be downgraded"),
        ({"metadata.version": (30, UpgradeType.UPGRADE)}, "not supported by this controller"),
        ({"group.version": (0, UpgradeType.UPGRADE)}, "downgrade"),
        ({"transaction.version": (2, UpgradeType.SAFE_DOWNGRADE)}, None),  # no change at all: accepted
        ({"no.such.feature": (1, UpgradeType.UPGRADE)}, "unknown feature"),
        ({"kraft.version": (1, UpgradeType.UPGRADE)}, "Raft"),
        ({}, "no feature"),
    ]
    for updates, message in cases:
        if message is None:
            harness.wait(harness.controller.update_features(updates))
            continue
        with pytest.raises((InvalidFeatureUpdateError, InvalidRequestError), match=message):
            harness.wait(harness.controller.update_features(updates))


def test_feature_level_must_be_supported_by_every_broker(harness: Harness) -> None:
    harness.wait(harness.controller.update_features({"group.version": (0, UpgradeType.SAFE_DOWNGRADE)}))
    harness.register(0, features={"metadata.version": (7, 29), "transaction.version": (0, 2),
                                  "share.version": (0, 1), "streams.version": (0, 1),
                                  "eligible.leader.replicas.version": (0, 1)})
    with pytest.raises(InvalidFeatureUpdateError, match=r"broker 0 does not support group\.version"):
        harness.wait(harness.controller.update_features({"group.version": (1, UpgradeType.UPGRADE)}))
