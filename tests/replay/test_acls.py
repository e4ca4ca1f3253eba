"""ACLs by id: add, replace, remove (an unknown id is an error), snapshot removal."""

from __future__ import annotations

import pytest

from kraftlake.records import metadata_types as mt
from kraftlake.replay.acls import StandardAcl
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.image import Provenance
from tests.replay.builders import apply_records, uuid


def acl(n: int, principal: str = "User:alice") -> object:
    return mt.AccessControlEntryRecord(
        id=uuid(n), resource_type=2, resource_name="orders", pattern_type=3, principal=principal, host="*",
        operation=3, permission_type=3,
    )


def remove_acl(n: int) -> object:
    return mt.RemoveAccessControlEntryRecord(id=uuid(n))


def test_add_and_replace() -> None:
    image = apply_records([acl(1), acl(2), acl(1, "User:bob")])
    assert dict(image.acls.acls) == {
        uuid(1): StandardAcl(2, "orders", 3, "User:bob", "*", 3, 3),
        uuid(2): StandardAcl(2, "orders", 3, "User:alice", "*", 3, 3),
    }


def test_remove_from_the_image_and_from_the_same_delta() -> None:
    before = apply_records([acl(1), acl(2)])
    after = apply_records([remove_acl(1), acl(3), remove_acl(3)], before)
    assert list(after.acls.acls) == [uuid(2)]


@pytest.mark.parametrize("records", [[remove_acl(9)], [acl(9), remove_acl(9), remove_acl(9)]])
def test_removing_an_unknown_acl_fails(records: list[object]) -> None:
    with pytest.raises(ReplayError, match=f"Failed to find existing acl with ID {uuid(9)}"):
        apply_records(records, apply_records([acl(1)]))


def test_finish_snapshot_drops_acls_not_reasserted() -> None:
    delta = MetadataDelta(apply_records([acl(1), acl(2)]))
    delta.replay(acl(2))
    delta.finish_snapshot()
    assert list(delta.apply(Provenance()).acls.acls) == [uuid(2)]
