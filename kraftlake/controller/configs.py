"""IncrementalAlterConfigs on topics, brokers and the cluster default (a broker resource named "")."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kraftlake.controller.config_defs import validate_configs
from kraftlake.controller.context import ControllerResult, WriteContext
from kraftlake.controller.errors import BrokerNotRegisteredError, InvalidRequestError, UnknownTopicError
from kraftlake.controller.replication import MIN_INSYNC_REPLICAS, elr_enabled
from kraftlake.records import metadata_types as mt
from kraftlake.replay.configs import BROKER, TOPIC


class ConfigOp(enum.Enum):
    SET = "set"
    DELETE = "delete"
    APPEND = "append"  # list configs: add the items not present
    SUBTRACT = "subtract"  # list configs: remove the items


@dataclass(frozen=True)
class ConfigChange:
    op: ConfigOp
    name: str
    value: str | None = None


def resource_label(resource_type: int, resource_name: str) -> str:
    if resource_type == TOPIC:
        return f"topic {resource_name!r}"
    return "the cluster default" if resource_name == "" else f"broker {resource_name}"


def incremental_alter_configs(
    ctx: WriteContext, resource_type: int, resource_name: str, changes: Sequence[ConfigChange]
) -> ControllerResult[dict[str, str]]:
    """Returns the resource's configs as they will be once committed."""
    state = ctx.state
    label = resource_label(resource_type, resource_name)
    if resource_type == TOPIC:
        if state.topic_id(resource_name) is None:
            raise UnknownTopicError(f"topic {resource_name!r} does not exist")
    elif resource_type == BROKER:
        if resource_name != "":
            if not resource_name.isdigit():
                raise InvalidRequestError(f"broker resource name {resource_name!r} is not a broker id")
            if state.broker(int(resource_name)) is None:
                raise BrokerNotRegisteredError(f"broker {resource_name} is not registered")
    else:
        raise InvalidRequestError(f"configs of resource type {resource_type} cannot be altered here")
    if len({c.name for c in changes}) != len(changes):
        raise InvalidRequestError(f"a config of {label} is altered twice in one request")
    current = state.configs(resource_type, resource_name)
    updated = dict(current)
    for change in changes:
        if change.op is ConfigOp.DELETE:
            updated.pop(change.name, None)
            continue
        if change.value is None:
            raise InvalidRequestError(f"{change.op.value} of {change.name!r} needs a value")
        if change.op is ConfigOp.SET:
            updated[change.name] = change.value
            continue
        items = [item for item in updated.get(change.name, "").split(",") if item]
        given = [item.strip() for item in change.value.split(",") if item.strip()]
        if change.op is ConfigOp.APPEND:
            items += [item for item in given if item not in items]
        else:
            items = [item for item in items if item not in given]
        updated[change.name] = ",".join(items)
    validate_configs(resource_type, label, {k: v for k, v in updated.items() if k not in current or current[k] != v})
    records: list[Any] = [
        mt.ConfigRecord(resource_type=resource_type, resource_name=resource_name, name=name, value=updated.get(name))
        for name in sorted(set(current) | set(updated))
        if current.get(name) != updated.get(name)
    ]
    if elr_enabled(state) and any(r.name == MIN_INSYNC_REPLICAS for r in records):
        # The ELRs were computed against the old min ISR (Kafka's createClearElrRecordsAsNeeded).
        records.append(mt.ClearElrRecord(topic_name=resource_name if resource_type == TOPIC else ""))
    return ControllerResult(records, updated)
