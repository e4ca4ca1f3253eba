"""The metadata record types of Kafka 4.4 (`__cluster_metadata` data records), restated from the message
schemas of Apache Kafka (`metadata/src/main/resources/common/metadata/*Record.json` in its source tree).
apiKeys 6, 13 and 16 were never written or were removed.

Every schema is flexible from version 0. A field's `versions` is the N of "N+"; tagged fields here always
have taggedVersions equal to their versions.
"""

from __future__ import annotations

from kraftlake.records.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    Array,
    Field,
    StructSchema,
    nested,
    upper_snake_case,
)


def _message(name: str, api_key: int, max_version: int, *fields: Field) -> StructSchema:
    schema = StructSchema(name, fields, 0, max_version)
    schema.cls.API_KEY = api_key
    schema.cls.TYPE_NAME = _type_name(name)
    schema.cls.MAX_VERSION = max_version
    return schema


def _type_name(schema_name: str) -> str:
    """Kafka's MetadataRecordType constant, as kafka-dump-log prints it."""
    return upper_snake_case(schema_name)


_ENDPOINT_FIELDS = (
    Field("Name", STRING),
    Field("Host", STRING),
    Field("Port", UINT16),
    Field("SecurityProtocol", INT16),
)
_FEATURE_FIELDS = (
    Field("Name", STRING),
    Field("MinSupportedVersion", INT16),
    Field("MaxSupportedVersion", INT16),
)

_BROKER_ENDPOINT = nested("BrokerEndpoint", *_ENDPOINT_FIELDS)
_BROKER_FEATURE = nested("BrokerFeature", *_FEATURE_FIELDS)
_CONTROLLER_ENDPOINT = nested("ControllerEndpoint", *_ENDPOINT_FIELDS)
_CONTROLLER_FEATURE = nested("ControllerFeature", *_FEATURE_FIELDS)
_ENTITY_DATA = nested("EntityData", Field("EntityType", STRING), Field("EntityName", STRING, nullable=0))

_INT32S = Array(INT32)
_UUIDS = Array(UUID)

SCHEMAS: tuple[StructSchema, ...] = (
    _message(
        "RegisterBrokerRecord", 0, 4,
        Field("BrokerId", INT32),
        Field("IsMigratingZkBroker", BOOL, versions=2),
        Field("IncarnationId", UUID),
        Field("BrokerEpoch", INT64),
        Field("EndPoints", Array(_BROKER_ENDPOINT)),
        Field("Features", Array(_BROKER_FEATURE)),
        Field("Rack", STRING, nullable=0),
        Field("Fenced", BOOL, default=True),
        Field("InControlledShutdown", BOOL, versions=1),
        Field("LogDirs", _UUIDS, versions=3, tag=0),
        Field("CordonedLogDirs", _UUIDS, versions=4, nullable=4, tag=1, default=None),
    ),
    _message("UnregisterBrokerRecord", 1, 0, Field("BrokerId", INT32), Field("BrokerEpoch", INT64)),
    _message("TopicRecord", 2, 0, Field("Name", STRING), Field("TopicId", UUID)),
    _message(
        "PartitionRecord", 3, 2,
        Field("PartitionId", INT32, default=-1),
        Field("TopicId", UUID),
        Field("Replicas", _INT32S),
        Field("Isr", _INT32S),
        Field("RemovingReplicas", _INT32S),
        Field("AddingReplicas", _INT32S),
        Field("Leader", INT32, default=-1),
        Field("LeaderRecoveryState", INT8, tag=0),
        Field("LeaderEpoch", INT32, default=-1),
        Field("PartitionEpoch", INT32, default=-1),
        Field("Directories", _UUIDS, versions=1),
        Field("EligibleLeaderReplicas", _INT32S, versions=2, nullable=2, tag=1, default=None),
        Field("LastKnownElr", _INT32S, versions=2, nullable=2, tag=2, default=None),
    ),
    _message(
        "ConfigRecord", 4, 0,
        Field("ResourceType", INT8),
        Field("ResourceName", STRING),
        Field("Name", STRING),
        Field("Value", STRING, nullable=0),
    ),
    _message(
        "PartitionChangeRecord", 5, 2,
        Field("PartitionId", INT32, default=-1),
        Field("TopicId", UUID),
        Field("Isr", _INT32S, nullable=0, tag=0, default=None),
        Field("Leader", INT32, tag=1, default=-2),
        Field("Replicas", _INT32S, nullable=0, tag=2, default=None),
        Field("RemovingReplicas", _INT32S, nullable=0, tag=3, default=None),
        Field("AddingReplicas", _INT32S, nullable=0, tag=4, default=None),
        Field("LeaderRecoveryState", INT8, tag=5, default=-1),
        Field("Directories", _UUIDS, versions=1, nullable=1, tag=8, default=None),
        Field("EligibleLeaderReplicas", _INT32S, versions=2, nullable=2, tag=6, default=None),
        Field("LastKnownElr", _INT32S, versions=2, nullable=2, tag=7, default=None),
    ),
    _message("FenceBrokerRecord", 7, 0, Field("Id", INT32), Field("Epoch", INT64)),
    _message("UnfenceBrokerRecord", 8, 0, Field("Id", INT32), Field("Epoch", INT64)),
    _message("RemoveTopicRecord", 9, 0, Field("TopicId", UUID)),
    _message(
        "DelegationTokenRecord", 10, 0,
        Field("Owner", STRING),
        Field("Requester", STRING),
        Field("Renewers", Array(STRING)),
        Field("IssueTimestamp", INT64),
        Field("MaxTimestamp", INT64),
        Field("ExpirationTimestamp", INT64),
        Field("TokenId", STRING),
    ),
    _message(
        "UserScramCredentialRecord", 11, 0,
        Field("Name", STRING),
        Field("Mechanism", INT8),
        Field("Salt", BYTES),
        Field("StoredKey", BYTES),
        Field("ServerKey", BYTES),
        Field("Iterations", INT32),
    ),
    _message("FeatureLevelRecord", 12, 0, Field("Name", STRING), Field("FeatureLevel", INT16)),
    _message(
        "ClientQuotaRecord", 14, 0,
        Field("Entity", Array(_ENTITY_DATA)),
        Field("Key", STRING),
        Field("Value", FLOAT64),
        Field("Remove", BOOL),
    ),
    _message(
        "ProducerIdsRecord", 15, 0,
        Field("BrokerId", INT32),
        Field("BrokerEpoch", INT64, default=-1),
        Field("NextProducerId", INT64),
    ),
    _message(
        "BrokerRegistrationChangeRecord", 17, 3,
        Field("BrokerId", INT32),
        Field("BrokerEpoch", INT64),
        Field("Fenced", INT8, tag=0),
        Field("InControlledShutdown", INT8, versions=1, tag=1),
        Field("LogDirs", _UUIDS, versions=2, tag=2),
        Field("CordonedLogDirs", _UUIDS, versions=3, nullable=3, tag=3, default=None),
    ),
    _message(
        "AccessControlEntryRecord", 18, 0,
        Field("Id", UUID),
        Field("ResourceType", INT8),
        Field("ResourceName", STRING),
        Field("PatternType", INT8),
        Field("Principal", STRING),
        Field("Host", STRING),
        Field("Operation", INT8),
        Field("PermissionType", INT8),
    ),
    _message("RemoveAccessControlEntryRecord", 19, 0, Field("Id", UUID)),
    _message("NoOpRecord", 20, 0),
    _message("ZkMigrationStateRecord", 21, 0, Field("ZkMigrationState", INT8)),
    _message("RemoveUserScramCredentialRecord", 22, 0, Field("Name", STRING), Field("Mechanism", INT8)),
    _message("BeginTransactionRecord", 23, 0, Field("Name", STRING, nullable=0, tag=0, default=None)),
    _message("EndTransactionRecord", 24, 0),
    _message("AbortTransactionRecord", 25, 0, Field("Reason", STRING, nullable=0, tag=0, default=None)),
    _message("RemoveDelegationTokenRecord", 26, 0, Field("TokenId", STRING)),
    _message(
        "RegisterControllerRecord", 27, 0,
        Field("ControllerId", INT32),
        Field("IncarnationId", UUID),
        Field("ZkMigrationReady", BOOL),
        Field("EndPoints", Array(_CONTROLLER_ENDPOINT)),
        Field("Features", Array(_CONTROLLER_FEATURE)),
    ),
    _message("ClearElrRecord", 28, 0, Field("TopicName", STRING)),
    _message("UnregisterControllerRecord", 29, 0, Field("ControllerId", INT32)),
)

