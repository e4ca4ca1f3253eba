"""SCRAM credentials per (user, mechanism): add, replace, remove, snapshot removal; secrets kept in memory."""

from __future__ import annotations

from kraftlake.records import metadata_types as mt
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import Provenance
from kraftlake.replay.scram import ScramCredential, ScramKey
from tests.replay.builders import apply_records


def credential(user: str, mechanism: int, iterations: int = 4096) -> object:
    return mt.UserScramCredentialRecord(name=user, mechanism=mechanism, salt=b"salt", stored_key=b"stored",
                                        server_key=b"server", iterations=iterations)


def test_add_replace_and_remove_per_mechanism() -> None:
    before = apply_records([credential("alice", 1), credential("alice", 2), credential("alice", 1, 8192)])
    assert dict(before.scram.credentials) == {
        ScramKey("alice", 1): ScramCredential(8192, b"salt", b"stored", b"server"),
        ScramKey("alice", 2): ScramCredential(4096, b"salt", b"stored", b"server"),
    }
    after = apply_records([mt.RemoveUserScramCredentialRecord(name="alice", mechanism=2)], before)
    assert list(after.scram.credentials) == [ScramKey("alice", 1)]


def test_secrets_are_not_in_the_repr() -> None:
    image = apply_records([credential("alice", 1)])
    assert "stored" not in repr(image.scram.credentials[ScramKey("alice", 1)])


def test_finish_snapshot_drops_credentials_not_reasserted() -> None:
    delta = MetadataDelta(apply_records([credential("alice", 1), credential("bob", 2)]))
    delta.replay(credential("bob", 2))
    delta.finish_snapshot()
    assert list(delta.apply(Provenance()).scram.credentials) == [ScramKey("bob", 2)]
