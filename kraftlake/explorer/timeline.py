"""The whole history on one time axis, computed from the `_history` tables and `batches` with Arrow and numpy
(the explorer serves requests: a Spark session would cost seconds to start and a gigabyte to keep).

The series follow the summary views' rules (`kraftlake.analytics.summaries`, tested against the same
scenario): a partition is under-replicated when its ISR is smaller than its replicas, offline without a
leader, under min ISR when its ISR is below min.insync.replicas (the topic's, else the cluster default, else
1); a broker is registered, fenced, in controlled shutdown or unregistered, and the fenced brokers are counted
from those same runs. Each series is a step function:
(offset, value) after every offset where the value changed. Times are the append time of the batch holding
an offset (`Clock`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kraftlake.analytics.health import MIN_ISR
from kraftlake.explorer import words
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.history import CHANGES, previous_versions
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.scan import Where
from kraftlake.lake.warehouse import BATCHES
from kraftlake.replay.acls import StandardAcl
from kraftlake.replay.visibility import Known

# tables whose changes are events on the timeline, with how users name a row (the `history` key form)
EVENT_TABLES = ("topics", "configs", "client_quotas", "acls", "scram_credentials", "delegation_tokens", "features",
                "controllers", "voters", "kraft_version")
# the columns whose old → new an event shows (raw in the API, in words on the timeline)
EVENT_VALUES: dict[str, tuple[str, ...]] = {"configs": ("value",), "acls": StandardAcl._fields}
UNSET = "(unset)"
# a stretch of the window in which nothing the timeline draws changes is drawn as a break when it is longer
# than a tenth of the window and a minute (a day of NoOps would otherwise squeeze every event into a few pixels)
QUIET_SHARE = 10
QUIET_MIN_MS = 60_000
ACTIVE_MIN_MS = 1000  # the axis' finest tick
BROKER_STATES = ("registered", "fenced", "controlled_shutdown", "unregistered")


@dataclass(frozen=True)
class Series:
    """A step function: `values[i]` holds from `offsets[i]` until the next offset; `times` are their times."""

    offsets: np.ndarray
    values: np.ndarray
    times: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def timed(self, clock: Clock) -> Series:
        return Series(self.offsets, self.values, clock.times(self.offsets))


@dataclass(frozen=True)
class Span:
    state: str
    start: int
    end: int | None  # None: still in this state at the last published image


@dataclass(frozen=True)
class Events:
    """Changes of the event tables, in offset order: `change` is insert / update / delete, `key` the row as
    `kraftlake history --key` takes it; `before` / `after` the raw values of `EVENT_VALUES` that changed (a
    config's value, an ACL's columns), `texts` the event in operators' words."""

    offsets: np.ndarray
    times: np.ndarray
    tables: list[str]
    keys: list[str]
    changes: list[str]
    befores: list[dict[str, Any]]
    afters: list[dict[str, Any]]
    texts: list[str]


@dataclass(frozen=True)
class Clock:
    """Offset → time: the batch holding the offset, else the last batch (or snapshot) before it (the first
    one's time before all of them). A snapshot no batch read holds (the one a history starts at, a gap's
    bridge) counts from its own offset with the time the reader knows there (`WarehouseReader.time_at`)."""

    bases: np.ndarray
    times_ms: np.ndarray

    @staticmethod
    def of(batches: pa.Table, reader: WarehouseReader, snapshots: Sequence[int]) -> Clock:
        """The clock of `batches` (sorted by base offset) and of those `snapshots` offsets no batch holds."""
        bases, lasts = batches["base_offset"].to_numpy(), batches["last_offset"].to_numpy()
        times = batches["append_time_ms"].to_numpy()
        held = np.searchsorted(bases, snapshots, side="right") - 1
        unheld = sorted({o for o, at in zip(snapshots, held, strict=True) if at < 0 or lasts[at] < o})
        at = np.searchsorted(bases, unheld)
        return Clock(np.insert(bases, at, unheld), np.insert(times, at, [reader.time_at(o) for o in unheld]))

    def times(self, offsets: np.ndarray) -> np.ndarray:
        if len(self.bases) == 0:
            return np.full(len(offsets), -1, dtype=np.int64)
        at = np.searchsorted(self.bases, offsets, side="right") - 1
        return self.times_ms[np.maximum(at, 0)]


