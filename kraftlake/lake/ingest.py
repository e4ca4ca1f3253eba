"""Ingest a real cluster's metadata directory (`__cluster_metadata-0`) into a warehouse.

History starts at the earliest point the files hold: offset 0 when the log is whole, else the earliest
snapshot the log continues from. Every offset stays exact through the history tables whatever the images.
By default a log appended more than a minute ago is a backlog and takes the pipeline's catch-up path: images
at geometric steps of the history written (and at the end) instead of every `DEFAULT_IMAGE_EVERY` offsets,
as each image of a bootstrap rewrites most of the current tables (1M partitions: 512 of ~1,100 images in 11
minutes and 8.2 GB on disk). With `image_every` set, an image is
published every `image_every` offsets exactly (as short triggers of the streaming job do) and at the end.
Replay is sequential by nature (offset order), so the work happens in this one process: Spark is not needed
to write, only to query. Rerunning after a crash (or on a longer copy of the same log) completes the warehouse
without duplicating anything.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kraftlake.lake.errors import LakeError
from kraftlake.lake.gc_pause import paused_collector
from kraftlake.lake.maintenance import MaintenancePolicy
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.source import directory_source
from kraftlake.lake.store_errors import store_failure
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.errors import NotAMetadataLogError, RecordFormatError
from kraftlake.records.files import LogReader, metadata_log_dir, read_snapshot
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.log_replay import history_sources

Progress = Callable[[int, int], None]  # (bytes done, bytes in all)
DEFAULT_IMAGE_EVERY = 1000  # offsets between commits when `image_every` is not set (images wait while catching up)


class IngestError(Exception):
    """An ingest that cannot go on, in one line: the directory, file and offset, or the warehouse; nothing past
    the last good image was published, and a rerun goes on from there."""


@dataclass(frozen=True)
class IngestResult:
    first_offset: int
    last_offset: int
    images_published: int

    def summary(self, uri: str) -> str:
        """The line `kraftlake ingest` and `spark-submit jobs/ingest.py` end with."""
        return (f"ingested offsets {self.first_offset}..{self.last_offset} into {uri}: "
                f"{self.images_published} images published")


def ingest_directory(
    directory: Path, open_warehouse: Callable[[], Warehouse], *, image_every: int | None = None,
    progress: Progress | None = None,
) -> tuple[Warehouse, IngestResult]:
    """`ingest` as `kraftlake ingest` and `spark-submit jobs/ingest.py` run it: the directory checked before
    the warehouse is opened (a wrong path, or files with no history to start from, such as a node's bootstrap
    checkpoint alone, leave nothing behind), every expected failure an `IngestError`."""
    try:
        history_sources(directory)
    except (NotAMetadataLogError, ReplayError) as error:
        raise IngestError(str(error)) from None
    warehouse = open_warehouse()
    try:
        return warehouse, ingest(directory, warehouse, image_every=image_every, progress=progress)
    except (RecordFormatError, ReplayError) as error:
        raise IngestError(f"{error} (nothing past the last good image was published; fix and rerun)") from None
    except LakeError as error:
        raise IngestError(str(error)) from None
    except Exception as error:
        if (line := store_failure(warehouse.uri, error)) is None:
            raise
        raise IngestError(line) from None


def ingest(
    directory: Path,
    warehouse: Warehouse,
    *,
    image_every: int | None = None,
    progress: Progress | None = None,
    policy: MaintenancePolicy | None = None,
) -> IngestResult:
    """Publish an image every `image_every` offsets (None: catch up, see above) and at the end. The warehouse
    must hold this directory's cluster, or nothing yet (`kraftlake.lake.source`)."""
    source = directory_source(metadata_log_dir(directory).path)
    pipeline = MetadataPipeline(warehouse, coalesce_backlog=image_every is None, policy=policy, source=source)
    with paused_collector():
        return _ingest(directory, pipeline, image_every or DEFAULT_IMAGE_EVERY, progress)


def _ingest(directory: Path, pipeline: MetadataPipeline, image_every: int, progress: Progress | None) -> IngestResult:
    sources = history_sources(directory)
    total = sum(source.path.stat().st_size for source in sources)
    done = 0
    reader = LogReader()  # one reader across segments: offsets and epochs checked from one to the next
    published = 0
    first_offset = None
    for source in sources:
        if source.snapshot is not None:
            batches = read_snapshot(source.path, source.snapshot)
            snapshot = pipeline.load_snapshot(batches, source.snapshot, str(source.path))
            published += snapshot is not None
            first_offset = source.snapshot.end_offset - 1 if first_offset is None else first_offset
        else:
            last_commit = pipeline.loaded_offset
            for batch in reader.batches(source.path):
                if pipeline.load(batch, str(source.path)) and first_offset is None:
                    first_offset = batch.base_offset
                if pipeline.loaded_offset - last_commit >= image_every:
                    published += pipeline.commit() is not None
                    last_commit = pipeline.loaded_offset
                    if progress is not None:
                        progress(done + batch.position + batch.size_in_bytes, total)
        done += source.path.stat().st_size
        if progress is not None:
            progress(done, total)
    published += pipeline.commit() is not None
    published += pipeline.flush() is not None  # an image held while catching up
    return IngestResult(-1 if first_offset is None else first_offset, pipeline.loaded_offset, published)


def terminal_progress(stream=sys.stderr) -> Progress:
    """A one-line progress bar on a terminal; on a pipe or a log, silence (the result line says it all)."""

    def show(done: int, total: int) -> None:
        if not stream.isatty():
            return
        fraction = done / total if total else 1.0
        filled = int(fraction * 30)
        stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {fraction:6.1%} {done / 1e6:.1f}/{total / 1e6:.1f} MB")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return show
