"""The dynamic configs the controller accepts, with their types, and the validation Kafka's controller
applies before writing a ConfigRecord: an unknown name or an unparsable value is refused up front."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kraftlake.controller.errors import InvalidConfigError
from kraftlake.replay.configs import BROKER, TOPIC

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _integer(low: int, high: int) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            number = int(value)
        except ValueError:
            raise ValueError("must be an integer") from None
        if not low <= number <= high:
            raise ValueError(f"must be between {low} and {high}")
    return check


def _number(low: float, high: float) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            number = float(value)
        except ValueError:
            raise ValueError("must be a number") from None
        if not low <= number <= high:
            raise ValueError(f"must be between {low} and {high}")
    return check


def _boolean(value: str) -> None:
    if value.lower() not in ("true", "false"):
        raise ValueError("must be true or false")


def _one_of(*choices: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
    return check


def _list_of(*choices: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        for item in (part.strip() for part in value.split(",")):
            if item not in choices:
                raise ValueError(f"{item!r} is not one of {', '.join(choices)}")
    return check


def _text(_value: str) -> None:
    """Any string (paths, class names, throttled replica lists)."""


_LONG = _integer(-1, INT64_MAX)
_POSITIVE_LONG = _integer(0, INT64_MAX)
_POSITIVE_INT = _integer(0, INT32_MAX)

TOPIC_CONFIGS: dict[str, Callable[[str], None]] = {
    "cleanup.policy": _list_of("delete", "compact"),
    "compression.type": _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "compression.gzip.level": _integer(-1, 9),
    "compression.lz4.level": _integer(1, 17),
    "compression.zstd.level": _integer(-131072, 22),
    "delete.retention.ms": _POSITIVE_LONG,
    "file.delete.delay.ms": _POSITIVE_LONG,
    "flush.messages": _integer(1, INT64_MAX),
    "flush.ms": _POSITIVE_LONG,
    "follower.replication.throttled.replicas": _text,
    "index.interval.bytes": _POSITIVE_INT,
    "leader.replication.throttled.replicas": _text,
    "local.retention.bytes": _integer(-2, INT64_MAX),
    "local.retention.ms": _integer(-2, INT64_MAX),
    "max.compaction.lag.ms": _integer(1, INT64_MAX),
    "max.message.bytes": _POSITIVE_INT,
    "message.timestamp.after.max.ms": _POSITIVE_LONG,
    "message.timestamp.before.max.ms": _POSITIVE_LONG,
    "message.timestamp.type": _one_of("CreateTime", "LogAppendTime"),
    "min.cleanable.dirty.ratio": _number(0.0, 1.0),
    "min.compaction.lag.ms": _POSITIVE_LONG,
    "min.insync.replicas": _integer(1, INT32_MAX),
    "preallocate": _boolean,
    "remote.storage.enable": _boolean,
    "retention.bytes": _LONG,
    "retention.ms": _LONG,
    "segment.bytes": _integer(1024 * 1024, INT32_MAX),
    "segment.index.bytes": _integer(4, INT32_MAX),
    "segment.jitter.ms": _POSITIVE_LONG,
    "segment.ms": _integer(1, INT64_MAX),
    "unclean.leader.election.enable": _boolean,
}

# Broker configs that may be changed dynamically, per broker or cluster-wide (resource name "").
BROKER_CONFIGS: dict[str, Callable[[str], None]] = {
    "background.threads": _integer(1, INT32_MAX),
    "compression.type": TOPIC_CONFIGS["compression.type"],
    "leader.imbalance.per.broker.percentage": _integer(0, 100),
    "log.cleaner.threads": _integer(0, INT32_MAX),
    "log.retention.bytes": _LONG,
    "log.retention.ms": _LONG,
    "log.segment.bytes": TOPIC_CONFIGS["segment.bytes"],
    "max.connections": _POSITIVE_INT,
    "max.connections.per.ip": _POSITIVE_INT,
    "message.max.bytes": _POSITIVE_INT,
    "min.insync.replicas": TOPIC_CONFIGS["min.insync.replicas"],
    "num.io.threads": _integer(1, INT32_MAX),
    "num.network.threads": _integer(1, INT32_MAX),
    "num.replica.fetchers": _integer(1, INT32_MAX),
    "unclean.leader.election.enable": _boolean,
    "leader.replication.throttled.rate": _POSITIVE_LONG,
    "follower.replication.throttled.rate": _POSITIVE_LONG,
    "ssl.keystore.password": _text,
    "sasl.jaas.config": _text,
}

CONFIGS_BY_RESOURCE: dict[int, dict[str, Callable[[str], None]]] = {TOPIC: TOPIC_CONFIGS, BROKER: BROKER_CONFIGS}
RESOURCE_TYPES = {"topic": TOPIC, "broker": BROKER}


def validate_configs(resource_type: int, resource_label: str, configs: Mapping[str, str]) -> None:
    """Raises InvalidConfigError naming the first unknown config or bad value."""
    known = CONFIGS_BY_RESOURCE.get(resource_type)
    if known is None:
        raise InvalidConfigError(f"configs of resource type {resource_type} are not managed by this controller")
    for name, value in configs.items():
        check = known.get(name)
        if check is None:
            raise InvalidConfigError(f"unknown config {name!r} for {resource_label}")
        try:
            check(value)
        except ValueError as error:
            raise InvalidConfigError(f"invalid value for {name!r} of {resource_label}: {error}") from None
