"""The canonical JSON form of an image: one deterministic object per image, secrets redacted.

Both `kraftlake replay --json` and the Delta time-travel reader print this form, so the two can be diffed
byte for byte. Keys are sorted; maps keyed by ids are JSON objects keyed by the id as text; lists that are
sets in Kafka (directories, endpoints) are sorted; replica lists keep their order (it means preference).

This module gives every section as plain data except `topics`: a million partitions are written as text
straight from their Arrow columns by `kraftlake.image_schema.canonical`, which assembles the document (and is where
`canonical_json` lives).
"""

from __future__ import annotations

from typing import Any

from kraftlake.records.config_secrecy import is_secret_config
from kraftlake.replay.acls import StandardAcl
from kraftlake.replay.client_quotas import QuotaEntity
from kraftlake.replay.cluster import BrokerRegistration, ControllerRegistration, Endpoint, FeatureRange
from kraftlake.replay.configs import RESOURCE_TYPE_NAMES, ConfigResource
from kraftlake.replay.delegation_tokens import DelegationToken
from kraftlake.replay.fields import camel_case, plain
from kraftlake.replay.image import MetadataImage, Provenance
from kraftlake.replay.scram import MECHANISMS
from kraftlake.replay.topics import PartitionRegistration

REDACTED = "[redacted]"
TOPICS_SECTION = "topics"  # the section `kraftlake.image_schema.canonical` writes from the topics tables


def canonical_sections(image: MetadataImage) -> dict[str, Any]:
    """Every top-level section of the canonical document but `topics`, as plain data."""
    return {
        "provenance": provenance_json(image.provenance),
        "features": {
            "metadataVersion": image.features.metadata_version,
            "finalized": dict(image.features.finalized),
        },
        "brokers": {str(k): broker_json(v) for k, v in image.cluster.brokers.items()},
        "controllers": {str(k): controller_json(v) for k, v in image.cluster.controllers.items()},
        "configs": {
            f"{RESOURCE_TYPE_NAMES.get(resource.resource_type, resource.resource_type)}:{resource.resource_name}": {
                name: config_value(resource, name, value) for name, value in configs.items()
            }
            for resource, configs in image.configs.resources.items()
        },
        "clientQuotas": {
            quota_entity_text(entity): dict(quotas) for entity, quotas in image.client_quotas.entities.items()
        },
        "producerIds": {"nextProducerId": image.producer_ids.next_producer_id},
        "acls": {acl_id: acl_json(acl) for acl_id, acl in image.acls.acls.items()},
        "scramCredentials": {
            f"{key.user}:{MECHANISMS.get(key.mechanism, key.mechanism)}": {"iterations": credential.iterations}
            for key, credential in image.scram.credentials.items()
        },
        "delegationTokens": {token_id: token_json(token) for token_id, token in image.delegation_tokens.tokens.items()},
        "quorum": {
            "kraftVersion": image.voters.kraft_version,
            "voters": {str(k): plain(v, camel_case) for k, v in image.voters.voters.items()},
        },
    }


def provenance_json(provenance: Provenance) -> dict[str, Any]:
    return {
        "offset": provenance.offset,
        "epoch": provenance.epoch,
        "logTimeMs": provenance.log_time_ms,
        "batchAligned": provenance.batch_aligned,
    }


def config_value(resource: ConfigResource, name: str, value: str) -> str:
    """The value as kraftlake shows and keeps it: a secret by Kafka's rule is never more than "[redacted]"."""
    return REDACTED if is_secret_config(resource.resource_type, name) else value


def quota_entity_text(entity: QuotaEntity) -> str:
    """`user=alice,client-id=<default>`: Kafka's entity types with None shown as <default>."""
    return ",".join(f"{kind}={'<default>' if name is None else name}" for kind, name in entity)


def endpoint_json(endpoint: Endpoint) -> dict[str, Any]:
    return plain(endpoint, camel_case)


def feature_range_json(feature: FeatureRange) -> dict[str, Any]:
    return plain(feature, camel_case, leave_out=("name",))  # the key it is listed under


def _registration_json(registration: BrokerRegistration | ControllerRegistration) -> dict[str, Any]:
    """Supported features keyed by name (a set in Kafka), everything else as declared."""
    return {
        **plain(registration, camel_case, leave_out=("supported_features",)),
        "supportedFeatures": {f.name: feature_range_json(f) for f in registration.supported_features},
    }


def broker_json(broker: BrokerRegistration) -> dict[str, Any]:
    return _registration_json(broker)


def controller_json(controller: ControllerRegistration) -> dict[str, Any]:
    return _registration_json(controller)


def partition_json(partition: PartitionRegistration) -> dict[str, Any]:
    """One partition as the admin API shows it (field names as in the canonical document)."""
    return plain(partition, camel_case)


def acl_json(acl: StandardAcl) -> dict[str, Any]:
    return plain(acl, camel_case)


def token_json(token: DelegationToken) -> dict[str, Any]:
    return plain(token, camel_case, leave_out=("token_id",))  # the key it is listed under
