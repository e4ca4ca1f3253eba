"""SCRAM credentials per (user, mechanism). The salt and keys live only in memory: they are needed to
write the image back as records, and are redacted from every output (canonical JSON, tables, logs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kraftlake.replay.mapping import empty_map, merged

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


class ScramKey(NamedTuple):
    user: str
    mechanism: int


@dataclass(frozen=True)
class ScramCredential:
    iterations: int
    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)


@dataclass(frozen=True)
class ScramImage:
    credentials: Mapping[ScramKey, ScramCredential] = field(default_factory=empty_map)

    def is_empty(self) -> bool:
        return not self.credentials


class ScramDelta:
    def __init__(self, image: ScramImage) -> None:
        self.image = image
        self.changes: dict[ScramKey, ScramCredential | None] = {}

    def replay_credential(self, record: Any) -> None:
        self.changes[ScramKey(record.name, record.mechanism)] = ScramCredential(
            record.iterations, record.salt, record.stored_key, record.server_key
        )

    def replay_remove_credential(self, record: Any) -> None:
        self.changes[ScramKey(record.name, record.mechanism)] = None

    def credential(self, key: ScramKey) -> ScramCredential | None:
        if key in self.changes:
            return self.changes[key]
        return self.image.credentials.get(key)

    def finish_snapshot(self) -> None:
        for key in self.image.credentials:
            self.changes.setdefault(key, None)

    def apply(self) -> ScramImage:
        return ScramImage(merged(self.image.credentials, self.changes))
