"""Broker registration, heartbeats, fencing and controlled shutdown (Kafka's ClusterControlManager and
the broker state machine of BrokerHeartbeatManager.calculateNextBrokerState)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.directories import offline_directory_records
from kraftlake.controller.errors import (
    BrokerNotRegisteredError,
    DuplicateBrokerRegistrationError,
    InvalidRequestError,
    UnsupportedVersionError,
)
from kraftlake.controller.replication import partition_updates_adding, partition_updates_removing, registered_broker
from kraftlake.controller.versions import METADATA_VERSION
from kraftlake.records import metadata_types as mt
from kraftlake.records.wire import uuid_from_text
from kraftlake.replay.cluster import BrokerRegistration

FENCE = 1
UNFENCE = -1
ENTER_CONTROLLED_SHUTDOWN = 1


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int
    security_protocol: int = 0  # PLAINTEXT


@dataclass(frozen=True)
class BrokerRegistrationRequest:
    broker_id: int
    incarnation_id: str
    listeners: Sequence[Listener]
    features: Mapping[str, tuple[int, int]]  # supported (min, max) level per feature
    rack: str | None = None
    log_dirs: Sequence[str] = ()
    cluster_id: str | None = None
    # KIP-966: the epoch this broker held when it last shut down cleanly; -1 when it cannot say (a crash)
    previous_broker_epoch: int = -1


class BrokerState(enum.Enum):
    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    SHUTDOWN_NOW = "shutdown_now"


@dataclass(frozen=True)
class HeartbeatReply:
    state: BrokerState
    is_caught_up: bool
    committed_offset: int  # where the broker should catch up to (a simulated broker reports it next time)
    records_written: int = field(default=0)

    @property
    def is_fenced(self) -> bool:
        return self.state in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW)

    @property
    def should_shut_down(self) -> bool:
        return self.state is BrokerState.SHUTDOWN_NOW

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state.value, "is_caught_up": self.is_caught_up, "is_fenced": self.is_fenced,
            "should_shut_down": self.should_shut_down, "committed_offset": self.committed_offset,
        }


def _change(ctx: WriteContext, broker: BrokerRegistration, fenced: int = 0, shutdown: int = 0) -> Any:
    return mt.BrokerRegistrationChangeRecord(
        broker_id=broker.broker_id, broker_epoch=broker.epoch, fenced=fenced, in_controlled_shutdown=shutdown,
        log_dirs=(),
    )


def _check_features(ctx: WriteContext, request: BrokerRegistrationRequest) -> None:
    """The broker must support every finalized feature level, metadata.version included."""
    features = ctx.state.features
    finalized = {METADATA_VERSION: ctx.metadata_version}
    for name in set(features.image.finalized) | set(features.changes):
        level = features.level(name)
        if level:
            finalized[name] = level
    for name, level in sorted(finalized.items()):
        supported = request.features.get(name)
        if supported is None:
            raise UnsupportedVersionError(
                f"broker {request.broker_id} does not support {name} (finalized at level {level})"
            )
        low, high = supported
        if not low <= level <= high:
            raise UnsupportedVersionError(
                f"broker {request.broker_id} supports {name} levels {low}..{high}, but the cluster is at {level}"
            )


def register_broker(ctx: WriteContext, request: BrokerRegistrationRequest) -> ControllerResult[int]:
    """A (re)registration: the broker comes back fenced with a new epoch, the offset of its record."""
    if request.broker_id < 0:
        raise InvalidRequestError(f"invalid broker id {request.broker_id}")
    if ctx.config.cluster_id is not None and request.cluster_id not in (None, ctx.config.cluster_id):
        raise InvalidRequestError(
            f"broker {request.broker_id} belongs to cluster {request.cluster_id}, not {ctx.config.cluster_id}"
        )
    try:
        uuid_from_text(request.incarnation_id)
    except ValueError:
        raise InvalidRequestError(f"invalid incarnation id {request.incarnation_id!r}") from None
    if not request.listeners:
        raise InvalidRequestError(f"broker {request.broker_id} registered without any listener")
    if len({listener.name for listener in request.listeners}) != len(request.listeners):
        raise InvalidRequestError(f"broker {request.broker_id} names a listener twice")
    _check_features(ctx, request)
    existing = ctx.state.broker(request.broker_id)
    records: list[Any] = []
    if existing is not None and existing.incarnation_id != request.incarnation_id:
        if ctx.heartbeats.has_valid_session(request.broker_id, ctx.now_ms):
            raise DuplicateBrokerRegistrationError(
                f"another broker (incarnation {existing.incarnation_id}) is registered with id {request.broker_id} "
                f"and still heartbeating"
            )
        if existing.epoch != request.previous_broker_epoch:
            # the old incarnation did not shut down cleanly (Kafka's ClusterControlManager compares the stored
            # epoch with PreviousBrokerEpoch): out of ISRs and ELRs, its log may lack acknowledged writes
            records += partition_updates_removing(ctx, request.broker_id, unclean_shutdown=True)
    epoch = ctx.next_write_offset + len(records)
    records.append(mt.RegisterBrokerRecord(
        broker_id=request.broker_id,
        is_migrating_zk_broker=False,
        incarnation_id=request.incarnation_id,
        broker_epoch=epoch,
        end_points=tuple(
            mt.BrokerEndpoint(name=lst.name, host=lst.host, port=lst.port, security_protocol=lst.security_protocol)
            for lst in request.listeners
        ),
        features=tuple(
            mt.BrokerFeature(name=name, min_supported_version=low, max_supported_version=high)
            for name, (low, high) in sorted(request.features.items())
        ),
        rack=request.rack,
        fenced=True,
        in_controlled_shutdown=False,
        log_dirs=tuple(request.log_dirs),
    ))
    ctx.heartbeats.touch(request.broker_id, epoch, ctx.now_ms)
    return ControllerResult(records, epoch)


def unregister_broker(ctx: WriteContext, broker_id: int) -> ControllerResult[None]:
    broker = ctx.state.broker(broker_id)
    if broker is None:
        raise BrokerNotRegisteredError(f"broker {broker_id} is not registered")
    records = partition_updates_removing(ctx, broker_id)
    records.append(mt.UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=broker.epoch))
    ctx.heartbeats.remove(broker_id)
    return ControllerResult(records, None)


def broker_heartbeat(
    ctx: WriteContext,
    broker_id: int,
    broker_epoch: int,
    metadata_offset: int,
    want_fence: bool = False,
    want_shutdown: bool = False,
    offline_log_dirs: Sequence[str] = (),
) -> ControllerResult[HeartbeatReply]:
    broker = registered_broker(ctx.state, broker_id, broker_epoch)
    session = ctx.heartbeats.touch(broker_id, broker_epoch, ctx.now_ms, metadata_offset)
    caught_up = session.metadata_offset >= broker.epoch
    records: list[Any] = []
    if broker.fenced:
        if want_shutdown:
            state = BrokerState.SHUTDOWN_NOW
        elif not want_fence and caught_up and not broker.in_controlled_shutdown:
            records = [_change(ctx, broker, fenced=UNFENCE), *partition_updates_adding(ctx, broker_id)]
            state = BrokerState.UNFENCED
        else:
            state = BrokerState.FENCED
    elif broker.in_controlled_shutdown:
        state = _shutdown_progress(ctx, broker, session.controlled_shutdown_offset, records)
    elif want_fence:
        records = fence_records(ctx, broker)
        state = BrokerState.FENCED
    elif want_shutdown:
        if _leads_partitions(ctx, broker_id):
            records = [_change(ctx, broker, shutdown=ENTER_CONTROLLED_SHUTDOWN),
                       *partition_updates_removing(ctx, broker_id)]
            session.controlled_shutdown_offset = ctx.next_write_offset + len(records) - 1
            state = BrokerState.CONTROLLED_SHUTDOWN
        else:
            records = fence_records(ctx, broker)
            state = BrokerState.SHUTDOWN_NOW
    else:
        records = offline_directory_records(ctx, broker, offline_log_dirs)
        state = BrokerState.UNFENCED
    return ControllerResult(records, HeartbeatReply(state, caught_up, ctx.committed_offset, len(records)))


def _shutdown_progress(ctx: WriteContext, broker: BrokerRegistration, shutdown_offset: int | None,
                       records: list[Any]) -> BrokerState:
    """A draining broker may stop once it leads nothing and every active broker has seen the moves."""
    if shutdown_offset is None:
        # A new controller lost the soft state: the moves are in the log already, so their offset is no
        # later than the last committed one.
        shutdown_offset = ctx.committed_offset
        ctx.heartbeats.sessions[broker.broker_id].controlled_shutdown_offset = shutdown_offset
    active = {b.broker_id for b in ctx.state.brokers()
              if not b.fenced and not b.in_controlled_shutdown and b.broker_id != broker.broker_id}
    lowest = ctx.heartbeats.lowest_active_offset(active)
    everyone_saw_it = not active or (lowest is not None and lowest >= shutdown_offset)
    if everyone_saw_it and not _leads_partitions(ctx, broker.broker_id):
        records.extend(fence_records(ctx, broker))
        return BrokerState.SHUTDOWN_NOW
    return BrokerState.CONTROLLED_SHUTDOWN


def _leads_partitions(ctx: WriteContext, broker_id: int) -> bool:
    state = ctx.state
    for topic_id, partition_id in state.partitions_of_broker.get(broker_id, ()):
        partition = state.partition(topic_id, partition_id)
        if partition is not None and partition.leader == broker_id:
            return True
    return False


def fence_records(ctx: WriteContext, broker: BrokerRegistration) -> list[Any]:
    """The fence itself plus a PartitionChangeRecord for every partition the broker led or was in the ISR of."""
    return [_change(ctx, broker, fenced=FENCE), *partition_updates_removing(ctx, broker.broker_id)]


def fence_stale_broker(ctx: WriteContext) -> ControllerResult[bool]:
    """The periodic maybeFenceStaleBroker task: fences one broker whose session expired; True if more wait."""
    for session in ctx.heartbeats.expired(ctx.now_ms):
        ctx.heartbeats.remove(session.broker_id)
        broker = ctx.state.broker(session.broker_id)
        if broker is None or broker.epoch != session.epoch or broker.fenced:
            continue
        more = bool(ctx.heartbeats.expired(ctx.now_ms))
        return ControllerResult(fence_records(ctx, broker), more)
    return ControllerResult([], False)
