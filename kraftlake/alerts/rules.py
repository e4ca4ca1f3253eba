"""The alerts file: which changes to send and where. TOML, one `[[rule]]` per selection:

    cluster = "east"                                   # the `cluster` label (default: default)
    explorer_url = "http://explorer.example:8080"      # links into the explorer at the change's offset
    alertmanager = ["http://127.0.0.1:9093"]           # Alertmanager's base URLs (`/api/v2/alerts` is added)
    webhook = ["http://hooks.example/kraftlake"]       # plain JSON POSTs

    [[rule]]
    name = "retention-changed"                         # the `alertname` label; unique in the file
    table = "configs"
    key = "topic:*:retention.ms"                       # a glob over the change's resource (see RESOURCES)
    when = "value_changed"
    labels = { severity = "warning" }                  # added to the alert's labels

Everything is checked when the file is read: a mistake is one line naming the file, the rule's line and name."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftlake.alerts.errors import AlertsFileError

CONTROLLER = "controller"  # not a table: the Raft leader's epoch, from the warehouse's batches

# per table, the conditions a rule may name
CONDITIONS: Mapping[str, tuple[str, ...]] = {
    "configs": ("value_changed",),
    "acls": ("added", "removed"),
    "scram_credentials": ("added", "removed"),
    "brokers": ("fenced", "unregistered"),
    "topics": ("deleted",),
    "partitions": ("under_min_isr",),
    CONTROLLER: ("changed",),
}
# what a rule's `key` glob is matched against, per table (also the alert's `resource` label)
RESOURCES: Mapping[str, str] = {
    "configs": "TYPE:NAME:CONFIG (topic:orders:retention.ms; a cluster default: broker::CONFIG)",
    "acls": "RESOURCE_TYPE:RESOURCE_NAME:PRINCIPAL (TOPIC:orders:User:alice)",
    "scram_credentials": "USER:MECHANISM (alice:SCRAM-SHA-256)",
    "brokers": "BROKER_ID (3)",
    "topics": "NAME (orders)",
    "partitions": "TOPIC-PARTITION (orders-3)",
    CONTROLLER: "controller",
}
# the smallest number of `:`-separated parts a key names, per table (a glob `*` matches any)
_KEY_PARTS = {"configs": 3, "acls": 3, "scram_credentials": 2}
CONFIG_TYPES = ("topic", "broker", "client-metrics", "group")
_FILE_FIELDS = {"name", "cluster", "explorer_url", "alertmanager", "webhook", "rule"}
_RULE_FIELDS = {"name", "table", "key", "when", "for_seconds", "labels"}


@dataclass(frozen=True)
class Rule:
    name: str
    table: str
    key: str
    when: str
    for_seconds: float = 0.0  # under_min_isr: how long a partition stays under before it is sent
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """The alert's `kind` label: what happened (`config_value_changed`, `broker_fenced`, ...)."""
        subject = {"configs": "config", "acls": "acl", "scram_credentials": "scram_user", "brokers": "broker",
                   "topics": "topic", "partitions": "partition", CONTROLLER: "controller"}[self.table]
        return f"{subject}_{self.when}"


@dataclass(frozen=True)
class AlertsFile:
    path: Path
    name: str  # the rule set: what was delivered is kept under this name
    cluster: str
    explorer_url: str | None
    alertmanagers: tuple[str, ...]
    webhooks: tuple[str, ...]
    rules: tuple[Rule, ...]


