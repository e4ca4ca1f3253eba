"""The cluster's health as metrics, per cluster `kraftlake ui` serves: from the last published image, at scrape
time, so a Prometheus that cannot reach the brokers still sees the cluster's state, as of a known offset
(`kraftlake_image_offset`). Names are kafka_exporter's and Kafka's own (`kafka_brokers`, OfflinePartitionsCount,
UnderReplicatedPartitions, UnderMinIsrPartitionCount) under the `kraftlake_` prefix; partitions are counted as
the explorer flags them (`kraftlake.analytics.health`). The images are the ones `kraftlake ui` holds (the CLI
hands over its clusters; nothing here imports the web app). Cached per last published offset: a scrape when
nothing was published since costs the look at that offset."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kraftlake.lake.errors import LakeError
from kraftlake.lake.reader import WarehouseReader
from kraftlake.replay.image import Provenance


class Image(Protocol):
    """An image as the explorer holds it (`ImageView`): where it stands, its tables by name, and its partitions'
    flags (`kraftlake.analytics.health.partition_flags`, per partition row)."""

    @property
    def provenance(self) -> Provenance: ...

    @property
    def tables(self) -> Mapping[str, pa.Table]: ...

    @property
    def flags(self) -> pa.Table: ...


class Reads(Protocol):
    """A served cluster's reads: its reader and the image it serves at an offset (the explorer's, cached)."""

    @property
    def reader(self) -> WarehouseReader: ...

    def image(self, offset: int) -> Image: ...


class Served(Protocol):
    """One cluster served (the explorer's `Member`)."""

    @property
    def name(self) -> str: ...

    @property
    def explorer(self) -> Reads: ...


class Clusters(Protocol):
    """The clusters served (the explorer's `Clusters`)."""

    def members(self) -> Sequence[Served]: ...


def described(text: str) -> Any:
    """A field whose series' HELP text is `text`."""
    return field(metadata={"help": text})


@dataclass(frozen=True)
class Health:
    """One image's health; each field is the series `kraftlake_<field>`."""

    image_offset: int = described("The offset of the last published image these health series are of.")
    image_timestamp_seconds: float = described("The append time of that image's last batch.")
    kafka_brokers: int = described("Brokers registered.")
    kafka_brokers_fenced: int = described("Registered brokers that are fenced.")
    kafka_brokers_in_controlled_shutdown: int = described("Registered brokers in controlled shutdown.")
    kafka_partitions: int = described("Partitions.")
    kafka_partitions_offline: int = described("Partitions without a leader.")
    kafka_partitions_under_replicated: int = described("Partitions whose ISR is smaller than their replicas.")
    kafka_partitions_under_min_isr: int = described("Partitions whose ISR is smaller than min.insync.replicas.")
    kafka_partitions_with_elr: int = described("Partitions with an eligible leader replica set (KIP-966).")
    kafka_controller_epoch: int = described("The controller's (Raft leader's) epoch at that image.")
    kafka_metadata_version: int = described("The metadata.version feature level (0: not set).")


def health_of(view: Image) -> Health:
    brokers, partitions, features = view.tables["brokers"], view.tables["partitions"], view.tables["features"]
    flags = view.flags
    levels = dict(zip(features["name"].to_pylist(), features["level"].to_pylist(), strict=True))

    def count(column: object) -> int:
        return int(pc.sum(pc.cast(pc.fill_null(column, False), "int64")).as_py() or 0)

    return Health(
        view.provenance.offset, view.provenance.log_time_ms / 1000, brokers.num_rows, count(brokers["fenced"]),
        count(brokers["in_controlled_shutdown"]), partitions.num_rows, count(flags["offline"]),
        count(flags["under_replicated"]), count(flags["under_min_isr"]),
        count(pc.greater(pc.fill_null(pc.list_value_length(partitions["elr"]), 0), 0)), view.provenance.epoch,
        int(levels.get("metadata.version") or 0),
    )


class HealthCollector(Collector):
    def __init__(self, clusters: Clusters, unavailable: tuple[type[Exception], ...] = ()) -> None:
        """`unavailable`: the errors, besides the lake's, of a cluster not readable now (no series this time)."""
        self.clusters = clusters
        self.unavailable: tuple[type[Exception], ...] = (LakeError, *unavailable)
        self._cache: dict[str, Health] = {}  # per cluster, the health at its last published offset

    def collect(self) -> Iterator[Metric]:
        families = {f.name: GaugeMetricFamily(f"kraftlake_{f.name}", f.metadata["help"], labels=["cluster"])
                    for f in fields(Health)}
        for member in self.clusters.members():
            try:
                health = self._health(member.name, member.explorer)
            except self.unavailable:  # nothing published yet, or not readable now: no series this time
                continue
            if health is not None:
                for name, value in asdict(health).items():
                    families[name].add_metric([member.name], value)
        yield from families.values()

    def _health(self, name: str, explorer: Reads) -> Health | None:
        offset = explorer.reader.last_published()
        if offset < 0:
            return None
        cached = self._cache.get(name)
        if cached is None or cached.image_offset != offset:
            cached = self._cache[name] = health_of(explorer.image(offset))
        return cached
