"""Delegation tokens by id: add, replace, remove, snapshot removal."""

from __future__ import annotations

from kraftlake.records import metadata_types as mt
from kraftlake.replay.delegation_tokens import DelegationToken
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import Provenance
from tests.replay.builders import apply_records


def token(token_id: str, expiration: int = 300) -> object:
    return mt.DelegationTokenRecord(owner="User:alice", requester="User:admin", renewers=("User:bob",),
                                    issue_timestamp=100, max_timestamp=1000, expiration_timestamp=expiration,
                                    token_id=token_id)


def test_add_replace_and_remove() -> None:
    before = apply_records([token("t1"), token("t2"), token("t1", 500)])
    assert before.delegation_tokens.tokens["t1"] == DelegationToken(
        "t1", "User:alice", "User:admin", ("User:bob",), 100, 1000, 500)
    after = apply_records([mt.RemoveDelegationTokenRecord(token_id="t2")], before)
    assert list(after.delegation_tokens.tokens) == ["t1"]


def test_finish_snapshot_drops_tokens_not_reasserted() -> None:
    delta = MetadataDelta(apply_records([token("t1"), token("t2")]))
    delta.replay(token("t2"))
    delta.finish_snapshot()
    assert list(delta.apply(Provenance()).delegation_tokens.tokens) == ["t2"]