BY_API_KEY: dict[int, StructSchema] = {schema.cls.API_KEY: schema for schema in SCHEMAS}

RegisterBrokerRecord = BY_API_KEY[0].cls
UnregisterBrokerRecord = BY_API_KEY[1].cls
TopicRecord = BY_API_KEY[2].cls
PartitionRecord = BY_API_KEY[3].cls
ConfigRecord = BY_API_KEY[4].cls
PartitionChangeRecord = BY_API_KEY[5].cls
FenceBrokerRecord = BY_API_KEY[7].cls
UnfenceBrokerRecord = BY_API_KEY[8].cls
RemoveTopicRecord = BY_API_KEY[9].cls
DelegationTokenRecord = BY_API_KEY[10].cls
UserScramCredentialRecord = BY_API_KEY[11].cls
FeatureLevelRecord = BY_API_KEY[12].cls
ClientQuotaRecord = BY_API_KEY[14].cls
ProducerIdsRecord = BY_API_KEY[15].cls
BrokerRegistrationChangeRecord = BY_API_KEY[17].cls
AccessControlEntryRecord = BY_API_KEY[18].cls
RemoveAccessControlEntryRecord = BY_API_KEY[19].cls
NoOpRecord = BY_API_KEY[20].cls
ZkMigrationStateRecord = BY_API_KEY[21].cls
RemoveUserScramCredentialRecord = BY_API_KEY[22].cls
BeginTransactionRecord = BY_API_KEY[23].cls
EndTransactionRecord = BY_API_KEY[24].cls
AbortTransactionRecord = BY_API_KEY[25].cls
RemoveDelegationTokenRecord = BY_API_KEY[26].cls
RegisterControllerRecord = BY_API_KEY[27].cls
ClearElrRecord = BY_API_KEY[28].cls
UnregisterControllerRecord = BY_API_KEY[29].cls

BrokerEndpoint = _BROKER_ENDPOINT.cls
BrokerFeature = _BROKER_FEATURE.cls
ControllerEndpoint = _CONTROLLER_ENDPOINT.cls
ControllerFeature = _CONTROLLER_FEATURE.cls
EntityData = _ENTITY_DATA.cls
