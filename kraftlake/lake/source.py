"""What a warehouse holds: the one source its images come from, recorded at its first write and checked
by every later writer, so two clusters' logs are never mixed into one image.

The `source` table (one row, written once with an app transaction, so two first writers cannot both
record one) names the source: its kind (a log directory, a metadata topic), where it was read, the
cluster id when one is known (`meta.properties` beside a log directory, `--cluster-id` of the streaming
job) and the offset the warehouse's history starts at. A Delta table rather than a marker file: its one
commit is as atomic on an object store (delta-rs's conditional put) as on a disk, any Delta reader shows it,
and maintenance treats it like the rest.

A later writer is refused, before it writes anything, when its cluster id differs from the recorded one,
or when a batch it reads at an offset the warehouse already holds differs from the warehouse's batch there
(its `batches` row: offsets, epoch, append time to the millisecond, record count, size in bytes; header
fields the batch's CRC covers, which the decoder does not keep). That content check runs at the warehouse's
first and last batch, whichever the writer's log covers, which also tells apart two clusters that carry no
cluster id (or the same default one). A longer copy of the same log, another node's replica of the same
cluster (Raft copies batches byte for byte) and a restarted job pass both checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from kraftlake.lake.errors import SourceMismatchError

SOURCE = "source"
SOURCE_SCHEMA = pa.schema([
    ("kind", pa.string()),  # "directory", "topic", or "unnamed" (a library caller that named none)
    ("location", pa.string()),  # the directory, or bootstrap servers / topic
    ("cluster_id", pa.string()),  # null when the source does not say
    ("first_offset", pa.int64()),  # where its history starts (a snapshot's last offset, or 0; -1: not known)
])
META_PROPERTIES = "meta.properties"


@dataclass(frozen=True)
class SourceIdentity:
    """Where a writer's batches come from, as far as it knows."""

    kind: str = "unnamed"
    location: str = ""
    cluster_id: str | None = None

    def describe(self) -> str:
        cluster = f"cluster {self.cluster_id}" if self.cluster_id else "no cluster id"
        return f"{self.kind} {self.location} ({cluster})" if self.location else f"{self.kind} source ({cluster})"

    def row(self, first_offset: int) -> dict[str, Any]:
        return {"kind": self.kind, "location": self.location, "cluster_id": self.cluster_id,
                "first_offset": first_offset}

    @staticmethod
    def from_row(row: Mapping[str, Any]) -> SourceIdentity:
        return SourceIdentity(row["kind"], row["location"], row["cluster_id"])


def directory_source(log_dir: Path) -> SourceIdentity:
    """A `__cluster_metadata-0` directory's source: its cluster id from `meta.properties` in the log
    directory that holds it (Kafka's storage tool writes one there), when it is there."""
    return SourceIdentity("directory", str(log_dir.absolute()), _cluster_id(log_dir.parent / META_PROPERTIES))


def topic_source(bootstrap_servers: str, topic: str, cluster_id: str | None = None,
                 key: str | None = None) -> SourceIdentity:
    """A metadata topic's source; the topic does not say which cluster's log it holds, its operator may. On a
    fleet's shared topic, `key` is the cluster whose messages (keyed by its name) the warehouse holds."""
    where = f"{bootstrap_servers}/{topic}" + (f" key {key}" if key else "")
    return SourceIdentity("topic", where, cluster_id)


def _cluster_id(properties: Path) -> str | None:
    try:
        text = properties.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, separator, value = line.partition("=")
        if separator and key.strip() == "cluster.id" and value.strip():
            return value.strip()
    return None


def check_cluster(uri: str, held: SourceIdentity, writer: SourceIdentity) -> None:
    """Refuse a writer of another cluster than the one the warehouse holds (when both ids are known)."""
    if held.cluster_id and writer.cluster_id and held.cluster_id != writer.cluster_id:
        raise mismatch(uri, held, writer, "another cluster")


def check_batch(uri: str, held: SourceIdentity, writer: SourceIdentity, stored: Mapping[str, Any],
                read: Mapping[str, Any]) -> None:
    """Refuse a writer whose batch over the stored batch's base offset is not that batch (`batches` rows)."""
    if dict(stored) != dict(read):
        what = (f"its batch at offset {read['base_offset']} (epoch {read['epoch']}, appended at "
                f"{read['append_time_ms']}, {read['size_bytes']} bytes) is not the warehouse's batch at offset "
                f"{stored['base_offset']} (epoch {stored['epoch']}, appended at {stored['append_time_ms']}, "
                f"{stored['size_bytes']} bytes): another log")
        raise mismatch(uri, held, writer, what)


def mismatch(uri: str, held: SourceIdentity, writer: SourceIdentity, what: str) -> SourceMismatchError:
    return SourceMismatchError(uri, f"the warehouse holds {held.describe()}; refused {writer.describe()}: {what} "
                                    "(nothing was written; use a new warehouse for another cluster)")


def table_data(identity: SourceIdentity, first_offset: int) -> pa.Table:
    return pa.Table.from_pylist([identity.row(first_offset)], schema=SOURCE_SCHEMA)

