"""Feature levels (KIP-584): the bootstrap transaction of a new cluster and validated feature updates."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.errors import InvalidFeatureUpdateError, InvalidRequestError
from kraftlake.controller.versions import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    FEATURE_DEPENDENCIES,
    METADATA_VERSION,
    SUPPORTED_FEATURES,
)
from kraftlake.records import metadata_types as mt

BOOTSTRAP_TRANSACTION = "Bootstrap records"


class UpgradeType(enum.Enum):
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


def bootstrap_records(metadata_version: int, features: Mapping[str, int]) -> list[Any]:
    """What the first active controller writes on an empty log, as one transaction (as Kafka 3.6+ does)."""
    _check_levels({METADATA_VERSION: metadata_version, **features})
    for name, level in features.items():
        _check_dependency(name, level, metadata_version)
    return [
        mt.BeginTransactionRecord(name=BOOTSTRAP_TRANSACTION),
        mt.FeatureLevelRecord(name=METADATA_VERSION, feature_level=metadata_version),
        *(mt.FeatureLevelRecord(name=name, feature_level=level) for name, level in sorted(features.items()) if level),
        mt.EndTransactionRecord(),
    ]


def _check_levels(levels: Mapping[str, int]) -> None:
    for name, level in levels.items():
        if name not in SUPPORTED_FEATURES:
            raise InvalidFeatureUpdateError(
                f"unknown feature {name!r}: this controller supports {', '.join(sorted(SUPPORTED_FEATURES))}"
            )
        low, high = SUPPORTED_FEATURES[name]
        if level < 0 or (level != 0 and not low <= level <= high):
            raise InvalidFeatureUpdateError(
                f"{name} level {level} is not supported by this controller (supported: {low}..{high})"
            )


def _check_dependency(name: str, level: int, metadata_version: int) -> None:
    needed = FEATURE_DEPENDENCIES.get((name, level))
    if needed is not None and metadata_version < needed:
        raise InvalidFeatureUpdateError(
            f"{name} level {level} needs metadata.version {needed} or later (the cluster is at {metadata_version})"
        )


def update_features(
    ctx: WriteContext, updates: Mapping[str, tuple[int, UpgradeType]]
) -> ControllerResult[dict[str, int]]:
    """All-or-nothing: one FeatureLevelRecord per changed feature, written in one batch.

    Checks: the controller supports the level; every registered broker supports it; a lower level needs a
    downgrade type; metadata.version is never downgraded (its records could not be rewritten); level 0
    removes a feature (not metadata.version).
    """
    if not updates:
        raise InvalidRequestError("no feature update given")
    state = ctx.state
    records: list[Any] = []
    result = {}
    for name, (level, upgrade_type) in sorted(updates.items()):
        if name == "kraft.version":
            raise InvalidFeatureUpdateError("kraft.version belongs to the Raft layer: it cannot be changed here")
        _check_levels({name: level})
        current = ctx.metadata_version if name == METADATA_VERSION else state.feature_level(name)
        if name == METADATA_VERSION and level == 0:
            raise InvalidFeatureUpdateError("metadata.version cannot be removed")
        if level < current:
            if name == METADATA_VERSION:
                raise InvalidFeatureUpdateError(
                    f"metadata.version cannot be downgraded from {current} to {level}"
                )
            if upgrade_type is UpgradeType.UPGRADE:
                raise InvalidFeatureUpdateError(
                    f"{name} would go down from {current} to {level}: ask for a safe or unsafe downgrade"
                )
        elif upgrade_type is not UpgradeType.UPGRADE and level > current:
            raise InvalidFeatureUpdateError(f"{name} would go up from {current} to {level}: that is an upgrade")
        if level > 0:
            for broker in state.brokers():
                ranges = {f.name: (f.min_supported_version, f.max_supported_version) for f in broker.supported_features}
                low, high = ranges.get(name, (0, 0))
                if not low <= level <= high:
                    raise InvalidFeatureUpdateError(
                        f"broker {broker.broker_id} does not support {name} level {level} (it supports {low}..{high})"
                    )
        _check_dependency(name, level, updates[METADATA_VERSION][0] if METADATA_VERSION in updates
                          else ctx.metadata_version)
        if level != current:
            records.append(mt.FeatureLevelRecord(name=name, feature_level=level))
            if name == ELIGIBLE_LEADER_REPLICAS_VERSION and level == 0:
                records.append(mt.ClearElrRecord(topic_name=""))  # ELRs off: none may linger
        result[name] = level
    return ControllerResult(records, result)


def noop_records() -> list[Any]:
    return [mt.NoOpRecord()]
