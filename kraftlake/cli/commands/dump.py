"""`kraftlake dump PATH...`: print the records of metadata log segments and snapshots as JSON lines.

The line format follows `kafka-dump-log --cluster-metadata-decoder` (`type`, `version`, `data` in Kafka's
JSON form) plus the batch context a reader needs (offsets, epoch, time, control flag). Output is streamed
batch by batch, so what was printed before a corrupt batch stays printed; secrets are always redacted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from kraftlake.cli.errors import UserFacingError
from kraftlake.records.batch import RecordBatch
from kraftlake.records.errors import RecordFormatError
from kraftlake.records.files import (
    BOOTSTRAP_NAME,
    LogReader,
    check_metadata_path,
    checkpoint_id,
    metadata_log_dir,
    read_snapshot,
    segment_base_offset,
    snapshot_id,
)
from kraftlake.records.json_form import message_to_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dump",
        help="print the records of .log segments and .checkpoint snapshots as JSON lines",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH",
        help="a .log segment, a .checkpoint snapshot, bootstrap.checkpoint, or a directory holding them",
    )
    parser.add_argument(
        "--summary", action="store_true",
        help="print batches, records and offset range per file and record counts per type instead of records",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    files: list[tuple[Path, LogReader]] = []
    out = sys.stdout
    totals: Counter[str] = Counter()
    try:
        for path in args.paths:  # one reader per PATH: the segments found under a directory must follow each other
            reader = LogReader()
            files += [(file, reader) for file in metadata_files(path)]
        for file, reader in files:
            batches = checked_batches(file, reader)
            if args.summary:
                totals += _summarize(file, batches, out)
            else:
                _dump(file, batches, out)
    except RecordFormatError as error:
        out.flush()
        raise UserFacingError(str(error)) from None
    except BrokenPipeError:
        raise
    except OSError as error:
        out.flush()
        raise UserFacingError(f"{error.filename or ''}: {error.strerror or error}") from None
    if args.summary and len(files) > 1:
        _print_counts("all files", totals, out)
    return 0


def metadata_files(path: Path) -> list[Path]:
    """`path` itself if it is a file, else the metadata files under it: per directory, bootstrap.checkpoint,
    then snapshots by end offset, then segments by base offset (the order a replay reads them in)."""
    check_metadata_path(path)
    if not path.is_dir():
        return [path]
    found: list[tuple[Path, tuple[int, int, int], Path]] = []
    for file in path.rglob("*"):
        if not file.is_file():
            continue
        if file.name == BOOTSTRAP_NAME:
            key = (0, 0, 0)
        elif (sid := snapshot_id(file)) is not None:
            key = (1, sid.end_offset, sid.epoch)
        elif (base := segment_base_offset(file)) is not None:
            key = (2, base, 0)
        else:
            continue
        found.append((file.parent, key, file))
    if not found:
        metadata_log_dir(path)  # raises: no segment or snapshot, said as every reader of a directory says it
    return [file for _, _, file in sorted(found)]


def checked_batches(file: Path, reader: LogReader) -> Iterator[RecordBatch]:
    """The batches of `file` with the header checks its kind calls for (snapshot or log)."""
    return read_snapshot(file) if checkpoint_id(file) is not None else reader.batches(file)


def record_lines(file: Path, batch: RecordBatch) -> Iterator[dict[str, Any]]:
    """One JSON-ready object per record of `batch`, secrets redacted."""
    control = batch.is_control
    for record in batch.records:
        yield {
            "file": str(file),
            "offset": record.offset,
            "baseOffset": batch.base_offset,
            "leaderEpoch": batch.partition_leader_epoch,
            "timestamp": batch.base_timestamp,
            "control": control,
            "type": record.message.TYPE_NAME,
            "version": record.version,
            "data": message_to_json(record.message, record.version),
        }


def _dump(file: Path, batches: Iterator[RecordBatch], out: TextIO) -> None:
    for batch in batches:
        out.write("".join(json.dumps(line) + "\n" for line in record_lines(file, batch)))


def _summarize(file: Path, batches: Iterator[RecordBatch], out: TextIO) -> Counter[str]:
    counts: Counter[str] = Counter()
    batch_count = records = 0
    first = last = None
    for batch in batches:
        batch_count += 1
        records += len(batch.records)
        counts.update(record.message.TYPE_NAME for record in batch.records)
        if first is None:
            first = batch.base_offset
        last = batch.last_offset
    offsets = "no offsets" if first is None else f"offsets {first}..{last}"
    out.write(f"{file}: {batch_count} batches, {records} records, {offsets}\n")
    _print_counts(None, counts, out)
    return counts


def _print_counts(title: str | None, counts: Counter[str], out: TextIO) -> None:
    if title:
        out.write(f"{title}: {sum(counts.values())} records\n")
    width = max((len(name) for name in counts), default=0)
    for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        out.write(f"  {name:<{width}}  {count}\n")
