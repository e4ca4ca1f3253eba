"""metadata.version levels, the features this controller can finalize, and the record versions each level
allows (Kafka's MetadataVersion): the controller never writes a record a reader at that level cannot read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftlake.records import metadata_types as mt

MINIMUM_METADATA_VERSION = 7  # 3.3-IV3, the oldest level Kafka 4.x replays
MV_3_4_IV0 = 8
MV_3_6_IV1 = 13  # metadata transactions (KIP-868)
MV_3_6_IV2 = 14  # no leader epoch bump when an ISR shrinks
MV_3_7_IV0 = 15  # controller registrations
MV_3_7_IV2 = 17  # directory assignment (PartitionRecord v1, RegisterBrokerRecord v3)
MV_4_0_IV1 = 23  # eligible leader replicas fields (PartitionRecord v2)
MV_4_1_IV0 = 26  # eligible leader replicas on by default for new clusters
LATEST_METADATA_VERSION = 29  # 4.2-IV1

RELEASE_LEVELS: dict[str, int] = {
    "3.3": 7, "3.4": 8, "3.5": 11, "3.6": 14, "3.7": 19, "3.8": 20, "3.9": 21,
    "4.0": 25, "4.1": 27, "4.2": 29,
}

METADATA_VERSION = "metadata.version"
ELIGIBLE_LEADER_REPLICAS_VERSION = "eligible.leader.replicas.version"

# feature -> (min, max) level this controller supports; level 0 means "not finalized".
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (MINIMUM_METADATA_VERSION, LATEST_METADATA_VERSION),
    "group.version": (0, 1),
    "transaction.version": (0, 2),
    "share.version": (0, 1),
    "streams.version": (0, 1),
    ELIGIBLE_LEADER_REPLICAS_VERSION: (0, 1),
}

# The metadata.version a feature level needs (Kafka's feature dependencies).
FEATURE_DEPENDENCIES: dict[tuple[str, int], int] = {(ELIGIBLE_LEADER_REPLICAS_VERSION, 1): MV_4_0_IV1}

# What a new cluster finalizes besides metadata.version (Kafka 4.2's production defaults).
DEFAULT_BOOTSTRAP_FEATURES: dict[str, int] = {
    "group.version": 1,
    "transaction.version": 2,
    "share.version": 1,
    "streams.version": 1,
}


def default_bootstrap_features(metadata_version: int) -> dict[str, int]:
    """Kafka's defaults for a new cluster at `metadata_version`: ELRs from 4.1-IV0 on."""
    levels = dict(DEFAULT_BOOTSTRAP_FEATURES)
    if metadata_version >= MV_4_1_IV0:
        levels[ELIGIBLE_LEADER_REPLICAS_VERSION] = 1
    return levels


def parse_metadata_version(text: str | int) -> int:
    """A level number ("29") or a release ("4.2", "4.2-IV1") as a metadata.version level."""
    if isinstance(text, int):
        level = text
    elif text.isdigit():
        level = int(text)
    else:
        release = text.split("-", 1)[0]
        if release not in RELEASE_LEVELS:
            raise ValueError(f"unknown release {text!r}: known releases are {', '.join(RELEASE_LEVELS)}")
        level = RELEASE_LEVELS[release]
        if "-IV" in text:
            base = {"3.3": 4, "3.4": 8, "3.5": 9, "3.6": 12, "3.7": 15, "3.8": 20, "3.9": 21,
                    "4.0": 22, "4.1": 26, "4.2": 28}[release]
            level = base + int(text.split("-IV", 1)[1])
    low, high = SUPPORTED_FEATURES[METADATA_VERSION]
    if not low <= level <= high:
        raise ValueError(f"metadata.version {level} is outside the supported range {low}..{high}")
    return level


def record_versions(metadata_version: int) -> Mapping[type, int]:
    """The version of each record type a writer at `metadata_version` uses (types absent: version 0)."""
    directories = metadata_version >= MV_3_7_IV2
    partition_version = 2 if metadata_version >= MV_4_0_IV1 else 1 if directories else 0
    return {
        mt.RegisterBrokerRecord: 3 if directories else 2 if metadata_version >= MV_3_4_IV0 else 1,
        mt.PartitionRecord: partition_version,
        mt.PartitionChangeRecord: partition_version,
        mt.BrokerRegistrationChangeRecord: 2 if directories else 1,
    }


def versions_for(messages: list[Any], metadata_version: int) -> dict[type, int]:
    """`record_versions` restricted to the types in `messages`, every other type at version 0."""
    chosen = record_versions(metadata_version)
    return {type(m): chosen.get(type(m), 0) for m in messages}
