"""The scram_credentials table: which user has which mechanism at how many iterations. Salts and keys never
leave `kraftlake.replay`, so a rebuilt sub-image holds them empty."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType

import pyarrow as pa

from kraftlake.image_schema.spec import Key, Row, SubImageTables, TableRows, dict_table, single
from kraftlake.records import metadata_types as mt
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.scram import MECHANISMS, ScramCredential, ScramImage, ScramKey


def mechanism_name(mechanism: int) -> str:
    return MECHANISMS.get(mechanism, str(mechanism))


def mechanism_id(name: str) -> int:
    """The inverse of `mechanism_name` (a mechanism Kafka adds later is kept as its number)."""
    found = next((mechanism for mechanism, known in MECHANISMS.items() if known == name), None)
    return int(name) if found is None else found


def scram_row(key: ScramKey, iterations: int) -> Row:
    return {"user": key.user, "mechanism": mechanism_name(key.mechanism), "iterations": iterations}


def _scram_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for key, credential in image.scram.credentials.items():
        yield (key.user, mechanism_name(key.mechanism)), scram_row(key, credential.iterations)


def _scram_row(delta: MetadataDelta, key: Key) -> Row | None:
    scram_key = ScramKey(key[0], mechanism_id(key[1]))
    credential = delta.scram_delta().credential(scram_key)
    return None if credential is None else scram_row(scram_key, credential.iterations)


def _rebuild(tables: TableRows) -> ScramImage:
    return ScramImage(MappingProxyType({
        ScramKey(r["user"], mechanism_id(r["mechanism"])): ScramCredential(r["iterations"], b"", b"", b"")
        for r in tables.get("scram_credentials", ())
    }))


SCRAM = SubImageTables(
    "scram",
    (
        dict_table(
            "scram_credentials",
            "scram",
            ("user", "mechanism"),
            pa.schema([("user", pa.string()), ("mechanism", pa.string()), ("iterations", pa.int32())]),
            _scram_rows,
            _scram_row,
        ),
    ),
    {
        mt.UserScramCredentialRecord: single("scram_credentials", lambda r: (r.name, mechanism_name(r.mechanism))),
        mt.RemoveUserScramCredentialRecord: single(
            "scram_credentials", lambda r: (r.name, mechanism_name(r.mechanism))
        ),
    },
    _rebuild,
)
