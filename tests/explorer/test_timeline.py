"""The timeline's series against the scenario whose answers are known (the same ones the Spark summary views
are held to in tests/analytics/test_summaries.py), computed from the real Delta tables without Spark."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kraftlake.explorer.timeline import Series, Span, Timeline, build_timeline, quiet_stretches, window
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from tests.explorer.scenario import LAST, START_MS


@pytest.fixture(scope="module")
def timeline(demo_warehouse: Warehouse) -> Timeline:
    return build_timeline(WarehouseReader(demo_warehouse))


def points(series: Series) -> list[tuple[int, int]]:
    return list(zip(series.offsets.tolist(), series.values.tolist(), strict=True))


def test_partition_counts_match_the_summaries(timeline: Timeline) -> None:
    # orders-0..2 shrink and grow back, then payments (offsets 33-34) is created whole and deleted
    assert points(timeline.under_replicated) == [(13, 1), (14, 2), (15, 3), (18, 2), (19, 1), (20, 0), (26, 1)]
    assert points(timeline.offline) == [(21, 1)]
    # the cluster default (2, from offset 11) holds until the topic's own 3 (offset 25)
    assert points(timeline.under_min_isr) == [(16, 1), (20, 0), (26, 1)]
    assert timeline.under_replicated.times.tolist() == [START_MS + o * 1000 for o in (13, 14, 15, 18, 19, 20, 26)]


def test_leaders_per_broker_match_the_summaries(timeline: Timeline) -> None:
    assert {b: points(s) for b, s in timeline.leaders.items()} == {
        0: [(8, 1), (15, 2), (33, 3), (34, 2)], 1: [(9, 1), (21, 0)], 2: [(10, 1), (15, 0)]}


def test_broker_states_as_runs(timeline: Timeline) -> None:
    assert timeline.brokers == {
        0: [Span("fenced", 1, 4), Span("registered", 4, None)],
        1: [Span("fenced", 2, 5), Span("registered", 5, 22), Span("controlled_shutdown", 22, None)],
        2: [Span("fenced", 3, 6), Span("registered", 6, 12), Span("fenced", 12, 17), Span("registered", 17, None)],
    }


def test_events_name_rows_as_history_takes_them(timeline: Timeline) -> None:
    events = list(zip(timeline.events.offsets.tolist(), timeline.events.tables, timeline.events.keys,
                      timeline.events.changes, strict=True))
    assert events == [
        (0, "features", "metadata.version", "insert"),
        (7, "topics", "orders", "insert"),
        (11, "configs", "broker::min.insync.replicas", "insert"),
        (23, "configs", "topic:orders:retention.ms", "insert"),
        (24, "configs", "topic:orders:retention.ms", "update"),
        (25, "configs", "topic:orders:min.insync.replicas", "insert"),
        (27, "scram_credentials", "alice:SCRAM-SHA-256", "insert"),
        (28, "acls", events[7][2], "insert"),
        (29, "client_quotas", "user=alice", "insert"),
        (30, "delegation_tokens", "token-1", "insert"),
        (31, "configs", "broker:0:ssl.keystore.password", "insert"),
        (32, "topics", "payments", "insert"),
        (34, "topics", "payments", "delete"),
        (35, "configs", "topic:orders:retention.ms", "update"),
    ]
    assert timeline.epochs == [(1, 0, LAST)]


def test_config_and_acl_events_read_old_to_new(timeline: Timeline) -> None:
    """A config's value in units (raw kept beside it), a secret's as the table holds it, an ACL in Kafka's
    names with its principal."""
    events = {offset: (text, before, after) for offset, text, before, after in zip(
        timeline.events.offsets.tolist(), timeline.events.texts, timeline.events.befores, timeline.events.afters,
        strict=True)}
    assert events[11] == ("cluster default min.insync.replicas: (unset) → 2", {}, {"value": "2"})
    assert events[35] == ("topic orders retention.ms: 2 s → 7 days", {"value": "2000"}, {"value": "604800000"})
    assert events[31][0] == "broker 0 ssl.keystore.password: (unset) → [redacted]"
    assert events[28][0] == "+ TOPIC orders LITERAL READ ALLOW User:alice"
    assert (events[28][2]["operation"], events[28][2]["principal"]) == (3, "User:alice")
    assert events[32][0] == "topics insert payments"


def test_a_zoomed_out_window_keeps_every_peak() -> None:
    """10,000 points thinned to 2 per bucket: the highest of each bucket survives, and the value at the
    window's start comes from the point before it."""
    rng = np.random.default_rng(7)
    offsets = np.arange(10_000, dtype=np.int64)
    values = rng.integers(0, 100, 10_000)
    values[5_000] = 1_000
    series = Series(offsets, values, offsets * 10)
    kept = window(series, 1_000, 99_990, buckets=50)
    assert len(kept) <= 2 * 50 + 1
    assert (5_000, 50_000, 1_000) in kept
    assert kept[0] == (99, 990, int(values[99]))
    assert window(series, 0, 100, buckets=50) == [(o, o * 10, int(values[o])) for o in range(11)]
    assert window(Series(pa.array([], pa.int64()).to_numpy(), np.array([]), np.array([])), 0, 1, 5) == []


def test_quiet_stretches_are_the_long_ones_between_changes() -> None:
    """A day after 35 s of changes is one break (also when the window starts between changes); a window with
    nothing long between changes, or nothing but one change between two long stretches, has none."""
    changes = np.array([0, 1_000, 35_000], dtype=np.int64)
    day = 86_400_000
    assert quiet_stretches(changes, 0, 35_000 + day) == [(35_000, 35_000 + day)]
    assert quiet_stretches(changes, 0, 35_000) == []
    assert quiet_stretches(changes, 2_000, day) == [(35_000, day)]
    assert quiet_stretches(np.array([day], dtype=np.int64), 0, 2 * day) == []
