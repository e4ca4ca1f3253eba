"""The delegation_tokens table: token metadata only (the HMAC never reaches a record Kafka writes)."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType

import pyarrow as pa

from kraftlake.image_schema.spec import STRINGS, Key, Row, SubImageTables, TableRows, dict_table, single
from kraftlake.records import metadata_types as mt
from kraftlake.replay.delegation_tokens import DelegationToken, DelegationTokensImage
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.fields import plain
from kraftlake.replay.image import MetadataImage


def token_row(token: DelegationToken) -> Row:
    return plain(token)


def _token_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for token_id, token in image.delegation_tokens.tokens.items():
        yield (token_id,), token_row(token)


def _token_row(delta: MetadataDelta, key: Key) -> Row | None:
    token = delta.delegation_tokens_delta().token(key[0])
    return None if token is None else token_row(token)


def _token(r: Row) -> DelegationToken:
    return DelegationToken(
        r["token_id"],
        r["owner"],
        r["requester"],
        tuple(r["renewers"] or ()),
        r["issue_timestamp"],
        r["max_timestamp"],
        r["expiration_timestamp"],
    )


def _rebuild(tables: TableRows) -> DelegationTokensImage:
    return DelegationTokensImage(
        MappingProxyType({r["token_id"]: _token(r) for r in tables.get("delegation_tokens", ())})
    )


DELEGATION_TOKENS = SubImageTables(
    "delegation_tokens",
    (
        dict_table(
            "delegation_tokens",
            "delegation_tokens",
            ("token_id",),
            pa.schema([
                ("token_id", pa.string()),
                ("owner", pa.string()),
                ("requester", pa.string()),
                ("renewers", STRINGS),
                ("issue_timestamp", pa.int64()),
                ("max_timestamp", pa.int64()),
                ("expiration_timestamp", pa.int64()),
            ]),
            _token_rows,
            _token_row,
        ),
    ),
    {
        mt.DelegationTokenRecord: single("delegation_tokens", lambda r: (r.token_id,)),
        mt.RemoveDelegationTokenRecord: single("delegation_tokens", lambda r: (r.token_id,)),
    },
    _rebuild,
)
