"""The KRaft control records (the value of a record in a control batch) and their control-key types.

A control record's key is `int16 version (0)` + `int16 type`; its value is the schema body at version 0
with no frame header: Kafka writes and reads all five at version 0 today.
"""

from __future__ import annotations

from kraftlake.records.schema import INT16, INT32, INT64, STRING, UINT16, UUID, Array, Field, StructSchema, nested

_VOTER = nested("Voter", Field("VoterId", INT32), Field("VoterDirectoryId", UUID, versions=1))
_ENDPOINT = nested("Endpoint", Field("Name", STRING), Field("Host", STRING), Field("Port", UINT16))
_KRAFT_VERSION_FEATURE = nested(
    "KRaftVersionFeature", Field("MinSupportedVersion", INT16), Field("MaxSupportedVersion", INT16)
)
_VOTERS_VOTER = nested(
    "Voter",
    Field("VoterId", INT32),
    Field("VoterDirectoryId", UUID),
    Field("Endpoints", Array(_ENDPOINT)),
    Field("KRaftVersionFeature", _KRAFT_VERSION_FEATURE),
)


def _control(name: str, control_type: int, type_name: str, max_version: int, *fields: Field) -> StructSchema:
    schema = StructSchema(name, fields, 0, max_version)
    schema.cls.CONTROL_TYPE = control_type
    schema.cls.TYPE_NAME = type_name
    schema.cls.MAX_VERSION = max_version
    return schema


SCHEMAS: tuple[StructSchema, ...] = (
    _control(
        "LeaderChangeMessage", 2, "LEADER_CHANGE", 1,
        Field("Version", INT16),
        Field("LeaderId", INT32),
        Field("Voters", Array(_VOTER)),
        Field("GrantingVoters", Array(_VOTER)),
    ),
    _control(
        "SnapshotHeaderRecord", 3, "SNAPSHOT_HEADER", 0,
        Field("Version", INT16),
        Field("LastContainedLogTimestamp", INT64),
    ),
    _control("SnapshotFooterRecord", 4, "SNAPSHOT_FOOTER", 0, Field("Version", INT16)),
    _control("KRaftVersionRecord", 5, "KRAFT_VERSION", 0, Field("Version", INT16), Field("KRaftVersion", INT16)),
    _control(
        "VotersRecord", 6, "KRAFT_VOTERS", 0,
        Field("Version", INT16),
        Field("Voters", Array(_VOTERS_VOTER)),
    ),
)

# The version every control record value is written and read at (ControlRecordUtils.*_CURRENT_VERSION).
CONTROL_VALUE_VERSION = 0

BY_CONTROL_TYPE: dict[int, StructSchema] = {s.cls.CONTROL_TYPE: s for s in SCHEMAS}

LeaderChangeMessage = BY_CONTROL_TYPE[2].cls
SnapshotHeaderRecord = BY_CONTROL_TYPE[3].cls
SnapshotFooterRecord = BY_CONTROL_TYPE[4].cls
KRaftVersionRecord = BY_CONTROL_TYPE[5].cls
VotersRecord = BY_CONTROL_TYPE[6].cls
Voter = _VOTER.cls
VotersVoter = _VOTERS_VOTER.cls
VoterEndpoint = _ENDPOINT.cls
KRaftVersionFeature = _KRAFT_VERSION_FEATURE.cls