def load(path: Path, explorer_url: str | None = None) -> AlertsFile:
    """The alerts file at `path` (`explorer_url`, from the command line, wins over the file's)."""
    try:
        text = path.read_text()
        document = tomllib.loads(text)
    except OSError as error:
        raise AlertsFileError(f"{path}: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise AlertsFileError(f"{path}: not TOML: {error}") from None
    _only(str(path), "the file", document, _FILE_FIELDS)
    rules = document.get("rule", [])
    if not isinstance(rules, list) or not rules:
        raise AlertsFileError(f"{path}: no [[rule]]: nothing would be sent")
    places = _rule_places(path, text, len(rules))
    parsed = tuple(_rule(place, entry) for place, entry in zip(places, rules, strict=True))
    seen: set[str] = set()
    for place, rule in zip(places, parsed, strict=True):
        if rule.name in seen:
            raise AlertsFileError(f"{place}: rule {rule.name!r}: another rule has this name")
        seen.add(rule.name)
    receivers = {kind: _urls(path, kind, document.get(kind, [])) for kind in ("alertmanager", "webhook")}
    if not any(receivers.values()):
        raise AlertsFileError(f"{path}: no receiver: set alertmanager = [URL, ...] or webhook = [URL, ...]")
    return AlertsFile(path, _text(path, "name", document.get("name", path.stem)),
                      _text(path, "cluster", document.get("cluster", "default")),
                      _url(path, "--explorer-url", explorer_url) if explorer_url
                      else _optional_url(path, document.get("explorer_url")),
                      receivers["alertmanager"], receivers["webhook"], parsed)


def _rule(where: str, entry: Any) -> Rule:
    if not isinstance(entry, dict):
        raise AlertsFileError(f"{where}: a rule is a [[rule]] table")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise AlertsFileError(f"{where}: the rule has no name (name = \"...\")")
    where = f"{where}: rule {name!r}"
    _only(where, "the rule", entry, _RULE_FIELDS)
    table = str(entry.get("table"))
    if table not in CONDITIONS:
        raise AlertsFileError(f"{where}: unknown table {table!r}; tables: {', '.join(CONDITIONS)}")
    when = str(entry.get("when"))
    if when not in CONDITIONS[table]:
        raise AlertsFileError(f"{where}: unknown condition {when!r} for {table}; conditions: "
                              f"{', '.join(CONDITIONS[table])}")
    key = entry.get("key", "*")
    if not isinstance(key, str) or not _key_fits(table, key):
        raise AlertsFileError(f"{where}: key {key!r} does not name {table}: a glob over {RESOURCES[table]}")
    seconds = entry.get("for_seconds", 0)
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0 \
            or ("for_seconds" in entry and table != "partitions"):
        raise AlertsFileError(f"{where}: for_seconds is a number of seconds >= 0, for partitions only")
    labels = entry.get("labels", {})
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()) \
            or not all(re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", k) for k in labels):
        raise AlertsFileError(f"{where}: labels is a table of label names to strings")
    return Rule(name, table, key, when, float(seconds), dict(labels))


def _key_fits(table: str, key: str) -> bool:
    """Whether the glob can name a resource of `table` (a typo such as `topics:orders` never matches)."""
    if key == "*" or table == CONTROLLER:
        return key in ("*", CONTROLLER)
    parts = key.split(":")
    if len(parts) < _KEY_PARTS.get(table, 1):
        return False
    if table == "configs":
        return parts[0] == "*" or parts[0] in CONFIG_TYPES
    if table == "brokers":
        return bool(re.fullmatch(r"[0-9*?\[\]-]+", key))
    return True


def _only(place: str, what: str, document: Mapping[str, Any], known: set[str]) -> None:
    unknown = sorted(set(document) - known)
    if unknown:
        raise AlertsFileError(f"{place}: unknown field {unknown[0]!r} in {what}; fields: {', '.join(sorted(known))}")


def _rule_places(path: Path, text: str, count: int) -> list[str]:
    """`FILE:LINE` of each `[[rule]]` header, in order (tomllib keeps no positions); `FILE rule N` for rules
    written another way (an inline array)."""
    lines = [n for n, line in enumerate(text.splitlines(), 1) if re.match(r"\s*\[\[\s*rule\s*\]\]", line)]
    if len(lines) != count:
        return [f"{path} rule {n}" for n in range(1, count + 1)]
    return [f"{path}:{line}" for line in lines]


def _urls(path: Path, name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AlertsFileError(f"{path}: {name} is a list of URLs")
    return tuple(_url(path, name, v) for v in value)


def _optional_url(path: Path, value: Any) -> str | None:
    return None if value is None else _url(path, "explorer_url", value)


def _url(path: Path, name: str, value: Any) -> str:
    if not isinstance(value, str) or not re.match(r"https?://[^/\s]+", value):
        raise AlertsFileError(f"{path}: {name} {value!r} is not an http(s):// URL")
    return value.rstrip("/")


def _text(path: Path, name: str, value: Any) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9._-]+", value):
        raise AlertsFileError(f"{path}: {name} {value!r}: letters, digits, '.', '_' and '-' only")
    return value
