"""An image written back as records, as Kafka's ImageWriter does for a snapshot.

Record versions follow the target metadata.version; a field an older version cannot carry is dropped and
named in `losses`. Order: features (metadata.version first), cluster, topics (each TopicRecord followed by
its PartitionRecords), configs, client quotas, producer ids, ACLs, SCRAM, delegation tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kraftlake.records import RecordBatch, snapshot_file
from kraftlake.records import metadata_types as mt
from kraftlake.records.control_types import (
    KRaftVersionFeature,
    KRaftVersionRecord,
    VoterEndpoint,
    VotersRecord,
    VotersVoter,
)
from kraftlake.records.snapshot_file import RECORDS_PER_BATCH
from kraftlake.replay.features import METADATA_VERSION
from kraftlake.replay.image import MetadataImage
from kraftlake.replay.topics import MIGRATING_DIRECTORY

MV_3_4_IV0 = 8
MV_3_7_IV0 = 15
MV_3_7_IV2 = 17
MV_4_0_IV1 = 23
MV_4_3_IV0 = 30  # RegisterBrokerRecord v4: cordoned log directories


@dataclass
class ImageWriter:
    """Collects the records of an image at one metadata.version, and what that version cannot express."""

    metadata_version: int
    records: list[tuple[Any, int]] = field(default_factory=list)  # (message, version)
    losses: list[str] = field(default_factory=list)

    def add(self, message: Any, version: int = 0) -> None:
        self.records.append((message, version))

    def lose(self, what: str) -> None:
        if what not in self.losses:
            self.losses.append(what)


def image_records(image: MetadataImage, metadata_version: int | None = None) -> ImageWriter:
    """The records that rebuild `image` from empty, at `metadata_version` (default: the image's own)."""
    level = metadata_version if metadata_version is not None else image.features.metadata_version
    if level is None:
        raise ValueError("the image has no metadata.version: name the one to write at")
    writer = ImageWriter(level)
    for write in (_features, _cluster, _topics, _configs, _client_quotas, _producer_ids, _acls, _scram, _tokens):
        write(image, writer)
    return writer


def _features(image: MetadataImage, writer: ImageWriter) -> None:
    writer.add(mt.FeatureLevelRecord(name=METADATA_VERSION, feature_level=writer.metadata_version))
    for name, level in image.features.finalized.items():
        writer.add(mt.FeatureLevelRecord(name=name, feature_level=level))


def _endpoints(cls: type, listeners: Any) -> tuple[Any, ...]:
    return tuple(cls(e.name, e.host, e.port, e.security_protocol) for e in listeners)


def _feature_ranges(cls: type, features: Any) -> tuple[Any, ...]:
    return tuple(cls(f.name, f.min_supported_version, f.max_supported_version) for f in features)


def _cluster(image: MetadataImage, writer: ImageWriter) -> None:
    level = writer.metadata_version
    version = 4 if level >= MV_4_3_IV0 else 3 if level >= MV_3_7_IV2 else 2 if level >= MV_3_4_IV0 else 1
    for broker in image.cluster.brokers.values():
        if broker.is_migrating_zk_broker and version < 2:
            writer.lose("the isMigratingZkBroker state of one or more brokers")
        if broker.directories and version < 3:
            writer.lose("the directory assignment state of one or more brokers")
        if broker.cordoned_directories is not None and version < 4:
            writer.lose("the cordoned log directories of one or more brokers")
        writer.add(
            mt.RegisterBrokerRecord(
                broker_id=broker.broker_id,
                is_migrating_zk_broker=broker.is_migrating_zk_broker and version >= 2,
                incarnation_id=broker.incarnation_id,
                broker_epoch=broker.epoch,
                end_points=_endpoints(mt.BrokerEndpoint, broker.listeners),
                features=_feature_ranges(mt.BrokerFeature, broker.supported_features),
                rack=broker.rack,
                fenced=broker.fenced,
                in_controlled_shutdown=broker.in_controlled_shutdown,
                log_dirs=broker.directories if version >= 3 else (),
                cordoned_log_dirs=broker.cordoned_directories if version >= 4 else None,
            ),
            version,
        )
    for controller in image.cluster.controllers.values():
        if level < MV_3_7_IV0:
            writer.lose("controller registrations")
            continue
        writer.add(
            mt.RegisterControllerRecord(
                controller_id=controller.controller_id,
                incarnation_id=controller.incarnation_id,
                zk_migration_ready=controller.zk_migration_ready,
                end_points=_endpoints(mt.ControllerEndpoint, controller.listeners),
                features=_feature_ranges(mt.ControllerFeature, controller.supported_features),
            )
        )


def _topics(image: MetadataImage, writer: ImageWriter) -> None:
    level = writer.metadata_version
    version = 2 if level >= MV_4_0_IV1 else 1 if level >= MV_3_7_IV2 else 0
    for topic in image.topics.by_id.values():
        writer.add(mt.TopicRecord(name=topic.name, topic_id=topic.topic_id))
        for partition_id, p in topic.partitions.items():
            if version < 1 and any(d != MIGRATING_DIRECTORY for d in p.directories):
                writer.lose("the directory assignment state of one or more replicas")
            if version < 2 and (p.elr or p.last_known_elr):
                writer.lose("the eligible leader replicas of one or more partitions")
            writer.add(
                mt.PartitionRecord(
                    partition_id=partition_id,
                    topic_id=topic.topic_id,
                    replicas=p.replicas,
                    isr=p.isr,
                    removing_replicas=p.removing_replicas,
                    adding_replicas=p.adding_replicas,
                    leader=p.leader,
                    leader_recovery_state=p.leader_recovery_state,
                    leader_epoch=p.leader_epoch,
                    partition_epoch=p.partition_epoch,
                    directories=p.directories if version >= 1 else (),
                    # Kafka leaves these tagged fields out when empty (PartitionRegistration.toRecord)
                    eligible_leader_replicas=(p.elr or None) if version >= 2 else None,
                    last_known_elr=(p.last_known_elr or None) if version >= 2 else None,
                ),
                version,
            )


def _configs(image: MetadataImage, writer: ImageWriter) -> None:
    for resource, configs in image.configs.resources.items():
        for name, value in configs.items():
            writer.add(
                mt.ConfigRecord(
                    resource_type=resource.resource_type, resource_name=resource.resource_name, name=name, value=value
                )
            )


def _client_quotas(image: MetadataImage, writer: ImageWriter) -> None:
    for entity, quotas in image.client_quotas.entities.items():
        entity_data = tuple(mt.EntityData(kind, name) for kind, name in entity)
        for key, value in quotas.items():
            writer.add(mt.ClientQuotaRecord(entity=entity_data, key=key, value=value, remove=False))


def _producer_ids(image: MetadataImage, writer: ImageWriter) -> None:
    if not image.producer_ids.is_empty():
        writer.add(
            mt.ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=image.producer_ids.next_producer_id)
        )


