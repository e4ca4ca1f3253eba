"""The maintenance scheduler: after each commit, what to checkpoint, compact, re-bucket, sweep, prune, reopen.

Costs follow the change, not the warehouse's age. An image checkpoint (every table's full rows) is written
once the history since the last one holds as many rows as that checkpoint did (at least
`checkpoint_min_rows`), so time travel reads one checkpoint plus a bounded stretch of history. A table the
commit wrote is compacted once it holds `compact_above_files` files too many (per bucket, for the current
tables), and a current table whose size left its bucket count's range is re-bucketed in one overwrite; every
`sweep_every_images` images the tables no image wrote meanwhile get their small files merged. A table's
Delta log is pruned every `prune_every_commits` of its commits and its handle reopened every
`reopen_every_commits` (delta-rs's in-memory state of a long-open handle grows with every commit). All the
numbers are the `MaintenancePolicy`'s; the commits are the writer's (`kraftlake.lake.sink`), which it watches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

import pyarrow as pa
from deltalake import write_deltalake

from kraftlake.failpoints import failpoint
from kraftlake.image_schema.tables import TABLES
from kraftlake.lake.errors import lost_race
from kraftlake.lake.maintenance import compact_if_due, prune_log
from kraftlake.lake.sink import DeltaSink
from kraftlake.lake.warehouse import (
    IMAGE_CHECKPOINT_COLUMN,
    IMAGE_CHECKPOINTS,
    IMAGE_CHECKPOINTS_SCHEMA,
    IMAGES,
    all_tables,
    image_checkpoint_table,
    partition_columns,
    with_buckets,
)
from kraftlake.lake.writes import PublishedImage


@dataclass(frozen=True)
class ImageCheckpointState:
    """The last complete image checkpoint: where it is and how big, to pace the next one."""

    offset: int = -1
    history_rows: int = 0
    rows: int = 0


class Maintainer:
    """Keeps the warehouse `sink` writes cheap to write and read; one of the pipeline's publishers, called
    after every commit of the sink (`on_commit`)."""

    def __init__(self, sink: DeltaSink) -> None:
        self.sink = sink
        self.tables = sink.tables
        self.policy = sink.policy
        self._seen: dict[str, int] = {}  # commits per table already looked at
        self._checkpoint: tuple[int, ImageCheckpointState] | None = None  # (the tables' generation, state)
        self._written_since_sweep: set[str] = set()
        self._images_since_sweep = 0

    def on_commit(self, image: PublishedImage | None) -> None:
        """After the sink's commits for `image`: whatever upkeep they made due (retried as the sink's commits
        are when another writer's conflicts)."""
        if not self.sink.claimed:
            return  # the writer wrote nothing yet
        written = self._new_commits()
        self.sink.retrying(lambda: self._maintain_after(image, written))

    def _maintain_after(self, image: PublishedImage | None, written: Mapping[str, range]) -> None:
        if image is not None and image.provenance.offset == self.tables.last_published():
            self._image_checkpoint_if_due(image)  # also on a rerun: a crash may have cut it short
        self._prune_and_reopen({**written, **self._new_commits()})
        self._maintain([*written, IMAGES])
        self._sweep_if_due(written, published=IMAGES in written)

    def _new_commits(self) -> dict[str, range]:
        """The commit numbers each table reached since the last look, in the order the tables were written."""
        new = {name: range(self._seen.get(name, 0) + 1, count + 1) for name, count in self.tables.commits.items()
               if count > self._seen.get(name, 0)}
        self._seen.update((name, numbers.stop - 1) for name, numbers in new.items())
        return new

    def _prune_and_reopen(self, commits: Mapping[str, range]) -> None:
        """Prune a table's log every `prune_every_commits` commits, as delta-rs lists a local one whole on
        every commit (and any one at every Delta checkpoint); reopen its handle every `reopen_every_commits`."""
        for name, numbers in commits.items():
            if any(n % self.policy.reopen_every_commits == 0 for n in numbers):
                self.tables.reopen(name)
            if any(n % self.policy.prune_every_commits == 0 for n in numbers):
                prune_log(self.sink.warehouse, name, self.policy.keep_log_versions)

    def _checkpoint_state(self) -> ImageCheckpointState:
        """The last image checkpoint, read again whenever the tables were."""
        if self._checkpoint is None or self._checkpoint[0] != self.tables.generation:
            last, state = self.tables.written_through(IMAGE_CHECKPOINTS), ImageCheckpointState()
            if last >= 0:
                found = self.tables.table(IMAGE_CHECKPOINTS).to_pyarrow_table(filters=[("offset", "=", last)])
                row = found.to_pylist()[0]
                state = ImageCheckpointState(row["offset"], row["history_rows"], row["rows"])
            self._checkpoint = (self.tables.generation, state)
        return self._checkpoint[1]

    def _image_checkpoint_if_due(self, image: PublishedImage) -> None:
        """Write every table's full rows at this image, then its `checkpoints` row, when the history since
        the last checkpoint is as big as that checkpoint (Kafka's snapshot-after-N-bytes, in rows)."""
        last, history_rows = self._checkpoint_state(), self.sink.history_rows
        if image.image is None or history_rows - last.history_rows < max(self.policy.checkpoint_min_rows, last.rows):
            return
        provenance, rows = image.provenance, 0
        for table in TABLES:
            data = self.tables.image_table(provenance.offset, image.image, table)
            rows += data.num_rows
            name = image_checkpoint_table(table)
            if data.num_rows and self.tables.written_through(name) < provenance.offset:
                offsets = pa.array([provenance.offset] * data.num_rows, pa.int64())
                data = data.append_column(IMAGE_CHECKPOINT_COLUMN, offsets)
                self.sink.append(name, data, provenance.offset, provenance)
        failpoint("sink.before_checkpoint_row")
        state = ImageCheckpointState(provenance.offset, history_rows, rows)
        data = pa.Table.from_pylist([asdict(state)], schema=IMAGE_CHECKPOINTS_SCHEMA)
        self.sink.append(IMAGE_CHECKPOINTS, data, provenance.offset, provenance)
        self._checkpoint = (self.tables.generation, state)

    def _maintain(self, tables: Iterable[str], above: int | None = None) -> None:
        """Re-bucket or compact each of `tables` that is due (`above`: as `compact_if_due`'s)."""
        for name in dict.fromkeys(tables):
            try:
                if (name in TABLES and self._rebucket_if_due(name)) or compact_if_due(
                    self.sink.warehouse, name, self.tables.table(name), self.policy, above
                ):
                    self.tables.reopen(name)  # a rewritten table is reopened: its state starts small again
            except Exception as error:
                if not lost_race(error):
                    raise
                self.tables.reopen(name)  # `kraftlake maintain` got there first: the next image retries

    def _sweep_if_due(self, written: Iterable[str], published: bool) -> None:
        """Every `sweep_every_images` images, merge the small files of each table no image wrote since the
        last sweep. A table that went quiet (the ISR churn is over) would otherwise keep up to
        `compact_above_files` small files for good, and every read of its latest offsets open them all."""
        self._written_since_sweep.update(written)
        self._images_since_sweep += published
        if self._images_since_sweep < self.policy.sweep_every_images:
            return
        self._maintain([name for name in all_tables() if name not in self._written_since_sweep], above=0)
        self._written_since_sweep, self._images_since_sweep = set(), 0

    def _rebucket_if_due(self, name: str) -> bool:
        """Rewrite a current table with the bucket count its size calls for, once its rows per bucket left
        the range that count is for; one overwrite commit, so readers see the old files or the new."""
        buckets, rows = self.tables.bucket_count(name), self.tables.rows(name)
        if buckets is None or rows is None:
            return False
        low, high = self.policy.bucket_range(buckets)
        if low <= rows <= high:
            return False
        wanted = self.tables.set_buckets(name, self.policy.buckets_for(rows))
        if wanted == buckets:
            return False
        table = self.tables.table(name)
        data = with_buckets(table.to_pyarrow_table(), name, wanted)
        write_deltalake(table, data, mode="overwrite", partition_by=partition_columns(name))  # keeps app txns
        return True