@dataclass(frozen=True)
class Timeline:
    known: Known  # the reader's: the range, its times and gaps, as the header and the API state them
    clock: Clock
    brokers: dict[int, list[Span]]
    under_replicated: Series
    under_min_isr: Series
    offline: Series
    fenced_brokers: Series
    leaders: dict[int, Series]
    epochs: list[tuple[int, int, int]]  # (epoch, first offset, last offset)
    events: Events

    @property
    def first_offset(self) -> int:
        return self.known.span()[0]

    @property
    def last_offset(self) -> int:
        return self.known.span()[1]

    @cached_property
    def changes(self) -> np.ndarray:
        """Every time something the timeline draws changes (an event, a series' step, a broker's state, a Raft
        epoch), sorted, each once: what bounds its quiet stretches."""
        spans = [span for spans in self.brokers.values() for span in spans]
        offsets = [*(s.start for s in spans), *(s.end for s in spans if s.end is not None),
                   *(o for e in self.epochs for o in e[1:])]
        series = [self.under_replicated, self.under_min_isr, self.offline, self.fenced_brokers,
                  *self.leaders.values()]
        return np.unique(np.concatenate([self.events.times, self.clock.times(np.array(offsets, dtype=np.int64)),
                                         *(s.times for s in series)]).astype(np.int64))


def build_timeline(reader: WarehouseReader) -> Timeline:
    """The timeline up to the last published image (whole images only, the reader's rule), its range the
    reader's `known`."""
    known = reader.known()
    first, last = known.span()
    batches = reader.scan(BATCHES, [Where("base_offset", "<=", last)],
                          ["base_offset", "last_offset", "epoch", "append_time_ms"]).sort_by("base_offset")
    clock = Clock.of(batches, reader, [first, *(gap.snapshot_end_offset - 1 for gap in known.gaps)])
    through = known.last_image  # read once: each read of it refreshes `images`' Delta log
    partitions = reader.history_rows("partitions", (), ["topic_id", "topic_name", "partition_id", "from_offset",
                                                        "deleted", "isr", "replicas", "leader"], through)
    versions = _PartitionVersions.of(partitions)
    min_isr = reader.history_rows("configs", [Where("name", "=", MIN_ISR)], None, through)
    brokers = broker_spans(reader.history_rows("brokers", (), ["broker_id", "from_offset", "deleted", "fenced",
                                                               "in_controlled_shutdown"], through))
    return Timeline(
        known=known, clock=clock,
        brokers=brokers,
        under_replicated=versions.count(versions.under_replicated()).timed(clock),
        under_min_isr=versions.under_min_isr(min_isr).timed(clock),
        offline=versions.count(versions.offline()).timed(clock),
        fenced_brokers=fenced_count(brokers).timed(clock),
        leaders={broker: series.timed(clock) for broker, series in versions.leaders().items()},
        epochs=_epochs(batches),
        events=_events(reader, clock, through),
    )


def broker_spans(rows: pa.Table) -> dict[int, list[Span]]:
    """Each broker's runs of one state, in offset order (a state repeated by a later version is one run)."""
    spans: dict[int, list[Span]] = defaultdict(list)
    for row in rows.sort_by([("broker_id", "ascending"), ("from_offset", "ascending")]).to_pylist():
        state = ("unregistered" if row["deleted"] else "fenced" if row["fenced"]
                 else "controlled_shutdown" if row["in_controlled_shutdown"] else "registered")
        runs = spans[row["broker_id"]]
        if runs and runs[-1].state == state:
            continue
        if runs:
            runs[-1] = Span(runs[-1].state, runs[-1].start, row["from_offset"])
        runs.append(Span(state, row["from_offset"], None))
    return dict(spans)


