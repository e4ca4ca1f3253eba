"""`kraftlake follow`'s metrics, one series per cluster: read at scrape time from each follower's `status()`,
the same facts its status file holds and `follow --status` judges (the STALLED rule included)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kraftlake.follow.status import Status, offsets_behind

Statuses = Callable[[], Iterable[tuple[str, Status]]]  # (cluster, status) of every follower running


class FollowCollector(Collector):
    def __init__(self, statuses: Statuses) -> None:
        self.statuses = statuses

    def collect(self) -> Iterator[Metric]:
        now = time.time()
        labels = ["cluster"]
        gauges = {
            "last_copied_offset": "The last offset the metadata topic holds (acknowledged).",
            "high_watermark_offset": "The quorum's high watermark: the first offset not committed (-1: not known).",
            "lag_offsets": "Offsets committed by the quorum and not copied yet.",
            "lag_seconds": "Age of the newest copied batch (Kafka's last-applied-record-lag-ms, in seconds).",
            "last_answer_age_seconds": "Seconds since the source last answered with the log.",
            "stalled": "1 while following is STALLED (as `follow --status` judges it), else 0.",
        }
        counters = {
            "reconnects": "Connections to a controller opened after the first.",
            "gaps": "Gaps recorded: offsets Kafka deleted before they were read, bridged by a snapshot.",
            "copied_bytes": "Bytes of batches copied into the metadata topic.",
            "copied_batches": "Batches copied into the metadata topic (a snapshot's included).",
        }
        families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {
            **{name: GaugeMetricFamily(f"kraftlake_follow_{name}", text, labels=labels)
               for name, text in gauges.items()},
            **{name: CounterMetricFamily(f"kraftlake_follow_{name}", text, labels=labels)
               for name, text in counters.items()},
        }
        for cluster, status in self.statuses():
            values: dict[str, float | None] = {
                "last_copied_offset": status.published_offset,
                "high_watermark_offset": status.high_watermark,
                "lag_offsets": offsets_behind(status),
                "lag_seconds": status.lag_seconds(now),
                "last_answer_age_seconds": max(0.0, now - status.answered_at),
                "stalled": 1 if status.stalled(now) else 0,
                "reconnects": status.reconnects,
                "gaps": len(status.gaps),
                "copied_bytes": status.copied_bytes,
                "copied_batches": status.copied_batches,
            }
            for name, value in values.items():
                if value is not None:  # not known yet: no sample rather than a made-up one
                    families[name].add_metric([cluster], value)
        yield from families.values()
