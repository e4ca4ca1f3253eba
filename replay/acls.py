"""ACLs by id (StandardAcl): added by AccessControlEntryRecord, removed by id."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kraftlake.replay.errors import ReplayError
from kraftlake.replay.mapping import empty_map, merged


class StandardAcl(NamedTuple):
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True)
class AclsImage:
    acls: Mapping[str, StandardAcl] = field(default_factory=empty_map)

    def is_empty(self) -> bool:
        return not self.acls


class AclsDelta:
    def __init__(self, image: AclsImage) -> None:
        self.image = image
        self.changes: dict[str, StandardAcl | None] = {}

    def replay_acl(self, record: Any) -> None:
        self.changes[record.id] = StandardAcl(
            record.resource_type,
            record.resource_name,
            record.pattern_type,
            record.principal,
            record.host,
            record.operation,
            record.permission_type,
        )

    def replay_remove_acl(self, record: Any) -> None:
        present = self.changes[record.id] is not None if record.id in self.changes else record.id in self.image.acls
        if not present:
            raise ReplayError(f"Failed to find existing acl with ID {record.id}")
        self.changes[record.id] = None

    def acl(self, key: str) -> StandardAcl | None:
        if key in self.changes:
            return self.changes[key]
        return self.image.acls.get(key)

    def finish_snapshot(self) -> None:
        for acl_id in self.image.acls:
            self.changes.setdefault(acl_id, None)

    def apply(self) -> AclsImage:
        return AclsImage(merged(self.image.acls, self.changes))
