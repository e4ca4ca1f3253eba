"""The acls table: one row per ACL, keyed by its id."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType

import pyarrow as pa

from kraftlake.image_schema.spec import Key, Row, SubImageTables, TableRows, dict_table, single
from kraftlake.records import metadata_types as mt
from kraftlake.replay.acls import AclsImage, StandardAcl
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.fields import plain
from kraftlake.replay.image import MetadataImage


def acl_row(acl_id: str, acl: StandardAcl) -> Row:
    return {"acl_id": acl_id, **plain(acl)}


def _acl_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for acl_id, acl in image.acls.acls.items():
        yield (acl_id,), acl_row(acl_id, acl)


def _acl_row(delta: MetadataDelta, key: Key) -> Row | None:
    acl = delta.acls_delta().acl(key[0])
    return None if acl is None else acl_row(key[0], acl)


def _acl(r: Row) -> StandardAcl:
    return StandardAcl(*(r[field] for field in StandardAcl._fields))


def _rebuild(tables: TableRows) -> AclsImage:
    return AclsImage(MappingProxyType({r["acl_id"]: _acl(r) for r in tables.get("acls", ())}))


ACLS = SubImageTables(
    "acls",
    (
        dict_table(
            "acls",
            "acls",
            ("acl_id",),
            pa.schema([
                ("acl_id", pa.string()),
                ("resource_type", pa.int8()),
                ("resource_name", pa.string()),
                ("pattern_type", pa.int8()),
                ("principal", pa.string()),
                ("host", pa.string()),
                ("operation", pa.int8()),
                ("permission_type", pa.int8()),
            ]),
            _acl_rows,
            _acl_row,
        ),
    ),
    {
        mt.AccessControlEntryRecord: single("acls", lambda r: (r.id,)),
        mt.RemoveAccessControlEntryRecord: single("acls", lambda r: (r.id,)),
    },
    _rebuild,
)
