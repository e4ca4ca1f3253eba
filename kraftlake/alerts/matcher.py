"""Which changes of a warehouse match an alerts file's rules, between two published images. The changes are the
reader's (`WarehouseReader.changes` and `change_lines`: each row version compared with its key's version before,
secrets already redacted in the tables); the Raft epochs are its `batches`; a partition's ISR against its
min.insync.replicas is the one rule the explorer and the metrics use too (`kraftlake.analytics.health`)."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftlake.alerts.rules import CONTROLLER, AlertsFile, Rule
from kraftlake.analytics.health import partition_flags
from kraftlake.lake.history import iso_time
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.scan import Where
from kraftlake.lake.warehouse import BATCHES
from kraftlake.records.kafka_names import ACL_OPERATIONS, PATTERN_TYPES, PERMISSION_TYPES, RESOURCE_TYPES


@dataclass(frozen=True)
class Alert:
    """One matching change, as every receiver is sent it."""

    rule: Rule
    resource: str
    offset: int
    time_ms: int
    before: str  # "" when there was none (an insert)
    after: str  # "" when there is none (a delete)

    def identity(self, files: AlertsFile) -> str:
        """The same for a resend of this alert (after a crash between delivery and its record): receivers drop
        repeats by it (Alertmanager by its labels, which carry the offset)."""
        return f"{files.name}/{self.rule.name}/{self.offset}/{self.resource}"

    def summary(self) -> str:
        return f"{self.rule.kind.replace('_', ' ')}: {self.resource}: {self.before or '(none)'} → " \
               f"{self.after or '(none)'} at offset {self.offset}"


@dataclass
class UnderMinIsr:
    """Partitions under min ISR at the last image looked at: since which offset and append time, and the rules
    that were sent for them."""

    since: dict[str, tuple[int, int, tuple[str, ...]]] = field(default_factory=dict)

    def as_json(self) -> dict[str, list[Any]]:
        return {name: [offset, time_ms, list(sent)] for name, (offset, time_ms, sent) in self.since.items()}

    @classmethod
    def of(cls, document: Mapping[str, list[Any]]) -> UnderMinIsr:
        return cls({name: (int(v[0]), int(v[1]), tuple(v[2])) for name, v in document.items()})


def matching(reader: WarehouseReader, files: AlertsFile, after: int, through: int,
             under: UnderMinIsr) -> list[Alert]:
    """The alerts of the changes in (after, through], in offset order; `under` is updated to `through`."""
    rules = files.rules
    tables = {rule.table for rule in rules} - {CONTROLLER}
    lines = list(_change_lines(reader, tables, after, through))
    alerts = [alert for rule in rules if rule.table not in ("partitions", CONTROLLER)
              for alert in _row_alerts(rule, lines)]
    if any(rule.table == CONTROLLER for rule in rules):
        alerts += _controller_alerts(reader, [r for r in rules if r.table == CONTROLLER], after, through)
    if any(rule.table == "partitions" for rule in rules):
        alerts += _under_min_isr(reader, [r for r in rules if r.table == "partitions"], lines, through, under)
    times = reader.offset_times(sorted({alert.offset for alert in alerts if alert.time_ms < 0}))
    alerts = [a if a.time_ms >= 0 else Alert(a.rule, a.resource, a.offset, times.get(a.offset, -1), a.before, a.after)
              for a in alerts]
    return sorted(alerts, key=lambda a: (a.offset, a.rule.name, a.resource))


def _change_lines(reader: WarehouseReader, tables: set[str], after: int, through: int) -> Iterator[dict[str, Any]]:
    changed = reader.changes(after, through)
    for table in sorted(tables):
        rows = changed[table]
        if rows.num_rows:
            yield from (json.loads(line) for line in reader.change_lines(table, rows).to_pylist())


def _row_alerts(rule: Rule, lines: Iterable[dict[str, Any]]) -> Iterator[Alert]:
    for line in lines:
        if line["table"] != rule.table:
            continue
        found = _what(rule, line)
        if found is not None and fnmatch.fnmatchcase(found[0], rule.key):
            yield Alert(rule, found[0], line["offset"], -1, found[1], found[2])


def _what(rule: Rule, line: dict[str, Any]) -> tuple[str, str, str] | None:
    """(resource, before, after) when the change is what the rule's condition names, else None."""
    key, before, after, change = line["key"], line["before"], line["after"], line["change"]
    row = after or before
    match rule.table, rule.when:
        case "configs", "value_changed":
            resource = f"{key['resource_type']}:{key['resource_name']}:{key['name']}"
            was, now = before.get("value"), after.get("value")
            return (resource, _text(was), _text(now)) if was != now or change != "update" else None
        case "acls", ("added" | "removed"):
            if change != ("insert" if rule.when == "added" else "delete"):
                return None
            resource = f"{RESOURCE_TYPES.get(row['resource_type'], row['resource_type'])}:{row['resource_name']}:" \
                       f"{row['principal']}"
            entry = f"{PATTERN_TYPES.get(row['pattern_type'])} {ACL_OPERATIONS.get(row['operation'])} " \
                    f"{PERMISSION_TYPES.get(row['permission_type'])} from host {row['host']}"
            return (resource, "", entry) if rule.when == "added" else (resource, entry, "")
        case "scram_credentials", ("added" | "removed"):
            if change != ("insert" if rule.when == "added" else "delete"):
                return None
            credential = f"{key['mechanism']}, {row.get('iterations')} iterations"
            resource = f"{key['user']}:{key['mechanism']}"
            return (resource, "", credential) if rule.when == "added" else (resource, credential, "")
        case "brokers", "fenced":
            if change == "update" and after.get("fenced") is True and before.get("fenced") is False:
                return str(key["broker_id"]), "active", "fenced"
            return None
        case "brokers", "unregistered":
            return (str(key["broker_id"]), "registered", "") if change == "delete" else None
        case "topics", "deleted":
            return (before["name"], f"topic id {key['topic_id']}", "") if change == "delete" else None
    return None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _controller_alerts(reader: WarehouseReader, rules: list[Rule], after: int, through: int) -> list[Alert]:
    """A Raft epoch that differs from the batch before's: an election, a new (or re-elected) active controller."""
    batches = reader.scan(BATCHES, [Where("base_offset", ">", after), Where("base_offset", "<=", through)],
                          ["base_offset", "epoch", "append_time_ms"]).sort_by("base_offset").to_pylist()
    before = reader.scan(BATCHES, [Where("base_offset", "<=", after), Where("last_offset", ">=", after)],
                         ["epoch"]).to_pylist() if after >= 0 else []
    epoch = before[0]["epoch"] if before else None
    alerts = []
    for batch in batches:
        if epoch is not None and batch["epoch"] != epoch:
            alerts += [Alert(rule, CONTROLLER, batch["base_offset"], batch["append_time_ms"], f"epoch {epoch}",
                             f"epoch {batch['epoch']}") for rule in rules]
        epoch = batch["epoch"]
    return alerts


