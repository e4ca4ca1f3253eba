"""ACLs, SCRAM credentials (keys computed per RFC 5802, never shown) and delegation tokens."""

from __future__ import annotations

import hashlib
import hmac
import logging

import pytest

from kraftlake.controller import AclBinding, AclFilter, ScramUpsertion
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
from tests.controller.conftest import Harness


def test_create_and_delete_acls(harness: Harness) -> None:
    mark = harness.offset()
    ids = harness.wait(harness.controller.create_acls([
        AclBinding("topic", "orders", "User:alice", "read"),
        AclBinding("group", "app-", "User:alice", "read", pattern_type="prefixed"),
        AclBinding("cluster", "kafka-cluster", "User:ops", "alter", permission="deny", host="10.0.0.1"),
    ]))
    records = harness.records_after(mark)
    assert [r.id for r in records] == ids
    assert records[0] == mt.AccessControlEntryRecord(
        id=ids[0], resource_type=2, resource_name="orders", pattern_type=3, principal="User:alice", host="*",
        operation=3, permission_type=3,
    )
    again = harness.wait(harness.controller.create_acls([AclBinding("topic", "orders", "User:alice", "read")]))
    assert again == ids[:1]  # an existing ACL keeps its id and writes nothing
    mark = harness.offset()
    removed = harness.wait(harness.controller.delete_acls([AclFilter(principal="User:alice")]))
    assert sorted(removed) == sorted(ids[:2])
    assert harness.records_after(mark) == [mt.RemoveAccessControlEntryRecord(id=i) for i in removed]
    assert list(harness.image.acls.acls) == [ids[2]]


def test_bad_acls_are_refused(harness: Harness) -> None:
    for binding in (
        AclBinding("topic", "t", "alice", "read"),
        AclBinding("planet", "t", "User:a", "read"),
        AclBinding("topic", "t", "User:a", "fly"),
        AclBinding("topic", "", "User:a", "read"),
    ):
        with pytest.raises(InvalidRequestError):
            harness.wait(harness.controller.create_acls([binding]))


def test_scram_keys_follow_rfc_5802(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    mark = harness.offset()
    harness.wait(harness.controller.alter_scram_credentials([
        ScramUpsertion("alice", "SCRAM-SHA-256", "pencil", iterations=4096),
        ScramUpsertion("bob", "SCRAM-SHA-512", "hunter2"),
    ]))
    alice, bob = harness.records_after(mark)
    assert (alice.name, alice.mechanism, alice.iterations, len(alice.salt)) == ("alice", 1, 4096, 32)
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", alice.salt, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    assert alice.stored_key == hashlib.sha256(client_key).digest()
    assert alice.server_key == hmac.new(salted, b"Server Key", "sha256").digest()
    assert (bob.mechanism, len(bob.stored_key)) == (2, 64)
    log_text = caplog.text + repr(ScramUpsertion("alice", "SCRAM-SHA-256", "pencil"))
    for secret in (b"pencil".hex(), "pencil", alice.salt.hex(), alice.stored_key.hex()):
        assert secret not in log_text
    mark = harness.offset()
    harness.wait(harness.controller.alter_scram_credentials([], [("bob", "SCRAM-SHA-512")]))
    assert harness.records_after(mark) == [mt.RemoveUserScramCredentialRecord(name="bob", mechanism=2)]


def test_bad_scram_changes_are_refused(harness: Harness) -> None:
    cases = [
        (([ScramUpsertion("a", "SCRAM-MD5", "x")], []), InvalidRequestError),
        (([ScramUpsertion("a", "SCRAM-SHA-256", "")], []), UnacceptableCredentialError),
        (([ScramUpsertion("", "SCRAM-SHA-256", "x")], []), UnacceptableCredentialError),
        (([ScramUpsertion("a", "SCRAM-SHA-256", "x", iterations=10)], []), UnacceptableCredentialError),
        (([], [("nobody", "SCRAM-SHA-256")]), ResourceNotFoundError),
    ]
    for (upsertions, deletions), error in cases:
        with pytest.raises(error):
            harness.wait(harness.controller.alter_scram_credentials(upsertions, deletions))


def test_tokens_need_a_secret(harness: Harness) -> None:
    with pytest.raises(DelegationTokenDisabledError):
        harness.wait(harness.controller.create_delegation_token("User:a", "User:a"))


def test_token_create_renew_expire(make_harness) -> None:
    h = make_harness(delegation_token_secret_key="s3cret", delegation_token_renew_interval_ms=1000,
                     delegation_token_max_lifetime_ms=5000)
    h.elect(1)
    now = h.clock.now_ms()
    mark = h.offset()
    token = h.wait(h.controller.create_delegation_token("User:alice", "User:alice", ["User:bob"]))
    [record] = h.records_after(mark)
    assert record == mt.DelegationTokenRecord(
        owner="User:alice", requester="User:alice", renewers=("User:bob",), issue_timestamp=now,
        max_timestamp=now + 5000, expiration_timestamp=now + 1000, token_id=token.token_id,
    )
    assert token.hmac not in repr(token)
    h.clock.advance(500)
    assert h.wait(h.controller.renew_delegation_token(token.hmac, "User:bob", 10_000)) == now + 5000  # capped
    with pytest.raises(DelegationTokenOwnerMismatchError):
        h.wait(h.controller.renew_delegation_token(token.hmac, "User:mallory"))
    with pytest.raises(DelegationTokenNotFoundError):
        h.wait(h.controller.renew_delegation_token("bm90IGEgdG9rZW4=", "User:alice"))
    h.wait(h.controller.expire_delegation_token(token.hmac, "User:alice", -1))
    assert not h.image.delegation_tokens.tokens


def test_expired_tokens_are_swept(make_harness) -> None:
    h = make_harness(delegation_token_secret_key="s3cret", delegation_token_renew_interval_ms=1000)
    h.elect(1)
    token = h.wait(h.controller.create_delegation_token("User:a", "User:a"))
    h.clock.advance(h.config.token_expiry_check_interval_ms)
    with pytest.raises(DelegationTokenExpiredError):
        h.wait(h.controller.renew_delegation_token(token.hmac, "User:a"))
    mark = h.offset()
    h.wait(h.controller.run_periodic_tasks())
    assert mt.RemoveDelegationTokenRecord(token_id=token.token_id) in h.records_after(mark)
    assert not h.image.delegation_tokens.tokens
