"""One or two Delta tables per sub-image: every table, in image order, from the sub-images' modules.

Rows carry no secret: SCRAM salts and keys never leave `kraftlake.replay`, and config values whose name marks them
sensitive are written as "[redacted]". Every table can produce its rows from a whole image (a snapshot,
a first publish) or one row by key from a delta being replayed (record-level history). Each sub-image's
table code lives in its own module (`kraftlake.image_schema.topics`, ...); see `kraftlake.image_schema.spec`.
"""

from __future__ import annotations

from kraftlake.image_schema.acls import ACLS, acl_row
from kraftlake.image_schema.client_quotas import CLIENT_QUOTAS, parse_quota_entity, quota_row
from kraftlake.image_schema.cluster import CLUSTER, broker_row, controller_row
from kraftlake.image_schema.configs import CONFIGS, RESOURCE_TYPE_IDS, config_resource, config_resource_type, config_row
from kraftlake.image_schema.delegation_tokens import DELEGATION_TOKENS, token_row
from kraftlake.image_schema.features import FEATURES
from kraftlake.image_schema.producer_ids import PRODUCER_IDS
from kraftlake.image_schema.scram import SCRAM, mechanism_id, mechanism_name, scram_row
from kraftlake.image_schema.spec import Key, Row, SubImageTables, TableSpec, Values
from kraftlake.image_schema.topics import TOPICS, partition_values
from kraftlake.image_schema.voters import VOTERS, voter_row
from kraftlake.replay.image import SUB_IMAGES

# In MetadataImage's order: checked on import, so a sub-image without tables cannot go unnoticed.
SUB_IMAGE_TABLES: tuple[SubImageTables, ...] = (
    FEATURES, CLUSTER, TOPICS, CONFIGS, CLIENT_QUOTAS, PRODUCER_IDS, ACLS, SCRAM, DELEGATION_TOKENS, VOTERS,
)
if tuple(s.sub_image for s in SUB_IMAGE_TABLES) != SUB_IMAGES:
    raise RuntimeError("image_schema.tables.SUB_IMAGE_TABLES must list replay.image.SUB_IMAGES, in order")

TABLES: dict[str, TableSpec] = {spec.name: spec for sub_image in SUB_IMAGE_TABLES for spec in sub_image.tables}

__all__ = [
    "RESOURCE_TYPE_IDS",
    "SUB_IMAGE_TABLES",
    "TABLES",
    "Key",
    "Row",
    "TableSpec",
    "Values",
    "acl_row",
    "broker_row",
    "config_resource",
    "config_resource_type",
    "config_row",
    "controller_row",
    "mechanism_id",
    "mechanism_name",
    "parse_quota_entity",
    "partition_values",
    "quota_row",
    "scram_row",
    "token_row",
    "voter_row",
]
