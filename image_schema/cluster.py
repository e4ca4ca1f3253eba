"""The brokers and controllers tables: registrations, as the cluster sub-image holds them."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from kraftlake.image_schema.spec import (
    ENDPOINT,
    FEATURE_RANGE,
    STRINGS,
    Key,
    Row,
    SubImageTables,
    TableRows,
    dict_table,
    single,
)
from kraftlake.records import metadata_types as mt
from kraftlake.replay.cluster import BrokerRegistration, ClusterImage, ControllerRegistration, Endpoint, FeatureRange
from kraftlake.replay.delta import MetadataDelta
from kraftlake.replay.fields import plain
from kraftlake.replay.image import MetadataImage


def broker_row(broker: BrokerRegistration) -> Row:
    return plain(broker)


def controller_row(controller: ControllerRegistration) -> Row:
    return plain(controller)


def _broker_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for broker_id, broker in image.cluster.brokers.items():
        yield (broker_id,), broker_row(broker)


def _controller_rows(image: MetadataImage) -> Iterator[tuple[Key, Row]]:
    for controller_id, controller in image.cluster.controllers.items():
        yield (controller_id,), controller_row(controller)


def _broker_row(delta: MetadataDelta, key: Key) -> Row | None:
    broker = delta.cluster_delta().broker(key[0])
    return None if broker is None else broker_row(broker)


def _controller_row(delta: MetadataDelta, key: Key) -> Row | None:
    controller = delta.cluster_delta().controller(key[0])
    return None if controller is None else controller_row(controller)


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
        cordoned_directories=None if r["cordoned_directories"] is None else tuple(r["cordoned_directories"]),
    )


def _controller(r: Row) -> ControllerRegistration:
    return ControllerRegistration(
        controller_id=r["controller_id"],
        incarnation_id=r["incarnation_id"],
        zk_migration_ready=r["zk_migration_ready"],
        listeners=_endpoints(r["listeners"]),
        supported_features=_feature_ranges(r["supported_features"]),
    )


def _rebuild(tables: TableRows) -> ClusterImage:
    return ClusterImage(
        MappingProxyType({r["broker_id"]: _broker(r) for r in tables.get("brokers", ())}),
        MappingProxyType({r["controller_id"]: _controller(r) for r in tables.get("controllers", ())}),
    )


CLUSTER = SubImageTables(
    "cluster",
    (
        dict_table(
            "brokers",
            "cluster",
            ("broker_id",),
            pa.schema([
                ("broker_id", pa.int32()),
                ("epoch", pa.int64()),
                ("incarnation_id", pa.string()),
                ("listeners", pa.list_(ENDPOINT)),
                ("supported_features", pa.list_(FEATURE_RANGE)),
                ("rack", pa.string()),
                ("fenced", pa.bool_()),
                ("in_controlled_shutdown", pa.bool_()),
                ("is_migrating_zk_broker", pa.bool_()),
                ("directories", STRINGS),
                ("cordoned_directories", STRINGS),  # null: not reported yet, as in Kafka
            ]),
            _broker_rows,
            _broker_row,
        ),
        dict_table(
            "controllers",
            "cluster",
            ("controller_id",),
            pa.schema([
                ("controller_id", pa.int32()),
                ("incarnation_id", pa.string()),
                ("zk_migration_ready", pa.bool_()),
                ("listeners", pa.list_(ENDPOINT)),
                ("supported_features", pa.list_(FEATURE_RANGE)),
            ]),
            _controller_rows,
            _controller_row,
        ),
    ),
    {
        mt.RegisterBrokerRecord: single("brokers", lambda r: (r.broker_id,)),
        mt.UnregisterBrokerRecord: single("brokers", lambda r: (r.broker_id,)),
        mt.FenceBrokerRecord: single("brokers", lambda r: (r.id,)),
        mt.UnfenceBrokerRecord: single("brokers", lambda r: (r.id,)),
        mt.BrokerRegistrationChangeRecord: single("brokers", lambda r: (r.broker_id,)),
        mt.RegisterControllerRecord: single("controllers", lambda r: (r.controller_id,)),
        mt.UnregisterControllerRecord: single("controllers", lambda r: (r.controller_id,)),
    },
    _rebuild,
)
