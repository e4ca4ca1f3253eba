"""Broker and controller registrations, with Kafka's epoch checks on fence/unfence/change/unregister."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, NamedTuple

from kraftlake.replay.errors import ReplayError
from kraftlake.replay.mapping import empty_map, merged


class Endpoint(NamedTuple):
    name: str
    host: str
    port: int
    security_protocol: int


class FeatureRange(NamedTuple):
    name: str
    min_supported_version: int
    max_supported_version: int


@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    epoch: int
    incarnation_id: str
    listeners: tuple[Endpoint, ...]
    supported_features: tuple[FeatureRange, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool
    directories: tuple[str, ...]
    # Kafka 4.4 (KIP-1066): directories taking no new replicas, in the order the broker sent them; None until
    # the broker first reports them (a registration from before metadata.version 4.3-IV0 never does).
    cordoned_directories: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ControllerRegistration:
    controller_id: int
    incarnation_id: str
    zk_migration_ready: bool
    listeners: tuple[Endpoint, ...]
    supported_features: tuple[FeatureRange, ...]


@dataclass(frozen=True)
class ClusterImage:
    brokers: MappingProxyType[int, BrokerRegistration] = field(default_factory=empty_map)
    controllers: MappingProxyType[int, ControllerRegistration] = field(default_factory=empty_map)

    def is_empty(self) -> bool:
        return not self.brokers and not self.controllers


def _endpoints(raw: Any) -> tuple[Endpoint, ...]:
    return tuple(sorted(Endpoint(e.name, e.host, e.port, e.security_protocol) for e in raw))


def _features(raw: Any) -> tuple[FeatureRange, ...]:
    return tuple(sorted(FeatureRange(f.name, f.min_supported_version, f.max_supported_version) for f in raw))


def _optional(ids: Any) -> tuple[str, ...] | None:
    return None if ids is None else tuple(ids)


_FENCING_CHANGE = {-1: False, 0: None, 1: True}
_SHUTDOWN_CHANGE = {0: None, 1: True}


class ClusterDelta:
    def __init__(self, image: ClusterImage) -> None:
        self.image = image
        self.broker_changes: dict[int, BrokerRegistration | None] = {}
        self.controller_changes: dict[int, ControllerRegistration | None] = {}

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self.broker_changes:
            return self.broker_changes[broker_id]
        return self.image.brokers.get(broker_id)

    def controller(self, controller_id: int) -> ControllerRegistration | None:
        if controller_id in self.controller_changes:
            return self.controller_changes[controller_id]
        return self.image.controllers.get(controller_id)

    def _broker_or_fail(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        broker = self.broker(broker_id)
        if broker is None:
            raise ReplayError(f"Tried to {action} broker {broker_id}, but that broker was not registered.")
        if broker.epoch != epoch:
            raise ReplayError(
                f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not match the "
                f"current broker epoch, {broker.epoch}."
            )
        return broker

    def replay_register_broker(self, record: Any) -> None:
        self.broker_changes[record.broker_id] = BrokerRegistration(
            broker_id=record.broker_id,
            epoch=record.broker_epoch,
            incarnation_id=record.incarnation_id,
            listeners=_endpoints(record.end_points),
            supported_features=_features(record.features),
            rack=record.rack,
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
            is_migrating_zk_broker=record.is_migrating_zk_broker,
            directories=tuple(sorted(record.log_dirs)),
            cordoned_directories=_optional(record.cordoned_log_dirs),
        )

    def replay_unregister_broker(self, record: Any) -> None:
        self._broker_or_fail(record.broker_id, record.broker_epoch, "unregister")
        self.broker_changes[record.broker_id] = None

    def replay_fence_broker(self, record: Any) -> None:
        broker = self._broker_or_fail(record.id, record.epoch, "fence")
        self.broker_changes[record.id] = replace(broker, fenced=True)

    def replay_unfence_broker(self, record: Any) -> None:
        broker = self._broker_or_fail(record.id, record.epoch, "unfence")
        self.broker_changes[record.id] = replace(broker, fenced=False)

    def replay_broker_registration_change(self, record: Any) -> None:
        broker = self._broker_or_fail(record.broker_id, record.broker_epoch, "change")
        if record.fenced not in _FENCING_CHANGE:
            raise ReplayError(f"Invalid fencing change value {record.fenced} for broker {record.broker_id}")
        if record.in_controlled_shutdown not in _SHUTDOWN_CHANGE:
            raise ReplayError(
                f"Invalid inControlledShutdown change value {record.in_controlled_shutdown} "
                f"for broker {record.broker_id}"
            )
        fenced = _FENCING_CHANGE[record.fenced]
        shutdown = _SHUTDOWN_CHANGE[record.in_controlled_shutdown]
        self.broker_changes[record.broker_id] = replace(
            broker,
            fenced=broker.fenced if fenced is None else fenced,
            in_controlled_shutdown=broker.in_controlled_shutdown if shutdown is None else shutdown,
            directories=tuple(sorted(record.log_dirs)) if record.log_dirs else broker.directories,
            # null: no change; an empty list is a change (no directory cordoned any more), as in Kafka
            cordoned_directories=broker.cordoned_directories if record.cordoned_log_dirs is None
            else tuple(record.cordoned_log_dirs),
        )

    def replay_register_controller(self, record: Any) -> None:
        self.controller_changes[record.controller_id] = ControllerRegistration(
            controller_id=record.controller_id,
            incarnation_id=record.incarnation_id,
            zk_migration_ready=record.zk_migration_ready,
            listeners=_endpoints(record.end_points),
            supported_features=_features(record.features),
        )

    def replay_unregister_controller(self, record: Any) -> None:
        """Kafka 4.4 removes a controller's registration (no check that it was there, as Kafka's ClusterDelta)."""
        self.controller_changes[record.controller_id] = None

    def finish_snapshot(self) -> None:
        for broker_id in self.image.brokers:
            self.broker_changes.setdefault(broker_id, None)
        for controller_id in self.image.controllers:
            self.controller_changes.setdefault(controller_id, None)

    def apply(self) -> ClusterImage:
        return ClusterImage(
            merged(self.image.brokers, self.broker_changes),
            merged(self.image.controllers, self.controller_changes),
        )

