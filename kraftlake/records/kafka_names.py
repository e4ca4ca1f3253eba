"""Kafka's names for the codes its metadata records carry, as its Java enums define them (checked against Kafka's
jars by tests/records/test_kafka_names.py): what an operator reads in kafka-acls, kafka-ui or AKHQ instead of the
wire code. One table per enum; a code Kafka does not define is shown as the code itself."""

from __future__ import annotations

from types import MappingProxyType

# org.apache.kafka.common.resource.ResourceType (AccessControlEntryRecord.resourceType)
RESOURCE_TYPES = MappingProxyType({0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                                   6: "DELEGATION_TOKEN", 7: "USER"})
# org.apache.kafka.common.resource.PatternType
PATTERN_TYPES = MappingProxyType({0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"})
# org.apache.kafka.common.acl.AclOperation
ACL_OPERATIONS = MappingProxyType({
    0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
    9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS",
    14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"})
# org.apache.kafka.common.acl.AclPermissionType
PERMISSION_TYPES = MappingProxyType({0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"})
# org.apache.kafka.common.security.auth.SecurityProtocol (a listener's securityProtocol)
SECURITY_PROTOCOLS = MappingProxyType({0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"})
# org.apache.kafka.metadata.LeaderRecoveryState (PartitionRecord.leaderRecoveryState)
LEADER_RECOVERY_STATES = MappingProxyType({0: "RECOVERED", 1: "RECOVERING"})

# org.apache.kafka.common.DirectoryId: the directory ids Kafka reserves, as Uuid's base64 text
MIGRATING_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid(0, 0): no directory known yet (a record without directories)
UNASSIGNED_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid(0, 1): a replica not yet placed in a directory
LOST_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAg"  # Uuid(0, 2): a replica whose directory went offline
DIRECTORY_IDS = MappingProxyType({MIGRATING_DIRECTORY: "MIGRATING", UNASSIGNED_DIRECTORY: "UNASSIGNED",
                                  LOST_DIRECTORY: "LOST"})

# the enums by the name of the Java class they come from, for the check against Kafka's jars
ENUMS = MappingProxyType({
    "ResourceType": RESOURCE_TYPES, "PatternType": PATTERN_TYPES, "AclOperation": ACL_OPERATIONS,
    "AclPermissionType": PERMISSION_TYPES, "SecurityProtocol": SECURITY_PROTOCOLS,
    "LeaderRecoveryState": LEADER_RECOVERY_STATES,
})
