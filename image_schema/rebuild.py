"""Table rows back into a MetadataImage: how a reader of the warehouse gets the canonical image form.

What the tables do not hold cannot come back: SCRAM salts and keys are empty, and redacted config values
stay "[redacted]". The canonical JSON redacts exactly those, so an image read back from Delta prints the
same canonical JSON as the replay it was written from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from image_schema.tables import Row, config_resource, mechanism_id, parse_quota_entity
from replay.acls import AclsImage, StandardAcl
from replay.client_quotas import ClientQuotasImage
from replay.cluster import BrokerRegistration, ClusterImage, ControllerRegistration, Endpoint, FeatureRange
from replay.configs import ConfigurationsImage
from replay.delegation_tokens import DelegationToken, DelegationTokensImage
from replay.features import METADATA_VERSION, FeaturesImage
from replay.image import MetadataImage, Provenance
from replay.producer_ids import ProducerIdsImage
from replay.scram import ScramCredential, ScramImage, ScramKey
from replay.topics import PartitionRegistration, TopicImage, TopicsImage


def image_from_rows(tables: Mapping[str, Iterable[Row]], provenance: Provenance) -> MetadataImage:
    return MetadataImage(
        provenance=provenance,
        features=_features(tables.get("features", ())),
        cluster=ClusterImage(
            MappingProxyType({r["broker_id"]: _broker(r) for r in tables.get("brokers", ())}),
            MappingProxyType({r["controller_id"]: _controller(r) for r in tables.get("controllers", ())}),
        ),
        topics=_topics(tables.get("topics", ()), tables.get("partitions", ())),
        configs=ConfigurationsImage(_grouped(tables.get("configs", ()), _config_key, "name", "value")),
        client_quotas=ClientQuotasImage(
            _grouped(tables.get("client_quotas", ()), lambda r: parse_quota_entity(r["entity"]), "key", "value")
        ),
        producer_ids=ProducerIdsImage(
            next((r["next_producer_id"] for r in tables.get("producer_ids", ())), -1)
        ),
        acls=AclsImage(MappingProxyType({r["acl_id"]: _acl(r) for r in tables.get("acls", ())})),
        scram=ScramImage(
            MappingProxyType({_scram_key(r): _credential(r) for r in tables.get("scram_credentials", ())})
        ),
        delegation_tokens=DelegationTokensImage(
            MappingProxyType({r["token_id"]: _token(r) for r in tables.get("delegation_tokens", ())})
        ),
    )


def _features(rows: Iterable[Row]) -> FeaturesImage:
    levels = {r["name"]: r["level"] for r in rows}
    metadata_version = levels.pop(METADATA_VERSION, None)
    return FeaturesImage(metadata_version, MappingProxyType(dict(sorted(levels.items()))))


def _endpoints(rows: Any) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(**e) for e in rows or ())


def _feature_ranges(rows: Any) -> tuple[FeatureRange, ...]:
    return tuple(FeatureRange(**f) for f in rows or ())


def _broker(r: Row) -> BrokerRegistration:
    return BrokerRegistration(
        broker_id=r["broker_id"],
        epoch=r["epoch"],
        incarnation_id=r["incarnation_id"],
        listeners=_endpoints(r["listeners"]),
        supported_features=_feature_ranges(r["supported_features"]),
        rack=r["rack"],
        fenced=r["fenced"],
        in_controlled_shutdown=r["in_controlled_shutdown"],
        is_migrating_zk_broker=r["is_migrating_zk_broker"],
        directories=tuple(r["directories"] or ()),
    )


def _controller(r: Row) -> ControllerRegistration:
    return ControllerRegistration(
        controller_id=r["controller_id"],
        incarnation_id=r["incarnation_id"],
        zk_migration_ready=r["zk_migration_ready"],
        listeners=_endpoints(r["listeners"]),
        supported_features=_feature_ranges(r["supported_features"]),
    )


def _partition(r: Row) -> PartitionRegistration:
    def ints(name: str) -> tuple[int, ...]:
        return tuple(r[name] or ())

    return PartitionRegistration(
        replicas=ints("replicas"),
        directories=tuple(r["directories"] or ()),
        isr=ints("isr"),
        removing_replicas=ints("removing_replicas"),
        adding_replicas=ints("adding_replicas"),
        elr=ints("elr"),
        last_known_elr=ints("last_known_elr"),
        leader=r["leader"],
        leader_recovery_state=r["leader_recovery_state"],
        leader_epoch=r["leader_epoch"],
        partition_epoch=r["partition_epoch"],
    )


def _topics(topic_rows: Iterable[Row], partition_rows: Iterable[Row]) -> TopicsImage:
    partitions: dict[str, dict[int, PartitionRegistration]] = {}
    for r in partition_rows:
        partitions.setdefault(r["topic_id"], {})[r["partition_id"]] = _partition(r)
    by_id = {
        r["topic_id"]: TopicImage(r["name"], r["topic_id"], MappingProxyType(partitions.get(r["topic_id"], {})))
        for r in topic_rows
    }
    return TopicsImage(MappingProxyType(by_id), MappingProxyType({t.name: t for t in by_id.values()}))


def _config_key(r: Row) -> Any:
    return config_resource(r["resource_type"], r["resource_name"])


def _grouped(rows: Iterable[Row], group: Any, name_column: str, value_column: str) -> MappingProxyType:
    groups: dict[Any, dict[str, Any]] = {}
    for r in rows:
        groups.setdefault(group(r), {})[r[name_column]] = r[value_column]
    return MappingProxyType({key: MappingProxyType(values) for key, values in groups.items()})


def _acl(r: Row) -> StandardAcl:
    return StandardAcl(*(r[field] for field in StandardAcl._fields))


def _scram_key(r: Row) -> ScramKey:
    return ScramKey(r["user"], mechanism_id(r["mechanism"]))


def _credential(r: Row) -> ScramCredential:
    return ScramCredential(r["iterations"], b"", b"", b"")


def _token(r: Row) -> DelegationToken:
    return DelegationToken(
        r["token_id"],
        r["owner"],
        r["requester"],
        tuple(r["renewers"] or ()),
        r["issue_timestamp"],
        r["max_timestamp"],
        r["expiration_timestamp"],
    )
