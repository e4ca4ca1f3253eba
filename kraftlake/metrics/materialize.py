"""`kraftlake materialize`'s metrics, per cluster: how far the warehouse is (the last published offset), how long
a change takes from the quorum's commit to its published image, each micro-batch's duration, the row versions
written and the micro-batches that failed. The job tells them as it goes (`jobs.materialize.JobObserver`)."""

from __future__ import annotations

import time

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.registry import Collector

from kraftlake.lake.writes import PublishedImage

# seconds: a micro-batch every few seconds on a current job, minutes on one catching up
LATENCY_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)


class MaterializeMetrics:
    """The job's series (unregistered: the endpoint's registry takes `collectors()`)."""

    def __init__(self) -> None:
        labels = ["cluster"]
        self.last_published = Gauge("kraftlake_materialize_last_published_offset",
                                    "The offset of the last image the job published.", labels, registry=None)
        self.last_published_time = Gauge("kraftlake_materialize_last_published_timestamp_seconds",
                                         "The append time of the last published image's batch.", labels,
                                         registry=None)
        self.latency = Histogram("kraftlake_materialize_publish_latency_seconds",
                                 "From the newest batch's append time (the quorum's commit) to its image published.",
                                 labels, buckets=LATENCY_BUCKETS, registry=None)
        self.duration = Histogram("kraftlake_materialize_micro_batch_duration_seconds",
                                  "Time to replay and publish one micro-batch.", labels, buckets=DURATION_BUCKETS,
                                  registry=None)
        self.rows = Counter("kraftlake_materialize_rows_written", "Row versions written into the history tables.",
                            labels, registry=None)
        self.failures = Counter("kraftlake_materialize_failures",
                                "Micro-batches that failed (the job stops with one line).", labels, registry=None)

    def collectors(self) -> list[Collector]:
        return list(self.families())

    def families(self) -> tuple[Gauge | Histogram | Counter, ...]:
        return self.last_published, self.last_published_time, self.latency, self.duration, self.rows, self.failures

    def of(self, cluster: str) -> ClusterMetrics:
        return ClusterMetrics(self, cluster)


class ClusterMetrics:
    """One cluster's series, as the job's writer tells them (`jobs.materialize.JobObserver`)."""

    def __init__(self, metrics: MaterializeMetrics, cluster: str) -> None:
        self.metrics = metrics
        self.cluster = cluster
        for family in (metrics.rows, metrics.failures):
            family.labels(cluster)  # a zero from the start, so rate() sees the first increase

    def micro_batch(self, seconds: float, failed: bool) -> None:
        self.metrics.duration.labels(self.cluster).observe(seconds)
        if failed:
            self.metrics.failures.labels(self.cluster).inc()

    def published(self, image: PublishedImage, rows_written: int) -> None:
        provenance = image.provenance
        self.metrics.last_published.labels(self.cluster).set(provenance.offset)
        if provenance.log_time_ms >= 0:
            self.metrics.last_published_time.labels(self.cluster).set(provenance.log_time_ms / 1000)
            self.metrics.latency.labels(self.cluster).observe(max(0.0, time.time() - provenance.log_time_ms / 1000))
        self.metrics.rows.labels(self.cluster).inc(rows_written)

    def left(self) -> None:
        """The cluster left the fleet: its series go (a scrape no longer shows a cluster that is not written)."""
        for family in self.metrics.families():
            family.remove(self.cluster)
