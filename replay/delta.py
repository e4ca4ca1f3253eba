"""MetadataDelta: the changes a run of records makes to an image, one sub-delta per sub-image.

Sub-deltas are created on first use, so `apply` hands unchanged sub-images to the next image as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraftlake.records import metadata_types as mt
from kraftlake.records.control_types import KRaftVersionRecord, VotersRecord
from kraftlake.replay.acls import AclsDelta
from kraftlake.replay.client_quotas import ClientQuotasDelta
from kraftlake.replay.cluster import ClusterDelta
from kraftlake.replay.configs import ConfigurationsDelta
from kraftlake.replay.delegation_tokens import DelegationTokensDelta
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.features import FeaturesDelta
from kraftlake.replay.image import SUB_IMAGES, MetadataImage, Provenance
from kraftlake.replay.producer_ids import ProducerIdsDelta
from kraftlake.replay.scram import ScramDelta
from kraftlake.replay.topics import TopicsDelta
from kraftlake.replay.voters import VotersDelta

_DELTA_TYPES: dict[str, type] = {
    "features": FeaturesDelta,
    "cluster": ClusterDelta,
    "topics": TopicsDelta,
    "configs": ConfigurationsDelta,
    "client_quotas": ClientQuotasDelta,
    "producer_ids": ProducerIdsDelta,
    "acls": AclsDelta,
    "scram": ScramDelta,
    "delegation_tokens": DelegationTokensDelta,
    "voters": VotersDelta,
}

# record type -> (sub-image, method of its delta). Records absent here change nothing.
_ROUTES: dict[type, tuple[str, str]] = {
    mt.FeatureLevelRecord: ("features", "replay_feature_level"),
    mt.RegisterBrokerRecord: ("cluster", "replay_register_broker"),
    mt.UnregisterBrokerRecord: ("cluster", "replay_unregister_broker"),
    mt.FenceBrokerRecord: ("cluster", "replay_fence_broker"),
    mt.UnfenceBrokerRecord: ("cluster", "replay_unfence_broker"),
    mt.BrokerRegistrationChangeRecord: ("cluster", "replay_broker_registration_change"),
    mt.RegisterControllerRecord: ("cluster", "replay_register_controller"),
    mt.UnregisterControllerRecord: ("cluster", "replay_unregister_controller"),
    mt.TopicRecord: ("topics", "replay_topic"),
    mt.PartitionRecord: ("topics", "replay_partition"),
    mt.PartitionChangeRecord: ("topics", "replay_partition_change"),
    mt.ClearElrRecord: ("topics", "replay_clear_elr"),
    mt.ConfigRecord: ("configs", "replay_config"),
    mt.ClientQuotaRecord: ("client_quotas", "replay_client_quota"),
    mt.ProducerIdsRecord: ("producer_ids", "replay_producer_ids"),
    mt.AccessControlEntryRecord: ("acls", "replay_acl"),
    mt.RemoveAccessControlEntryRecord: ("acls", "replay_remove_acl"),
    mt.UserScramCredentialRecord: ("scram", "replay_credential"),
    mt.RemoveUserScramCredentialRecord: ("scram", "replay_remove_credential"),
    mt.DelegationTokenRecord: ("delegation_tokens", "replay_token"),
    mt.RemoveDelegationTokenRecord: ("delegation_tokens", "replay_remove_token"),
    # Control records (the Raft layer's state): the loader hands them over at their own offset, see loader.
    KRaftVersionRecord: ("voters", "replay_kraft_version"),
    VotersRecord: ("voters", "replay_voters"),
}
# Every record type that changes the image (a type missing here is rejected by the loader). Other layers keyed by
# record type (image_schema's row history) check themselves against this set.
STATE_CHANGING_TYPES: frozenset[type] = frozenset(_ROUTES) | {mt.RemoveTopicRecord}
# No state: they still count as records seen and advance the offset.
NO_OP_TYPES: frozenset[type] = frozenset({mt.NoOpRecord, mt.ZkMigrationStateRecord})
# Control records that carry Raft state into the image (the loader applies them at their own offset).
QUORUM_CONTROL_TYPES: frozenset[type] = frozenset({KRaftVersionRecord, VotersRecord})
TRANSACTION_MARKERS: frozenset[type] = frozenset(
    {mt.BeginTransactionRecord, mt.EndTransactionRecord, mt.AbortTransactionRecord}
)


class MetadataDelta:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.deltas: dict[str, Any] = {}
        # record type -> the bound method that replays it, filled on first use; never a transaction marker
        # (the loader reads it to skip `replay`'s call on its hot path)
        self.handlers: dict[type, Callable[[Any], Any]] = {}

    def _delta(self, name: str) -> Any:
        delta = self.deltas.get(name)
        if delta is None:
            delta = self.deltas[name] = _DELTA_TYPES[name](getattr(self.image, name))
        return delta

    def _detached(self, name: str) -> Any:
        """An empty sub-delta on the image, for reading `name` when no live one exists: reading creates nothing,
        so `apply` still hands the unchanged sub-image on. (The typed readers below look for the live one
        inline: the change recorder reads a row twice per record.)"""
        return _DELTA_TYPES[name](getattr(self.image, name))

    # The sub-image contract: one typed reader per sub-image (Kafka's `topicsDelta()` and siblings).

    def features_delta(self) -> FeaturesDelta:
        return self.deltas.get("features") or self._detached("features")

    def cluster_delta(self) -> ClusterDelta:
        return self.deltas.get("cluster") or self._detached("cluster")

    def topics_delta(self) -> TopicsDelta:
        return self.deltas.get("topics") or self._detached("topics")

    def configs_delta(self) -> ConfigurationsDelta:
        return self.deltas.get("configs") or self._detached("configs")

    def client_quotas_delta(self) -> ClientQuotasDelta:
        return self.deltas.get("client_quotas") or self._detached("client_quotas")

    def producer_ids_delta(self) -> ProducerIdsDelta:
        return self.deltas.get("producer_ids") or self._detached("producer_ids")

    def acls_delta(self) -> AclsDelta:
        return self.deltas.get("acls") or self._detached("acls")

    def scram_delta(self) -> ScramDelta:
        return self.deltas.get("scram") or self._detached("scram")

    def delegation_tokens_delta(self) -> DelegationTokensDelta:
        return self.deltas.get("delegation_tokens") or self._detached("delegation_tokens")

    def voters_delta(self) -> VotersDelta:
        return self.deltas.get("voters") or self._detached("voters")

    def replay(self, message: Any) -> None:
        """Apply one metadata record (not a transaction marker: the loader consumes those)."""
        try:
            handler = self.handlers[type(message)]
        except KeyError:  # first record of its type in this delta (a miss costs nothing in the common case)
            handler = self.handlers[type(message)] = self._handler_for(type(message))
        handler(message)

    def _handler_for(self, record_type: type) -> Callable[[Any], Any]:
        if record_type is mt.RemoveTopicRecord:
            return self._replay_remove_topic
        route = _ROUTES.get(record_type)
        if route is not None:
            return getattr(self._delta(route[0]), route[1])
        if record_type in NO_OP_TYPES:
            return _ignore
        if record_type in TRANSACTION_MARKERS:
            raise ReplayError(f"{_type_name(record_type)} reached the delta: transactions are the loader's job")
        raise ReplayError(f"{_type_name(record_type)} is not a metadata record")

    def _replay_remove_topic(self, record: Any) -> None:
        name = self._delta("topics").replay_remove_topic(record)
        self._delta("configs").delete_topic_configs(name)

    def finish_snapshot(self) -> None:
        """Everything the image holds that the snapshot did not re-assert is removed."""
        for name in SUB_IMAGES:
            self._delta(name).finish_snapshot()

    def apply(self, provenance: Provenance) -> MetadataImage:
        sub_images = {name: delta.apply() for name, delta in self.deltas.items()}
        return MetadataImage(provenance=provenance, **{
            name: sub_images.get(name, getattr(self.image, name)) for name in SUB_IMAGES
        })

    def has_changes(self) -> bool:
        return bool(self.deltas)


def _type_name(record_type: type) -> str:
    """Kafka's name of a record type; the class name of anything else handed to `kraftlake.replay`."""
    name: str = getattr(record_type, "TYPE_NAME", record_type.__name__)
    return name


def _ignore(_record: Any) -> None:
    """NoOpRecord and ZkMigrationStateRecord change no state."""
