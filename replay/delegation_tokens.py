"""Delegation tokens by token id. The record holds no HMAC (it is derived from a secret key): the image
keeps what the record says."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftlake.replay.mapping import empty_map, merged


@dataclass(frozen=True)
class DelegationToken:
    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


@dataclass(frozen=True)
class DelegationTokensImage:
    tokens: Mapping[str, DelegationToken] = field(default_factory=empty_map)

    def is_empty(self) -> bool:
        return not self.tokens


class DelegationTokensDelta:
    def __init__(self, image: DelegationTokensImage) -> None:
        self.image = image
        self.changes: dict[str, DelegationToken | None] = {}

    def replay_token(self, record: Any) -> None:
        self.changes[record.token_id] = DelegationToken(
            record.token_id,
            record.owner,
            record.requester,
            tuple(record.renewers),
            record.issue_timestamp,
            record.max_timestamp,
            record.expiration_timestamp,
        )

    def replay_remove_token(self, record: Any) -> None:
        self.changes[record.token_id] = None

    def token(self, key: str) -> DelegationToken | None:
        if key in self.changes:
            return self.changes[key]
        return self.image.tokens.get(key)

    def finish_snapshot(self) -> None:
        for token_id in self.image.tokens:
            self.changes.setdefault(token_id, None)

    def apply(self) -> DelegationTokensImage:
        return DelegationTokensImage(merged(self.image.tokens, self.changes))
