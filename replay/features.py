"""Finalized features: metadata.version kept apart from the other feature levels, as Kafka does."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kraftlake.replay.errors import ReplayError
from kraftlake.replay.mapping import empty_map, merged

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
MINIMUM_METADATA_VERSION = 7  # 3.3-IV3, the oldest level Kafka 4.x replays


@dataclass(frozen=True)
class FeaturesImage:
    metadata_version: int | None = None
    finalized: MappingProxyType[str, int] = field(default_factory=empty_map)

    def is_empty(self) -> bool:
        return self.metadata_version is None and not self.finalized


class FeaturesDelta:
    def __init__(self, image: FeaturesImage) -> None:
        self.image = image
        self.metadata_version: int | None = None
        self.changes: dict[str, int | None] = {}

    def replay_feature_level(self, record: Any) -> None:
        name, level = record.name, record.feature_level
        if name == KRAFT_VERSION:
            return  # owned by the Raft layer (KAFKA-18979): not part of the metadata image
        if name == METADATA_VERSION:
            if level < MINIMUM_METADATA_VERSION:
                raise ReplayError(f"Unsupported metadata version level {level} (the minimum is 7, 3.3-IV3)")
            self.metadata_version = level
        else:
            self.changes[name] = level if level != 0 else None

    def level(self, name: str) -> int | None:
        """The level `name` has with this delta applied (None: not finalized)."""
        if name == METADATA_VERSION:
            return self.metadata_version if self.metadata_version is not None else self.image.metadata_version
        if name in self.changes:
            return self.changes[name]
        return self.image.finalized.get(name)

    def finish_snapshot(self) -> None:
        """A snapshot drops every finalized feature it does not re-assert (metadata.version stays)."""
        for name in self.image.finalized:
            self.changes.setdefault(name, None)

    def apply(self) -> FeaturesImage:
        version = self.metadata_version if self.metadata_version is not None else self.image.metadata_version
        return FeaturesImage(version, merged(self.image.finalized, self.changes))