def _acls(image: MetadataImage, writer: ImageWriter) -> None:
    for acl_id, acl in image.acls.acls.items():
        writer.add(mt.AccessControlEntryRecord(acl_id, *acl))


def _scram(image: MetadataImage, writer: ImageWriter) -> None:
    for key, credential in image.scram.credentials.items():
        writer.add(
            mt.UserScramCredentialRecord(
                name=key.user,
                mechanism=key.mechanism,
                salt=credential.salt,
                stored_key=credential.stored_key,
                server_key=credential.server_key,
                iterations=credential.iterations,
            )
        )


def _tokens(image: MetadataImage, writer: ImageWriter) -> None:
    for token in image.delegation_tokens.tokens.values():
        writer.add(
            mt.DelegationTokenRecord(
                owner=token.owner,
                requester=token.requester,
                renewers=token.renewers,
                issue_timestamp=token.issue_timestamp,
                max_timestamp=token.max_timestamp,
                expiration_timestamp=token.expiration_timestamp,
                token_id=token.token_id,
            )
        )



def quorum_records(image: MetadataImage) -> list[Any]:
    """The control records of the quorum state (KIP-853) a snapshot's header batch carries: KRaftVersion, then
    Voters; none when the log never stated them (kraft.version 0). Not metadata records: Raft writes them."""
    quorum = image.voters
    records: list[Any] = []
    if quorum.kraft_version is not None:
        records.append(KRaftVersionRecord(version=0, kraft_version=quorum.kraft_version))
    if quorum.voters:
        records.append(VotersRecord(version=0, voters=tuple(
            VotersVoter(
                voter_id=voter.voter_id,
                voter_directory_id=voter.directory_id,
                endpoints=tuple(VoterEndpoint(name=e.name, host=e.host, port=e.port) for e in voter.endpoints),
                kraft_version_feature=KRaftVersionFeature(
                    min_supported_version=voter.min_supported_kraft_version,
                    max_supported_version=voter.max_supported_kraft_version,
                ),
            )
            for voter in quorum.voters.values()
        )))
    return records


def snapshot_batches(
    image: MetadataImage, append_time_ms: int, *, max_records_per_batch: int = RECORDS_PER_BATCH
) -> list[RecordBatch]:
    """The batches of a snapshot file of `image` (the format is `kraftlake.records.snapshot_file`'s)."""
    return snapshot_file.snapshot_batches(
        image.provenance.epoch,
        image_records(image).records,
        image.provenance.log_time_ms,
        append_time_ms,
        records_per_batch=max_records_per_batch,
        header_records=quorum_records(image),
    )
