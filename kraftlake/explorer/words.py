"""Values in the words operators use (kafka-ui, AKHQ, kafka-acls): Kafka's names for its codes, durations and
sizes in units (`7 days`, `10 MiB`), times with date, zone and how long ago, counts with their noun in the
right number. The pages show these with the raw value on hover; the API adds them beside the raw value
(`<column>_name` for a name, `<column>_human` for a unit; a config its `source` and Kafka's `default`), so a row
stays the CLI's line plus fields."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kraftlake.records.config_defaults import config_source, kafka_default
from kraftlake.records.kafka_names import (
    ACL_OPERATIONS,
    DIRECTORY_IDS,
    LEADER_RECOVERY_STATES,
    PATTERN_TYPES,
    PERMISSION_TYPES,
    RESOURCE_TYPES,
    SECURITY_PROTOCOLS,
)

# (table, column) -> the Kafka enum naming its codes
ENUM_COLUMNS: Mapping[tuple[str, str], Mapping[int, str]] = {
    ("acls", "resource_type"): RESOURCE_TYPES, ("acls", "pattern_type"): PATTERN_TYPES,
    ("acls", "operation"): ACL_OPERATIONS, ("acls", "permission_type"): PERMISSION_TYPES,
    ("partitions", "leader_recovery_state"): LEADER_RECOVERY_STATES,
}
DIRECTORY_COLUMNS = frozenset({("brokers", "directories"), ("brokers", "cordoned_directories"),
                               ("partitions", "directories")})
TIME_COLUMNS = frozenset({("delegation_tokens", "issue_timestamp"), ("delegation_tokens", "max_timestamp"),
                          ("delegation_tokens", "expiration_timestamp")})
DAY_MS = 86_400_000
DURATION_UNITS = ((DAY_MS, "day"), (3_600_000, "h"), (60_000, "min"), (1000, "s"), (1, "ms"))
SIZE_UNITS = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))
# a config's unit by the suffix of its name (Kafka's own naming convention: retention.ms, segment.bytes, …)
CONFIG_UNITS_MS = {".ms": 1, ".seconds": 1000, ".minutes": 60_000, ".hours": 3_600_000}
RATE_QUOTAS = frozenset({"producer_byte_rate", "consumer_byte_rate"})
CONFIG_ORIGIN = ("source", "default")  # the fields a configs row gains (`config_origin`): not the table's own
WHOLE = re.compile(r"-?[0-9]+")
DIGITS = re.compile(r"([0-9]+)")


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 row`, `2 rows` (and `0 rows`)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def _amount(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0") if value < 100 else f"{value:.0f}"


def duration(ms: int) -> str:
    """Milliseconds in the largest unit that reads as at least 1: `7 days`, `4 h`, `1.5 min`, `250 ms`."""
    for unit, name in DURATION_UNITS:
        if abs(ms) >= unit or unit == 1:
            amount = _amount(abs(ms) / unit)
            sign = "-" if ms < 0 else ""
            return f"{sign}{amount} {name}{'s' if name == 'day' and amount != '1' else ''}"
    raise AssertionError("unreachable: the last unit is 1 ms")


def size(count: int) -> str:
    """Bytes in binary units, as Kafka's docs write them: `10 MiB`, `1 GiB`, `512 B`."""
    for unit, name in SIZE_UNITS:
        if abs(count) >= unit:
            return f"{'-' if count < 0 else ''}{_amount(abs(count) / unit)} {name}"
    return f"{count} B"


def config_value(name: str, value: str | None) -> str | None:
    """A config's value in units when its name says which (`retention.ms` 604800000: `7 days`); None: the value
    is best read as written (not a whole number, a -1 meaning "no limit", a unit the name does not give)."""
    if value is None or not WHOLE.fullmatch(value) or value.startswith("-"):
        return None
    number = int(value)
    for suffix, factor in CONFIG_UNITS_MS.items():
        if name.endswith(suffix):
            return duration(number * factor)
    if name.endswith(".bytes") or name.endswith(".bytes.per.second"):
        return size(number) + ("/s" if name.endswith(".per.second") else "")
    return None


