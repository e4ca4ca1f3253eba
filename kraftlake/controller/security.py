"""ACLs, SCRAM credentials and delegation tokens. Secrets are computed here and go only into records:
no message, log line or response carries a salt, a key or a password (a token's HMAC is returned once, to
its creator, as Kafka's CreateDelegationToken does)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.errors import (
    DelegationTokenDisabledError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    InvalidRequestError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
)
from kraftlake.records import metadata_types as mt
from kraftlake.replay.acls import StandardAcl
from kraftlake.replay.scram import ScramKey

# Kafka's enum codes (org.apache.kafka.common.resource / acl).
RESOURCE_TYPES = {"topic": 2, "group": 3, "cluster": 4, "transactional_id": 5, "delegation_token": 6, "user": 7}
PATTERN_TYPES = {"literal": 3, "prefixed": 4}
OPERATIONS = {
    "all": 2, "read": 3, "write": 4, "create": 5, "delete": 6, "alter": 7, "describe": 8, "cluster_action": 9,
    "describe_configs": 10, "alter_configs": 11, "idempotent_write": 12, "create_tokens": 13,
    "describe_tokens": 14, "two_phase_commit": 15,
}
PERMISSIONS = {"deny": 2, "allow": 3}
SCRAM_MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
MIN_SCRAM_ITERATIONS = 4096
MAX_SCRAM_ITERATIONS = 16384
SALT_BYTES = 32


def _code(table: dict[str, int], value: str | int, what: str) -> int:
    if isinstance(value, int) and value in table.values():
        return value
    if isinstance(value, str) and value.lower() in table:
        return table[value.lower()]
    raise InvalidRequestError(f"unknown {what} {value!r}: expected one of {', '.join(table)}")


@dataclass(frozen=True)
class AclBinding:
    resource_type: str | int
    resource_name: str
    principal: str
    operation: str | int
    permission: str | int = "allow"
    pattern_type: str | int = "literal"
    host: str = "*"

    def to_acl(self) -> StandardAcl:
        if ":" not in self.principal:
            raise InvalidRequestError(f"principal {self.principal!r} must look like Type:name (e.g. User:alice)")
        if not self.resource_name:
            raise InvalidRequestError("the resource name is empty")
        return StandardAcl(
            _code(RESOURCE_TYPES, self.resource_type, "resource type"),
            self.resource_name,
            _code(PATTERN_TYPES, self.pattern_type, "pattern type"),
            self.principal,
            self.host,
            _code(OPERATIONS, self.operation, "operation"),
            _code(PERMISSIONS, self.permission, "permission"),
        )


@dataclass(frozen=True)
class AclFilter:
    """Each field None matches anything."""

    resource_type: str | int | None = None
    resource_name: str | None = None
    principal: str | None = None
    operation: str | int | None = None
    permission: str | int | None = None
    pattern_type: str | int | None = None
    host: str | None = None

    def matches(self, acl: StandardAcl) -> bool:
        checks = (
            (self.resource_type, RESOURCE_TYPES, acl.resource_type, "resource type"),
            (self.pattern_type, PATTERN_TYPES, acl.pattern_type, "pattern type"),
            (self.operation, OPERATIONS, acl.operation, "operation"),
            (self.permission, PERMISSIONS, acl.permission_type, "permission"),
        )
        for wanted, table, actual, what in checks:
            if wanted is not None and _code(table, wanted, what) != actual:
                return False
        return all(
            wanted is None or wanted == actual
            for wanted, actual in (
                (self.resource_name, acl.resource_name), (self.principal, acl.principal), (self.host, acl.host),
            )
        )


def _all_acls(ctx: WriteContext) -> dict[str, StandardAcl]:
    delta = ctx.state.delta.acls_delta()
    ids = set(delta.image.acls) | set(delta.changes)
    return {acl_id: acl for acl_id in sorted(ids) if (acl := delta.acl(acl_id)) is not None}


def create_acls(ctx: WriteContext, bindings: Sequence[AclBinding]) -> ControllerResult[list[str]]:
    """The id of each ACL; an ACL that already exists keeps its id and writes nothing."""
    existing = {acl: acl_id for acl_id, acl in _all_acls(ctx).items()}
    records = []
    ids = []
    for binding in bindings:
        acl = binding.to_acl()
        acl_id = existing.get(acl)
        if acl_id is None:
            acl_id = existing[acl] = ctx.new_uuid()
            records.append(mt.AccessControlEntryRecord(acl_id, *acl))
        ids.append(acl_id)
    return ControllerResult(records, ids)


def delete_acls(ctx: WriteContext, filters: Sequence[AclFilter]) -> ControllerResult[list[str]]:
    """The ids removed: every ACL matching any filter."""
    removed = [acl_id for acl_id, acl in _all_acls(ctx).items() if any(f.matches(acl) for f in filters)]
    return ControllerResult([mt.RemoveAccessControlEntryRecord(id=acl_id) for acl_id in removed], removed)


# -- SCRAM (RFC 5802) ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScramUpsertion:
    user: str
    mechanism: str
    password: str
    iterations: int = 0  # 0: the controller's default

    def __repr__(self) -> str:  # never show the password
        return f"ScramUpsertion(user={self.user!r}, mechanism={self.mechanism!r}, iterations={self.iterations})"


def scram_keys(hash_name: str, password: bytes, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    """(StoredKey, ServerKey) as RFC 5802 defines them from SaltedPassword = Hi(password, salt, i)."""
    salted = hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hash_name).digest()
    return stored_key, server_key


def _mechanism(name: str) -> tuple[int, str]:
    found = SCRAM_MECHANISMS.get(name.upper())
    if found is None:
        raise InvalidRequestError(f"unknown SCRAM mechanism {name!r}: use {' or '.join(SCRAM_MECHANISMS)}")
    return found


def alter_scram(
    ctx: WriteContext, upsertions: Sequence[ScramUpsertion], deletions: Sequence[tuple[str, str]]
) -> ControllerResult[int]:
    """Upsert and delete credentials; returns how many changed. Unknown deletions fail the request."""
    scram = ctx.state.delta.scram_delta()
    records: list[Any] = []
    touched: set[tuple[str, int]] = set()
    for user, mechanism in deletions:
        code, _ = _mechanism(mechanism)
        if scram.credential(ScramKey(user, code)) is None:
            raise ResourceNotFoundError(f"user {user!r} has no {mechanism.upper()} credential to delete")
        touched.add((user, code))
        records.append(mt.RemoveUserScramCredentialRecord(name=user, mechanism=code))
    for upsertion in upsertions:
        code, hash_name = _mechanism(upsertion.mechanism)
        if not upsertion.user:
            raise UnacceptableCredentialError("the user name is empty")
        if (upsertion.user, code) in touched:
            raise InvalidRequestError(f"user {upsertion.user!r} {upsertion.mechanism} is altered twice")
        touched.add((upsertion.user, code))
        if not upsertion.password:
            raise UnacceptableCredentialError(f"the password of user {upsertion.user!r} is empty")
        iterations = upsertion.iterations or ctx.config.scram_iterations
        if not MIN_SCRAM_ITERATIONS <= iterations <= MAX_SCRAM_ITERATIONS:
            raise UnacceptableCredentialError(
                f"iterations must be between {MIN_SCRAM_ITERATIONS} and {MAX_SCRAM_ITERATIONS}, not {iterations}"
            )
        salt = os.urandom(SALT_BYTES)
        stored_key, server_key = scram_keys(hash_name, upsertion.password.encode("utf-8"), salt, iterations)
        records.append(mt.UserScramCredentialRecord(
            name=upsertion.user, mechanism=code, salt=salt, stored_key=stored_key, server_key=server_key,
            iterations=iterations,
        ))
    return ControllerResult(records, len(records))


# -- delegation tokens ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    hmac: str  # base64; only ever returned to the creator
    issue_timestamp: int
    expiration_timestamp: int
    max_timestamp: int

    def __repr__(self) -> str:
        return f"TokenInfo(token_id={self.token_id!r}, expiration_timestamp={self.expiration_timestamp})"

    def to_json(self) -> dict[str, Any]:
        return {
            "token_id": self.token_id, "hmac": self.hmac, "issue_timestamp": self.issue_timestamp,
            "expiration_timestamp": self.expiration_timestamp, "max_timestamp": self.max_timestamp,
        }


def _secret(ctx: WriteContext) -> bytes:
    key = ctx.config.delegation_token_secret_key
    if not key:
        raise DelegationTokenDisabledError(
            "delegation tokens are disabled: set delegation_token_secret_key in the controller configuration"
        )
    return key.encode("utf-8")


def token_hmac(secret: bytes, token_id: str) -> str:
    return base64.b64encode(hmac.new(secret, token_id.encode("utf-8"), "sha512").digest()).decode("ascii")


def create_token(
    ctx: WriteContext, owner: str, requester: str, renewers: Sequence[str], max_lifetime_ms: int = -1
) -> ControllerResult[TokenInfo]:
    secret = _secret(ctx)
    for principal in (owner, requester, *renewers):
        if ":" not in principal:
            raise InvalidRequestError(f"principal {principal!r} must look like Type:name (e.g. User:alice)")
    lifetime = ctx.config.delegation_token_max_lifetime_ms
    if max_lifetime_ms > 0:
        lifetime = min(lifetime, max_lifetime_ms)
    now = ctx.now_ms
    max_timestamp = now + lifetime
    expiration = min(now + ctx.config.delegation_token_renew_interval_ms, max_timestamp)
    token_id = ctx.new_uuid()
    record = mt.DelegationTokenRecord(
        owner=owner, requester=requester, renewers=tuple(renewers), issue_timestamp=now,
        max_timestamp=max_timestamp, expiration_timestamp=expiration, token_id=token_id,
    )
    return ControllerResult([record], TokenInfo(token_id, token_hmac(secret, token_id), now, expiration, max_timestamp))


def _token_by_hmac(ctx: WriteContext, given_hmac: str, principal: str) -> Any:
    secret = _secret(ctx)
    delta = ctx.state.delta.delegation_tokens_delta()
    for token_id in set(delta.image.tokens) | set(delta.changes):
        token = delta.token(token_id)
        if token is not None and hmac.compare_digest(token_hmac(secret, token_id), given_hmac):
            if principal != token.owner and principal not in token.renewers:
                raise DelegationTokenOwnerMismatchError(
                    f"{principal} is neither the owner nor a renewer of token {token_id}"
                )
            if token.expiration_timestamp < ctx.now_ms:
                raise DelegationTokenExpiredError(f"token {token_id} has expired")
            return token
    raise DelegationTokenNotFoundError("no delegation token has that HMAC")


def _token_record(token: Any, expiration: int) -> Any:
    return mt.DelegationTokenRecord(
        owner=token.owner, requester=token.requester, renewers=token.renewers,
        issue_timestamp=token.issue_timestamp, max_timestamp=token.max_timestamp,
        expiration_timestamp=expiration, token_id=token.token_id,
    )


def renew_token(ctx: WriteContext, given_hmac: str, principal: str, period_ms: int = -1) -> ControllerResult[int]:
    """The new expiration time: now + period (default the renew interval), never beyond the max lifetime."""
    token = _token_by_hmac(ctx, given_hmac, principal)
    period = ctx.config.delegation_token_renew_interval_ms if period_ms < 0 else period_ms
    expiration = min(ctx.now_ms + period, token.max_timestamp)
    return ControllerResult([_token_record(token, expiration)], expiration)


def expire_token(ctx: WriteContext, given_hmac: str, principal: str, period_ms: int = -1) -> ControllerResult[int]:
    """A negative period expires the token now (it is removed); otherwise it expires after `period_ms`."""
    token = _token_by_hmac(ctx, given_hmac, principal)
    if period_ms < 0:
        return ControllerResult([mt.RemoveDelegationTokenRecord(token_id=token.token_id)], ctx.now_ms)
    expiration = min(ctx.now_ms + period_ms, token.max_timestamp)
    return ControllerResult([_token_record(token, expiration)], expiration)


def expire_tokens_task(ctx: WriteContext) -> ControllerResult[int]:
    """The periodic sweep: removes every token past its expiration time."""
    delta = ctx.state.delta.delegation_tokens_delta()
    expired = sorted(
        token_id for token_id in set(delta.image.tokens) | set(delta.changes)
        if (token := delta.token(token_id)) is not None and token.expiration_timestamp < ctx.now_ms
    )
    return ControllerResult([mt.RemoveDelegationTokenRecord(token_id=t) for t in expired], len(expired))
