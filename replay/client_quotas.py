"""Client quotas per entity (user / client-id / ip, with None for the default entity)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftlake.replay.mapping import EMPTY, empty_map, merged

# An entity is its (entity type, entity name or None) pairs, sorted by type: a stable, hashable key.
QuotaEntity = tuple[tuple[str, str | None], ...]


def quota_entity(record: Any) -> QuotaEntity:
    return tuple(sorted((e.entity_type, e.entity_name) for e in record.entity))


@dataclass(frozen=True)
class ClientQuotasImage:
    entities: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=empty_map)

    def is_empty(self) -> bool:
        return not self.entities


class ClientQuotasDelta:
    def __init__(self, image: ClientQuotasImage) -> None:
        self.image = image
        self.changes: dict[QuotaEntity, dict[str, float | None]] = {}

    def replay_client_quota(self, record: Any) -> None:
        entity = quota_entity(record)
        self.changes.setdefault(entity, {})[record.key] = None if record.remove else record.value

    def quotas(self, entity: QuotaEntity) -> Mapping[str, float]:
        return merged(self.image.entities.get(entity, EMPTY), self.changes.get(entity, {}))

    def finish_snapshot(self) -> None:
        for entity, quotas in self.image.entities.items():
            changed = self.changes.setdefault(entity, {})
            for key in quotas:
                changed.setdefault(key, None)

    def apply(self) -> ClientQuotasImage:
        updated: dict[QuotaEntity, Mapping[str, float] | None] = {}
        for entity, changes in self.changes.items():
            quotas = merged(self.image.entities.get(entity, EMPTY), changes)
            updated[entity] = quotas if quotas else None
        return ClientQuotasImage(merged(self.image.entities, updated))