def when(time_ms: int, now_ms: int | None = None) -> str:
    """`2026-11-27 04:19:02 UTC (3 h ago)`: an append time as operators read it ("" when unknown, -1)."""
    if time_ms < 0:
        return ""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    stamp = datetime.fromtimestamp(time_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    apart = now - time_ms
    if abs(apart) < 1000:
        return f"{stamp} (now)"
    return f"{stamp} ({duration(apart)} ago)" if apart > 0 else f"{stamp} (in {duration(-apart)})"


def when_iso(text: str | None) -> str:
    """`when` of an ISO-8601 time as the CLI's JSON writes it ("" stays "")."""
    if not text:
        return ""
    return when(int(datetime.fromisoformat(text).timestamp() * 1000))


def directory(uuid: str) -> str:
    """A directory id, or Kafka's name for a reserved one (UNASSIGNED, LOST, MIGRATING)."""
    return DIRECTORY_IDS.get(uuid, uuid)


def listener(endpoint: Mapping[str, Any]) -> str:
    """`NAME://host:port`, as Kafka's `listeners` config writes it, with the security protocol when the name
    does not say it."""
    text = f"{endpoint.get('name')}://{endpoint.get('host')}:{endpoint.get('port')}"
    protocol = SECURITY_PROTOCOLS.get(endpoint.get("security_protocol", -1))
    return text if protocol is None or protocol == endpoint.get("name") else f"{text} ({protocol})"


def word(table: str, column: str, value: Any, row: Mapping[str, Any] | None = None) -> str | None:
    """The operator's words for one value of `table`.`column` (`row`: the rest of the row, for a config's or
    a quota's unit), or None when the raw value is already them."""
    if value is None:
        return None
    names = ENUM_COLUMNS.get((table, column))
    if names is not None:
        return names.get(value, str(value))
    if (table, column) in DIRECTORY_COLUMNS and isinstance(value, list):
        return ", ".join(directory(v) for v in value) if any(v in DIRECTORY_IDS for v in value) else None
    if column == "listeners" and isinstance(value, list):
        return ", ".join(listener(v) for v in value) or None
    if column == "supported_features" and isinstance(value, list):
        return ", ".join(f"{f['name']} {f['min_supported_version']}–{f['max_supported_version']}" for f in value)
    if (table, column) in TIME_COLUMNS and isinstance(value, int):
        return when(value)
    if row is not None and table == "configs" and column in ("value", "default"):
        return config_value(str(row.get("name", "")), value)
    if row is not None and table == "client_quotas" and column == "value" and row.get("key") in RATE_QUOTAS:
        return size(int(value)) + "/s"
    return None


def api_fields(table: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The fields the API adds to a row of `table`, beside the CLI's own: `<column>_name` (a Kafka name: enums;
    per list item, reserved directories and listeners' security protocols, null where there is none) and
    `<column>_human` (a duration, size or time in units)."""
    added: dict[str, Any] = {}
    for column, value in row.items():
        if column == "listeners" and isinstance(value, list):
            added["listeners_name"] = [SECURITY_PROTOCOLS.get(v.get("security_protocol")) for v in value]
        elif (table, column) in DIRECTORY_COLUMNS and isinstance(value, list):
            added[f"{column}_name"] = [DIRECTORY_IDS.get(v) for v in value]
        elif (table, column) in ENUM_COLUMNS and value is not None:
            added[f"{column}_name"] = word(table, column, value)
        elif column != "supported_features" and (text := word(table, column, value, row)) is not None:
            added[f"{column}_human"] = text
    if table == "configs":
        added.update(config_origin(row))
    return added


def config_origin(row: Mapping[str, Any]) -> dict[str, Any]:
    """A config row's `source` (topic, dynamic broker, cluster default) and Kafka's `default` (raw, and in
    units as `default_human`)."""
    resource_type, name = str(row["resource_type"]), str(row["name"])
    default = kafka_default(resource_type, name)
    added = dict(zip(CONFIG_ORIGIN, (config_source(resource_type, str(row["resource_name"])), default), strict=True))
    if (text := config_value(name, default)) is not None:
        added["default_human"] = text
    return added


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """A name's order as people count: `sim-7-2` before `sim-7-10` (its digit runs compared as numbers)."""
    return tuple((1, int(part)) if index % 2 else (0, part) for index, part in enumerate(DIGITS.split(text)))


def acl(row: Mapping[str, Any]) -> str:
    """An ACL as kafka-ui and AKHQ list it: `TOPIC orders LITERAL READ ALLOW`."""
    return " ".join(str(word("acls", column, row.get(column)) or row.get(column)) for column in
                    ("resource_type", "resource_name", "pattern_type", "operation", "permission_type"))
