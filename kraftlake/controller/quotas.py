"""Client quotas and producer-id blocks."""

from __future__ import annotations

from collections.abc import Mapping

from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.errors import BrokerNotRegisteredError, InvalidRequestError, StaleBrokerEpochError
from kraftlake.records import metadata_types as mt

ENTITY_TYPES = ("user", "client-id", "ip")
QUOTA_KEYS = {
    "producer_byte_rate": ("user", "client-id"),
    "consumer_byte_rate": ("user", "client-id"),
    "request_percentage": ("user", "client-id"),
    "controller_mutation_rate": ("user", "client-id"),
    "connection_creation_rate": ("ip",),
}


def alter_client_quotas(
    ctx: WriteContext, entity: Mapping[str, str | None], changes: Mapping[str, float | None]
) -> ControllerResult[dict[str, float]]:
    """Set (a number) or remove (None) quotas of one entity; None as an entity name is the default entity.

    Returns the entity's quotas as they will be once committed.
    """
    if not entity:
        raise InvalidRequestError("the quota entity is empty")
    for kind in entity:
        if kind not in ENTITY_TYPES:
            raise InvalidRequestError(f"unknown quota entity type {kind!r}: use {', '.join(ENTITY_TYPES)}")
    if "ip" in entity and len(entity) > 1:
        raise InvalidRequestError("an ip quota entity cannot be combined with user or client-id")
    key = tuple(sorted(entity.items()))
    current = dict(ctx.state.delta.client_quotas_delta().quotas(key))
    entity_data = tuple(mt.EntityData(entity_type=kind, entity_name=name) for kind, name in key)
    records = []
    for name, value in sorted(changes.items()):
        allowed = QUOTA_KEYS.get(name)
        if allowed is None:
            raise InvalidRequestError(f"unknown quota {name!r}: use {', '.join(QUOTA_KEYS)}")
        if not set(entity) <= set(allowed):
            raise InvalidRequestError(f"quota {name!r} does not apply to a {'/'.join(sorted(entity))} entity")
        if value is None:
            if name in current:
                records.append(mt.ClientQuotaRecord(entity=entity_data, key=name, value=0.0, remove=True))
                del current[name]
            continue
        if value <= 0:
            raise InvalidRequestError(f"quota {name!r} must be positive, not {value}")
        records.append(mt.ClientQuotaRecord(entity=entity_data, key=name, value=float(value), remove=False))
        current[name] = float(value)
    return ControllerResult(records, current)


def allocate_producer_ids(ctx: WriteContext, broker_id: int, broker_epoch: int) -> ControllerResult[tuple[int, int]]:
    """(first id, block size) of a new block for a registered broker at its current epoch."""
    broker = ctx.state.broker(broker_id)
    if broker is None:
        raise BrokerNotRegisteredError(f"broker {broker_id} is not registered")
    if broker.epoch != broker_epoch:
        raise StaleBrokerEpochError(
            f"broker {broker_id} sent epoch {broker_epoch}, but its current epoch is {broker.epoch}"
        )
    start = max(ctx.state.delta.producer_ids_delta().next_producer_id, 0)
    size = ctx.config.producer_id_block_size
    record = mt.ProducerIdsRecord(broker_id=broker_id, broker_epoch=broker_epoch, next_producer_id=start + size)
    return ControllerResult([record], (start, size))
