"""The quorum's tables (KIP-853): `voters`, one row per voter of the set in force, and `kraft_version`, one
row with the kraft.version in force. Both come from control records, not metadata records."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from kraftlake.image_schema.spec import Key, Row, SubImageTables, TableRows, dict_table, single
from kraftlake.records.control_types import KRaftVersionRecord, VotersRecord
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.fields import plain
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.voters import QuorumVoter, VoterEndpoint, VotersImage

VOTER_ENDPOINT = pa.struct([("name", pa.string()), ("host", pa.string()), ("port", pa.int32())])
QUORUM_SCOPE = "quorum"


def voter_row(voter: QuorumVoter) -> Row:
    return plain(voter)


def _voter_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for voter_id, voter in image.voters.voters.items():
        yield (voter_id,), voter_row(voter)


def _voter_row(delta: MetadataDelta, key: Key) -> Row | None:
    voter = delta.voters_delta().voters.get(key[0])
    return None if voter is None else voter_row(voter)


def _kraft_version_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    if image.voters.kraft_version is not None:
        yield (QUORUM_SCOPE,), {"scope": QUORUM_SCOPE, "level": image.voters.kraft_version}


def _kraft_version_row(delta: MetadataDelta, key: Key) -> Row | None:
    level = delta.voters_delta().kraft_version
    return None if level is None else {"scope": QUORUM_SCOPE, "level": level}


def _touched_voters(record: Any, delta: MetadataDelta) -> Iterator[tuple[str, Key]]:
    """A VotersRecord restates the set: every voter before it and after it."""
    before = delta.voters_delta().voters.keys()
    for voter_id in sorted({*before, *(v.voter_id for v in record.voters)}):
        yield "voters", (voter_id,)


def _rebuild(tables: TableRows) -> VotersImage:
    voters = {
        r["voter_id"]: QuorumVoter(
            r["voter_id"],
            r["directory_id"],
            tuple(VoterEndpoint(e["name"], e["host"], e["port"]) for e in r["endpoints"]),
            r["min_supported_kraft_version"],
            r["max_supported_kraft_version"],
        )
        for r in tables.get("voters", ())
    }
    level = next((r["level"] for r in tables.get("kraft_version", ())), None)
    return VotersImage(level, MappingProxyType(dict(sorted(voters.items()))))


VOTERS = SubImageTables(
    "voters",
    (
        dict_table(
            "voters",
            "voters",
            ("voter_id",),
            pa.schema([
                ("voter_id", pa.int32()),
                ("directory_id", pa.string()),
                ("endpoints", pa.list_(VOTER_ENDPOINT)),
                ("min_supported_kraft_version", pa.int16()),
                ("max_supported_kraft_version", pa.int16()),
            ]),
            _voter_rows,
            _voter_row,
        ),
        dict_table(
            "kraft_version",
            "voters",
            ("scope",),
            pa.schema([("scope", pa.string()), ("level", pa.int16())]),
            _kraft_version_rows,
            _kraft_version_row,
        ),
    ),
    {
        KRaftVersionRecord: single("kraft_version", lambda r: (QUORUM_SCOPE,)),
        VotersRecord: _touched_voters,
    },
    _rebuild,
)