def fenced_count(spans: dict[int, list[Span]]) -> Series:
    """How many brokers are fenced after each offset where that changed: the swimlanes' fenced runs, counted
    (so the fleet's count and a cluster's swimlanes cannot disagree)."""
    starts = [span.start for runs in spans.values() for span in runs if span.state == "fenced"]
    ends = [span.end for runs in spans.values() for span in runs if span.state == "fenced" and span.end is not None]
    offsets = np.array([*starts, *ends], dtype=np.int64)
    steps = np.r_[np.ones(len(starts), np.int64), -np.ones(len(ends), np.int64)]
    return _summed(offsets, steps)


@dataclass(frozen=True)
class _PartitionVersions:
    """Partition versions sorted by key, then offset; `first` marks each key's first version."""

    offsets: np.ndarray
    key: np.ndarray  # a dense key number per (topic_id, partition_id)
    first: np.ndarray
    deleted: np.ndarray
    isr: np.ndarray
    replicas: np.ndarray
    leader: np.ndarray
    topic_names: pa.Array  # per key number (made a list only by `under_min_isr`, which needs it)

    @staticmethod
    def of(rows: pa.Table) -> _PartitionVersions:
        topic = pc.dictionary_encode(rows["topic_id"]).combine_chunks().indices.to_numpy(zero_copy_only=False)
        partition = rows["partition_id"].to_numpy(zero_copy_only=False).astype(np.int64)
        offsets = rows["from_offset"].to_numpy(zero_copy_only=False)
        order = np.lexsort((offsets, partition, topic))
        pairs = topic[order].astype(np.int64) << 32 | partition[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = pairs[1:] != pairs[:-1]
        key = np.cumsum(first) - 1
        deleted = pc.fill_null(rows["deleted"], False).to_numpy(zero_copy_only=False)[order]
        return _PartitionVersions(
            offsets=offsets[order], key=key, first=first, deleted=deleted,
            isr=_lengths(rows["isr"])[order], replicas=_lengths(rows["replicas"])[order],
            leader=np.where(deleted, -1, pc.fill_null(rows["leader"], -1).to_numpy(zero_copy_only=False)[order]),
            topic_names=rows["topic_name"].take(pa.array(order[first])).combine_chunks(),
        )

    def under_replicated(self) -> np.ndarray:
        return (~self.deleted & (self.isr < self.replicas)).astype(np.int64)

    def offline(self) -> np.ndarray:
        return (~self.deleted & (self.leader < 0)).astype(np.int64)

    def count(self, flags: np.ndarray) -> Series:
        """How many keys have the flag after each offset where that changed."""
        previous = np.zeros_like(flags)
        previous[1:] = flags[:-1]
        previous[self.first] = 0
        return _summed(self.offsets, flags - previous)

    def leaders(self) -> dict[int, Series]:
        """Per broker, how many partitions it leads after each offset where that changed."""
        previous = np.full_like(self.leader, -1)
        previous[1:] = self.leader[:-1]
        previous[self.first] = -1
        moved = self.leader != previous
        gained, lost = moved & (self.leader >= 0), moved & (previous >= 0)
        brokers = np.concatenate([self.leader[gained], previous[lost]])
        offsets = np.concatenate([self.offsets[gained], self.offsets[lost]])
        steps = np.concatenate([np.ones(gained.sum(), np.int64), -np.ones(lost.sum(), np.int64)])
        return {int(broker): _summed(offsets[brokers == broker], steps[brokers == broker])
                for broker in np.unique(brokers)}

    def under_min_isr(self, configs: pa.Table) -> Series:
        """Partitions whose ISR is below the min.insync.replicas in force: without such configs, below 1 (an
        empty ISR); with them, a sweep in offset order, since a config change moves every partition of its
        topic (or, for the cluster default, every partition) at once."""
        alive_isr = np.where(self.deleted, -1, self.isr)
        if configs.num_rows == 0:
            return self.count(((alive_isr >= 0) & (alive_isr < 1)).astype(np.int64))
        levels = [(row["from_offset"], row["resource_type"], row["resource_name"],
                   -1 if row["deleted"] else _int_or(row["value"], -1))
                  for row in configs.sort_by("from_offset").to_pylist()]
        topic_names = self.topic_names.to_pylist()
        keys_of_topic: dict[str | None, list[int]] = defaultdict(list)
        for number, name in enumerate(topic_names):
            keys_of_topic[name].append(number)
        size = np.full(len(topic_names), -1, dtype=np.int64).tolist()
        under = [False] * len(size)
        topic_min: dict[str, int] = {}
        cluster_min = -1
        count = 0
        offsets: list[int] = []
        values: list[int] = []

        def recompute(numbers: Sequence[int]) -> int:
            delta = 0
            for number in numbers:
                name = topic_names[number]
                level = topic_min.get(name, -1) if name is not None else -1
                now = 0 <= size[number] < (level if level > 0 else cluster_min if cluster_min > 0 else 1)
                delta += now - under[number]
                under[number] = now
            return delta

        order = np.argsort(self.offsets, kind="stable")
        version_offsets, version_keys = self.offsets[order].tolist(), self.key[order].tolist()
        version_sizes = alive_isr[order].tolist()
        at, config_at, total = 0, 0, len(version_offsets)
        while at < total or config_at < len(levels):
            offset = min(version_offsets[at] if at < total else np.iinfo(np.int64).max,
                         levels[config_at][0] if config_at < len(levels) else np.iinfo(np.int64).max)
            before = count
            while config_at < len(levels) and levels[config_at][0] == offset:
                _, kind, name, level = levels[config_at]
                config_at += 1
                if kind == "topic":
                    topic_min[name] = level
                    count += recompute(keys_of_topic.get(name, ()))
                elif kind == "broker" and name == "":
                    cluster_min = level
                    count += recompute(range(len(size)))
            while at < total and version_offsets[at] == offset:
                size[version_keys[at]] = version_sizes[at]
                count += recompute((version_keys[at],))
                at += 1
            if count != before:
                offsets.append(offset)
                values.append(count)
        return Series(np.array(offsets, dtype=np.int64), np.array(values, dtype=np.int64))


def _lengths(lists: pa.ChunkedArray) -> np.ndarray:
    return pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _int_or(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def _summed(offsets: np.ndarray, steps: np.ndarray) -> Series:
    """The running sum of `steps`, one point per offset where the sum moved."""
    nonzero = steps != 0
    at, inverse = np.unique(offsets[nonzero], return_inverse=True)
    per_offset = np.bincount(inverse, weights=steps[nonzero], minlength=len(at)).astype(np.int64)
    moved = per_offset != 0
    return Series(at[moved], np.cumsum(per_offset)[moved])


def _epochs(batches: pa.Table) -> list[tuple[int, int, int]]:
    if batches.num_rows == 0:
        return []
    grouped = batches.group_by("epoch").aggregate([("base_offset", "min"), ("last_offset", "max")])
    rows = sorted(zip(grouped["base_offset_min"].to_pylist(), grouped["last_offset_max"].to_pylist(),
                      grouped["epoch"].to_pylist(), strict=True))
    return [(epoch, start, end) for start, end, epoch in rows]


def _key_texts(table: str, rows: pa.Table) -> list[str]:
    """Each row's key as `kraftlake history --key` takes it (a config: type:name:config)."""
    match table:
        case "topics":
            return [str(name) for name in rows["name"].to_pylist()]
        case "configs":
            return [f"{t}:{r}:{n}" for t, r, n in zip(rows["resource_type"].to_pylist(),
                                                       rows["resource_name"].to_pylist(),
                                                       rows["name"].to_pylist(), strict=True)]
        case "client_quotas":
            return [str(entity) for entity in rows["entity"].to_pylist()]
        case "scram_credentials":
            return [f"{u}:{m}" for u, m in zip(rows["user"].to_pylist(), rows["mechanism"].to_pylist(), strict=True)]
    return [str(value) for value in rows[TABLES[table].key[0]].to_pylist()]


def _events(reader: WarehouseReader, clock: Clock, through: int | None) -> Events:
    """Every change of the event tables: inserts, updates, deletes, each key's versions compared in order (a
    deletion's values are the version's before it, which may carry none). Compared over whole columns; only
    the events that show values (a config's, an ACL's) are worded row by row (a bootstrap's 100k topic
    creations in a Python loop were a third of the timeline's cold build at 1M partitions)."""
    parts = [part for table in EVENT_TABLES if (part := _table_events(reader, table, through)) is not None]
    offsets = np.concatenate([part[0] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    order = np.argsort(offsets, kind="stable").tolist()  # tables in EVENT_TABLES order at one offset

    def merged(column: int) -> list[Any]:
        values = [value for part in parts for value in part[column]]
        return [values[i] for i in order]

    offsets = offsets[order].astype(np.int64)
    return Events(offsets, clock.times(offsets), *(merged(column) for column in range(1, 7)))


_TableEvents = tuple[np.ndarray, list[str], list[str], list[str], list[dict[str, Any]], list[dict[str, Any]], list[str]]


def _table_events(reader: WarehouseReader, table: str, through: int | None) -> _TableEvents | None:
    """One table's events (offsets, tables, keys, changes, befores, afters, texts), in key then offset order
    (`through`: as `history_rows`')."""
    key = list(TABLES[table].key)
    values = EVENT_VALUES.get(table, ())
    extra = ["name"] if table == "topics" else [c for c in values if c not in key]
    rows = reader.history_rows(table, (), [*key, *extra, "from_offset", "deleted"], through)
    if rows.num_rows == 0:
        return None
    rows = rows.sort_by([*((c, "ascending") for c in key), ("from_offset", "ascending")])
    previous = previous_versions(rows, key)  # in key then offset order: the row before, when of the same key
    texts = _key_texts(table, rows) if table != "topics" else _topic_names(rows, previous)
    deleted = pc.fill_null(rows["deleted"], False).to_numpy(zero_copy_only=False)
    had = previous >= 0
    had[had] = ~deleted[previous[had]]
    kept = np.flatnonzero(~deleted | had)
    kinds = np.where(deleted, 2, np.where(had, 1, 0))[kept].tolist()
    changes = [CHANGES[kind] for kind in kinds]
    keys = [texts[i] for i in kept.tolist()]
    offsets = rows["from_offset"].to_numpy(zero_copy_only=False)[kept]
    if not values:
        words_of = table.replace("_", " ")
        return (offsets, [table] * len(keys), keys, changes, [{} for _ in keys], [{} for _ in keys],
                [f"{words_of} {change} {name}" for change, name in zip(changes, keys, strict=True)])
    listed = rows.to_pylist()
    befores, afters, worded = [], [], []
    for i, change, name in zip(kept.tolist(), changes, keys, strict=True):
        before = {c: listed[i - 1][c] for c in values} if had[i] else {}
        after = {} if deleted[i] else {c: listed[i][c] for c in values}
        changed = [c for c in values if before.get(c) != after.get(c)]
        before, after = ({c: v for c, v in before.items() if c in changed},
                         {c: v for c, v in after.items() if c in changed})
        befores.append(before)
        afters.append(after)
        worded.append(_event_text(table, name, change, listed[i - 1] if deleted[i] else listed[i], before, after))
    return offsets, [table] * len(keys), keys, changes, befores, afters, worded


def _event_text(table: str, key: str, change: str, row: dict[str, Any], before: dict[str, Any],
                after: dict[str, Any]) -> str:
    """An event as an operator reads it: `topic orders retention.ms: 1 day → 7 days` (a secret's value is
    already `[redacted]` in the table), `+ TOPIC orders LITERAL READ ALLOW User:alice`; other tables'
    events name the table, the change and the row."""
    match table:
        case "configs":
            resource = ("cluster default" if row["resource_type"] == "broker" and not row["resource_name"]
                        else f"{row['resource_type']} {row['resource_name']}")

            def shown(value: str | None) -> str:
                return UNSET if value is None else words.config_value(row["name"], value) or value
            return f"{resource} {row['name']}: {shown(before.get('value'))} → {shown(after.get('value'))}"
        case "acls":
            host = "" if row["host"] == "*" else f" from {row['host']}"
            return f"{'−' if change == 'delete' else '+'} {words.acl(row)} {row['principal']}{host}"
    return f"{table.replace('_', ' ')} {change} {key}"


def _topic_names(rows: pa.Table, previous: np.ndarray) -> list[str]:
    """Topic names, a deletion's (which may carry none) taken from its topic's last version that names it
    (`previous`: each row's version before it, -1 for a topic's first)."""
    count = rows.num_rows
    at = np.arange(count)
    named = np.maximum.accumulate(np.where(rows["name"].is_valid().to_numpy(zero_copy_only=False), at, -1))
    first = np.maximum.accumulate(np.where(previous < 0, at, 0))  # the row of each topic's first version
    own = pa.array(named >= first)  # the last named version is the same topic's
    return pc.fill_null(pc.if_else(own, pc.fill_null_forward(rows["name"]), pa.scalar(None, pa.string())),
                        "None").to_pylist()


def quiet_stretches(changes: np.ndarray, low_ms: int, high_ms: int) -> list[tuple[int, int]]:
    """The stretches of [low_ms, high_ms] between two changes (or a change and the window's end) in which
    nothing changes, those longer than a `QUIET_SHARE`th of the window and `QUIET_MIN_MS`: what the timeline
    draws as breaks. None when what is left between them is shorter than `ACTIVE_MIN_MS` (a window where
    nothing or one instant changes is drawn as it is, not as a break beside an empty axis)."""
    inside = changes[(changes > low_ms) & (changes < high_ms)]
    edges = np.concatenate([[low_ms], inside, [high_ms]]).astype(np.int64)
    lengths = np.diff(edges)
    long = np.flatnonzero(lengths > max((high_ms - low_ms) // QUIET_SHARE, QUIET_MIN_MS))
    if high_ms - low_ms - int(lengths[long].sum()) < ACTIVE_MIN_MS:
        return []
    return [(int(edges[i]), int(edges[i + 1])) for i in long]


def window(series: Series, low_ms: int, high_ms: int, buckets: int) -> list[tuple[int, int, int]]:
    """(offset, time, value) of the points inside [low_ms, high_ms] and the one before it (the value at the
    window's start); when more than `2 * buckets` points fall inside, each time bucket keeps its highest
    point and its last, so no peak disappears when zoomed out."""
    inside = np.flatnonzero((series.times >= low_ms) & (series.times <= high_ms))
    before = np.flatnonzero(series.times < low_ms)
    if len(inside) > 2 * buckets:
        bucket = (series.times[inside] - low_ms) * buckets // max(high_ms - low_ms + 1, 1)
        last = np.flatnonzero(np.r_[bucket[1:] != bucket[:-1], True])
        ranked = np.lexsort((series.values[inside], bucket))
        highest = ranked[np.flatnonzero(np.r_[bucket[ranked][1:] != bucket[ranked][:-1], True])]
        inside = inside[np.union1d(last, highest)]
    chosen = np.r_[before[-1:], inside].astype(np.int64)
    return list(zip(series.offsets[chosen].tolist(), series.times[chosen].tolist(), series.values[chosen].tolist(),
                    strict=True))