def _under_min_isr(reader: WarehouseReader, rules: list[Rule], lines: list[dict[str, Any]], through: int,
                   under: UnderMinIsr) -> list[Alert]:
    """Partitions under min ISR at the image `through` answers, since the last ISR change in the window that
    left them there (else since they were first seen under); each rule is sent once when one stays under for
    longer than its for_seconds (measured in the log's append times); forgotten when it recovers."""
    image = reader.image_at(through)
    partitions = image.tables["partitions"]
    topic_names = dict(zip(partitions["topic_id"].to_pylist(), partitions["topic_name"].to_pylist(), strict=True))
    names = [f"{t}-{p}" for t, p in zip(partitions["topic_name"].to_pylist(), partitions["partition_id"].to_pylist(),
                                        strict=True)]
    now = image.provenance.log_time_ms
    changed = {f"{topic_names.get(line['key']['topic_id'])}-{line['key']['partition_id']}": line["offset"]
               for line in lines if line["table"] == "partitions" and "isr" in line["after"]}
    under_now = partition_flags(partitions, image.tables["configs"])["under_min_isr"].to_pylist()
    flagged = {name for name, flag in zip(names, under_now, strict=True) if flag}
    fresh = {name: changed.get(name, through) for name in flagged if name not in under.since}
    times = reader.offset_times(sorted(set(fresh.values())))
    state = {name: under.since.get(name) or (fresh[name], times.get(fresh[name], now), ()) for name in sorted(flagged)}
    alerts = []
    for name, (offset, since_ms, sent) in state.items():
        due = [r for r in rules if r.name not in sent and fnmatch.fnmatchcase(name, r.key)
               and now - since_ms >= r.for_seconds * 1000]
        alerts += [Alert(rule, name, offset, since_ms, "in sync", f"under min ISR for {(now - since_ms) / 1000:.0f} s "
                         f"(as of offset {through}, {iso_time(now)})") for rule in due]
        state[name] = (offset, since_ms, (*sent, *(rule.name for rule in due)))
    under.since = state
    return alerts
