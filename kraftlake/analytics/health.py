"""Which partitions of an image are offline, under-replicated or under min ISR: one rule for every reader of an
image's health (the explorer's pages, the health metrics, the change alerts), over the image's own rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MIN_ISR = "min.insync.replicas"


def partition_flags(partitions: pa.Table, configs: pa.Table) -> pa.Table:
    """Per partition row: under_replicated, under_min_isr, offline (min.insync.replicas: the topic's, else the
    cluster default, else 1, as the summaries count it)."""
    isr = pc.fill_null(pc.list_value_length(partitions["isr"]), 0).to_numpy(zero_copy_only=False)
    replicas = pc.fill_null(pc.list_value_length(partitions["replicas"]), 0).to_numpy(zero_copy_only=False)
    leader = pc.fill_null(partitions["leader"], -1).to_numpy(zero_copy_only=False)
    levels = {(r["resource_type"], r["resource_name"]): r["value"] for r in
              configs.filter(pc.equal(configs["name"], MIN_ISR)).to_pylist()}
    cluster = _positive(levels.get(("broker", "")), 1)
    topic_levels = {name: _positive(value, cluster) for (kind, name), value in levels.items() if kind == "topic"}
    names = partitions["topic_name"]
    if topic_levels:
        unique = pc.unique(names)
        per_name = pa.array([topic_levels.get(n, cluster) for n in unique.to_pylist()], pa.int64())
        minimum = per_name.take(pc.index_in(names, unique)).to_numpy(zero_copy_only=False)
    else:
        minimum = np.full(partitions.num_rows, cluster)
    return pa.table({"under_replicated": isr < replicas, "under_min_isr": isr < minimum, "offline": leader < 0})


def _positive(text: str | None, default: int) -> int:
    """A config's level as Kafka reads it; a value that is not a positive integer falls back to `default`."""
    try:
        value = int(text) if text is not None else -1
    except ValueError:
        return default
    return value if value > 0 else default
