"""MetadataImage: an immutable snapshot of the cluster metadata at one log offset.

Consecutive images share every sub-image a delta did not touch (the same object, not a copy).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kraftlake.replay.acls import AclsImage
from kraftlake.replay.client_quotas import ClientQuotasImage
from kraftlake.replay.cluster import ClusterImage
from kraftlake.replay.configs import ConfigurationsImage
from kraftlake.replay.delegation_tokens import DelegationTokensImage
from kraftlake.replay.features import FeaturesImage
from kraftlake.replay.producer_ids import ProducerIdsImage
from kraftlake.replay.scram import ScramImage
from kraftlake.replay.topics import TopicsImage
from kraftlake.replay.voters import VotersImage


@dataclass(frozen=True)
class Provenance:
    """Where an image stands in the log: its last contained offset, that offset's epoch and batch time."""

    offset: int = -1
    epoch: int = -1
    log_time_ms: int = -1
    batch_aligned: bool = False


SUB_IMAGES = (
    "features",
    "cluster",
    "topics",
    "configs",
    "client_quotas",
    "producer_ids",
    "acls",
    "scram",
    "delegation_tokens",
    "voters",
)


@dataclass(frozen=True)
class MetadataImage:
    provenance: Provenance = field(default_factory=Provenance)
    features: FeaturesImage = field(default_factory=FeaturesImage)
    cluster: ClusterImage = field(default_factory=ClusterImage)
    topics: TopicsImage = field(default_factory=TopicsImage)
    configs: ConfigurationsImage = field(default_factory=ConfigurationsImage)
    client_quotas: ClientQuotasImage = field(default_factory=ClientQuotasImage)
    producer_ids: ProducerIdsImage = field(default_factory=ProducerIdsImage)
    acls: AclsImage = field(default_factory=AclsImage)
    scram: ScramImage = field(default_factory=ScramImage)
    delegation_tokens: DelegationTokensImage = field(default_factory=DelegationTokensImage)
    voters: VotersImage = field(default_factory=VotersImage)  # the quorum's (KIP-853), from control records

    def is_empty(self) -> bool:
        return self.metadata_is_empty() and self.voters.is_empty()

    def metadata_is_empty(self) -> bool:
        """No metadata record has left a trace (the quorum's control records aside): what decides, as in Kafka,
        whether a log still needs its bootstrap records."""
        return all(getattr(self, name).is_empty() for name in SUB_IMAGES if name != "voters")


EMPTY_IMAGE = MetadataImage()
