"""Small builders for replay tests: records, batches, a recording publisher, one-delta replay.

Named after the notation of ../shared/reference/loader-test-cases.md (B, E, A, N, T(x), P(x, i), MV) so a test
reads like the scenario it restates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from kraftlake.records import RecordBatch, make_batch
from kraftlake.records import metadata_types as mt
from kraftlake.records.control_types import (
    KRaftVersionFeature,
    KRaftVersionRecord,
    VoterEndpoint,
    VotersRecord,
    VotersVoter,
)
from kraftlake.records.wire import uuid_to_text
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.image import EMPTY_IMAGE, MetadataImage, Provenance
from kraftlake.replay.loader import Manifest


def uuid(n: int) -> str:
    """A valid, readable base64 UUID for the n-th test entity (never the reserved ids 0..99)."""
    return uuid_to_text((n + 1000).to_bytes(16, "big"))


def B(name: str = "txn") -> Any:
    return mt.BeginTransactionRecord(name=name)


def E() -> Any:
    return mt.EndTransactionRecord()


def A(reason: str = "aborted") -> Any:
    return mt.AbortTransactionRecord(reason=reason)


def N() -> Any:
    return mt.NoOpRecord()


def MV(level: int = 7) -> Any:
    return mt.FeatureLevelRecord(name="metadata.version", feature_level=level)


def T(name: str, topic_id: str | None = None) -> Any:
    return mt.TopicRecord(name=name, topic_id=topic_id or topic_id_of(name))


def P(
    topic: str,
    partition_id: int,
    replicas: Sequence[int] = (0, 1, 2),
    *,
    topic_id: str | None = None,
    isr: Sequence[int] | None = None,
    leader: int | None = None,
    leader_epoch: int = 0,
    partition_epoch: int = 0,
    **fields: Any,
) -> Any:
    return mt.PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id or topic_id_of(topic),
        replicas=tuple(replicas),
        isr=tuple(replicas if isr is None else isr),
        leader=replicas[0] if leader is None else leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        **fields,
    )


def change(topic: str, partition_id: int, *, topic_id: str | None = None, **fields: Any) -> Any:
    """A PartitionChangeRecord: every field not given is absent (null, leader -2, recovery state -1)."""
    return mt.PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id or topic_id_of(topic), **fields)


def remove(topic: str, topic_id: str | None = None) -> Any:
    return mt.RemoveTopicRecord(topic_id=topic_id or topic_id_of(topic))


_TOPIC_IDS: dict[str, str] = {}


def topic_id_of(name: str) -> str:
    """A stable id per topic name, so scenarios can say T("foo") and P("foo", 0)."""
    return _TOPIC_IDS.setdefault(name, uuid(len(_TOPIC_IDS) + 1))


def data(base: int, epoch: int, size: int, messages: Sequence[Any], append_time_ms: int = 0) -> RecordBatch:
    """`Batch.data(base, epoch, appendTs, sizeInBytes, records)` of the scenarios."""
    return dataclasses.replace(make_batch(base, epoch, append_time_ms, list(messages)), size_in_bytes=size)


def control(base: int, epoch: int, size: int, messages: Sequence[Any], append_time_ms: int = 0) -> RecordBatch:
    batch = make_batch(base, epoch, append_time_ms, list(messages), control=True)
    return dataclasses.replace(batch, size_in_bytes=size)


def apply_records(records: Iterable[Any], image: MetadataImage = EMPTY_IMAGE, offset: int = 0) -> MetadataImage:
    """`records` replayed into one delta on `image` and applied (no transactions: markers are the loader's)."""
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(Provenance(offset, 1, 0, True))


@dataclasses.dataclass
class Published:
    delta: MetadataDelta
    image: MetadataImage
    manifest: Manifest


class Recorder:
    """A publisher that keeps every (delta, image, manifest) it is handed."""

    def __init__(self) -> None:
        self.updates: list[Published] = []

    def __call__(self, delta: MetadataDelta, image: MetadataImage, manifest: Manifest) -> None:
        self.updates.append(Published(delta, image, manifest))

    @property
    def latest(self) -> Published:
        return self.updates[-1]

    def __len__(self) -> int:
        return len(self.updates)


def KV(level: int) -> Any:
    """A KRaftVersion control record."""
    return KRaftVersionRecord(version=0, kraft_version=level)


def VOTERS(*voter_ids: int) -> Any:
    """A KRaftVoters control record: voter n has directory uuid(400 + n) and one endpoint c<n>:9093."""
    return VotersRecord(version=0, voters=tuple(
        VotersVoter(
            voter_id=n, voter_directory_id=uuid(400 + n),
            endpoints=(VoterEndpoint(name="CONTROLLER", host=f"c{n}", port=9093),),
            kraft_version_feature=KRaftVersionFeature(min_supported_version=0, max_supported_version=1),
        )
        for n in voter_ids
    ))


def rich_records() -> list[Any]:
    """A valid record list touching every sub-image, with changes and removals of each kind of entity."""
    broker = [
        mt.RegisterBrokerRecord(
            broker_id=b, broker_epoch=10 + b, incarnation_id=uuid(500 + b), fenced=True, rack=f"r{b % 2}",
            end_points=(mt.BrokerEndpoint(name="PLAINTEXT", host=f"b{b}", port=9092, security_protocol=0),),
            features=(mt.BrokerFeature(name="metadata.version", min_supported_version=7, max_supported_version=29),),
            log_dirs=(uuid(600 + b),),
        )
        for b in range(3)
    ]
    entity = (mt.EntityData(entity_type="user", entity_name="alice"),)
    return [
        KV(1),
        VOTERS(3000, 3001),
        MV(21),
        mt.FeatureLevelRecord(name="group.version", feature_level=1),
        mt.FeatureLevelRecord(name="transaction.version", feature_level=2),
        mt.ZkMigrationStateRecord(zk_migration_state=0),
        mt.ConfigRecord(resource_type=4, resource_name="", name="min.insync.replicas", value="2"),
        *broker,
        mt.RegisterControllerRecord(controller_id=3000, incarnation_id=uuid(700)),
        mt.RegisterControllerRecord(controller_id=3001, incarnation_id=uuid(701)),
        mt.UnregisterControllerRecord(controller_id=3001),
        mt.UnfenceBrokerRecord(id=0, epoch=10),
        mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=11, fenced=-1, in_controlled_shutdown=0),
        N(),
        T("orders", uuid(800)),
        P("orders", 0, (0, 1, 2), topic_id=uuid(800)),
        P("orders", 1, (1, 2, 0), topic_id=uuid(800)),
        mt.ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="1000"),
        T("audit", uuid(801)),
        P("audit", 0, (2, 0), topic_id=uuid(801)),
        change("orders", 0, topic_id=uuid(800), isr=(0, 1)),
        change("orders", 0, topic_id=uuid(800), leader=1),
        change("orders", 1, topic_id=uuid(800), replicas=(1, 2, 0, 3), adding_replicas=(3,)),
        change("audit", 0, topic_id=uuid(801), isr=(2,), eligible_leader_replicas=(0,), last_known_elr=(0,)),
        mt.ClearElrRecord(topic_name="audit"),
        change("audit", 0, topic_id=uuid(801), eligible_leader_replicas=(0,)),
        mt.ClearElrRecord(topic_name=""),
        mt.FenceBrokerRecord(id=0, epoch=10),
        mt.BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=12, fenced=0, in_controlled_shutdown=1),
        mt.UnregisterBrokerRecord(broker_id=2, broker_epoch=12),
        mt.ProducerIdsRecord(broker_id=0, broker_epoch=10, next_producer_id=1000),
        mt.ClientQuotaRecord(entity=entity, key="producer_byte_rate", value=1024.0, remove=False),
        mt.ClientQuotaRecord(entity=entity, key="consumer_byte_rate", value=2048.0, remove=False),
        mt.AccessControlEntryRecord(id=uuid(900), resource_type=2, resource_name="orders", pattern_type=3,
                                    principal="User:alice", host="*", operation=3, permission_type=3),
        mt.AccessControlEntryRecord(id=uuid(901), resource_type=2, resource_name="audit", pattern_type=3,
                                    principal="User:bob", host="*", operation=2, permission_type=3),
        mt.UserScramCredentialRecord(name="alice", mechanism=1, salt=b"s1", stored_key=b"k1", server_key=b"v1",
                                     iterations=4096),
        mt.UserScramCredentialRecord(name="bob", mechanism=2, salt=b"s2", stored_key=b"k2", server_key=b"v2",
                                     iterations=8192),
        mt.DelegationTokenRecord(owner="User:alice", requester="User:alice", renewers=("User:bob",),
                                 issue_timestamp=1, max_timestamp=100, expiration_timestamp=50, token_id="tok1"),
        mt.DelegationTokenRecord(owner="User:bob", requester="User:bob", renewers=(), issue_timestamp=2,
                                 max_timestamp=200, expiration_timestamp=60, token_id="tok2"),
        N(),
        mt.RemoveTopicRecord(topic_id=uuid(800)),
        T("orders", uuid(802)),
        P("orders", 0, (2, 1), topic_id=uuid(802)),
        mt.ConfigRecord(resource_type=2, resource_name="orders", name="cleanup.policy", value="compact"),
        mt.ConfigRecord(resource_type=4, resource_name="", name="min.insync.replicas", value=None),
        mt.ConfigRecord(resource_type=4, resource_name="1", name="log.retention.ms", value="5"),
        mt.ClientQuotaRecord(entity=entity, key="producer_byte_rate", value=0.0, remove=True),
        mt.RemoveAccessControlEntryRecord(id=uuid(901)),
        mt.RemoveUserScramCredentialRecord(name="bob", mechanism=2),
        mt.RemoveDelegationTokenRecord(token_id="tok2"),
        mt.FeatureLevelRecord(name="group.version", feature_level=0),
        mt.ProducerIdsRecord(broker_id=1, broker_epoch=11, next_producer_id=2000),
        mt.RegisterBrokerRecord(broker_id=0, broker_epoch=20, incarnation_id=uuid(503), fenced=False, rack=None),
        mt.RegisterControllerRecord(controller_id=3001, incarnation_id=uuid(701)),
        VOTERS(3001, 3002),
        change("orders", 0, topic_id=uuid(802), leader=-1, isr=(2,), leader_recovery_state=1),
        N(),
    ]
