"""Warehouse commands: `kraftlake ingest`, `kraftlake image`, `kraftlake changes`, `kraftlake maintain`.

`image --json` prints the canonical image form of `kraftlake replay --json`, so the two can be diffed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kraftlake.cli.config import add_warehouse_arguments, resolve_warehouse
from kraftlake.cli.errors import UserFacingError
from kraftlake.settings.flags import add_ingest_arguments


def register(subparsers: Any) -> None:
    ingest = subparsers.add_parser("ingest", help="build a warehouse from a __cluster_metadata-0 directory")
    add_ingest_arguments(ingest)  # `spark-submit jobs/ingest.py` takes the same
    ingest.set_defaults(handler=run_ingest)

    image = subparsers.add_parser("image", help="the metadata image at an offset or a time, from a warehouse")
    add_warehouse_arguments(image)
    at = image.add_mutually_exclusive_group(required=True)
    at.add_argument("--at-offset", metavar="N")
    at.add_argument("--at-time", metavar="T", help="epoch milliseconds or an ISO-8601 time (UTC if no zone)")
    image.add_argument("--table", help="print this table's rows as JSON lines")
    image.add_argument("--json", action="store_true", help="print the canonical image JSON")
    image.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    image.set_defaults(handler=run_image)

    changes = subparsers.add_parser("changes", help="what changed between two offsets or times, per table")
    add_warehouse_arguments(changes)
    start = changes.add_mutually_exclusive_group(required=True)
    start.add_argument("--from", dest="from_offset", metavar="A", help="an offset (-1: from the start)")
    start.add_argument("--from-time", metavar="T", help="epoch milliseconds or an ISO-8601 time (UTC if no zone)")
    end = changes.add_mutually_exclusive_group(required=True)
    end.add_argument("--to", dest="to_offset", metavar="B")
    end.add_argument("--to-time", metavar="T")
    changes.add_argument("--table", help="only this table")
    changes.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    changes.set_defaults(handler=run_changes)

    maintain = subparsers.add_parser("maintain",
                                     help="redact secrets an older kraftlake kept; compact, checkpoint, vacuum")
    add_warehouse_arguments(maintain)
    maintain.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    maintain.add_argument("--retention-hours", type=int, metavar="H",
                          help="vacuum files removed more than H hours ago (default: 1; lower "
                               "only when no read runs that long)")
    maintain.set_defaults(handler=run_maintain)


def open_warehouse(args: argparse.Namespace) -> Any:
    """The warehouse the flags and the config name."""
    from kraftlake.lake.warehouse import Warehouse

    location = resolve_warehouse(args.warehouse, args.storage_option, getattr(args, "config", None))
    return Warehouse(location.uri, location.storage_options)


def open_reader(args: argparse.Namespace) -> Any:
    """The reader of the warehouse the flags and the config name."""
    from kraftlake.lake.reader import WarehouseReader

    return WarehouseReader(open_warehouse(args))


@contextmanager
def lake_errors(uri: str) -> Iterator[None]:
    """The lake's own errors (each names the warehouse) and the store's, as one line and exit code 2."""
    from kraftlake.lake.errors import LakeError

    try:
        with store_errors(uri):
            yield
    except LakeError as error:
        raise UserFacingError(str(error)) from None


@contextmanager
def store_errors(uri: str) -> Iterator[None]:
    """An unreachable store, a missing bucket, refused credentials, a full or read-only disk: one line naming
    the warehouse URI."""
    from kraftlake.lake.store_errors import store_failure

    try:
        yield
    except Exception as error:
        if (line := store_failure(uri, error)) is None:
            raise
        raise UserFacingError(line) from None


def run_ingest(args: argparse.Namespace) -> int:
    from kraftlake.lake.ingest import IngestError, ingest_directory, terminal_progress

    try:
        warehouse, result = ingest_directory(
            args.directory, lambda: open_warehouse(args), image_every=args.image_every, progress=terminal_progress()
        )
    except IngestError as error:
        raise UserFacingError(str(error)) from None
    print(result.summary(warehouse.uri))
    return 0


def offset_at(reader: Any, offset_flag: str, offset_text: str | None, time_flag: str, time_text: str | None,
              low: int = 0) -> int:
    """The offset one of a pair of flags names (`--at-offset N` or `--at-time T`), by `kraftlake.inputs`' rule;
    a time becomes an offset by the reader's (`WarehouseReader.offset_at`)."""
    from kraftlake import inputs

    if time_text is None:
        assert offset_text is not None, "argparse requires one of the two"
        return inputs.offset(offset_flag, offset_text, low)
    return int(reader.offset_at(inputs.epoch_or_iso_time(time_flag, time_text)))


def run_image(args: argparse.Namespace) -> int:
    """`--json` and `--table` write their text from the Arrow tables in a few buffers (`kraftlake.image_schema`)."""
    from kraftlake.image_schema.canonical import write_chunks
    from kraftlake.image_schema.json_text import row_line_chunks

    reader = open_reader(args)
    with lake_errors(reader.uri):
        offset = offset_at(reader, "--at-offset", args.at_offset, "--at-time", args.at_time)
        image = reader.image_at(offset)
    if args.json:
        write_chunks(image.canonical_chunks(), sys.stdout)
    elif args.table:
        if args.table not in image.tables:
            raise UserFacingError(f"no table {args.table!r}; tables: {', '.join(image.tables)}")
        write_chunks(row_line_chunks(image.tables[args.table]), sys.stdout, end=b"")
    else:
        provenance = image.provenance
        print(f"image at offset {image.asked}: the image published at offset {provenance.offset} (epoch "
              f"{provenance.epoch}, log time {provenance.log_time_ms})")
        for name, table in image.tables.items():
            print(f"  {name:<18} {table.num_rows:>9} rows")
    return 0


def run_changes(args: argparse.Namespace) -> int:
    """One JSON line per changed row: inserts and deletes with the row, updates with `before` → `after`
    (written from the Arrow columns, `WarehouseReader.change_lines`)."""
    from kraftlake.image_schema.canonical import write_chunks
    from kraftlake.image_schema.json_text import buffer_of
    from kraftlake.lake.history import gap_note

    reader = open_reader(args)
    with lake_errors(reader.uri):
        start = offset_at(reader, "--from", args.from_offset, "--from-time", args.from_time, low=-1)
        end = offset_at(reader, "--to", args.to_offset, "--to-time", args.to_time, low=-1)
        if end < start:
            raise UserFacingError(f"the end (offset {end}) is before the start (offset {start})")
        changes = reader.changes(start, end)
        for gap in reader.gaps():
            if start < gap.snapshot_end_offset - 1 <= end:
                print(f"kraftlake changes: {gap_note(gap)} (changes at offset {gap.snapshot_end_offset - 1})",
                      file=sys.stderr)
        for name, table in changes.items():
            if (args.table and name != args.table) or not table.num_rows:
                continue
            write_chunks([buffer_of(reader.change_lines(name, table))], sys.stdout, end=b"")
    return 0


def run_maintain(args: argparse.Namespace) -> int:
    from kraftlake.lake.errors import not_a_warehouse
    from kraftlake.lake.maintenance import TableReport, maintain
    from kraftlake.lake.secrets import scrub

    warehouse = open_warehouse(args)
    if not warehouse.exists():
        raise UserFacingError(str(not_a_warehouse(warehouse.uri)))

    def show(report: TableReport) -> None:
        before, after = report.files_before, report.files_after
        print(f"{report.table:<28} files {before:>5} -> {after:<5} vacuumed {report.vacuumed}")

    with store_errors(warehouse.uri):
        for scrubbed in scrub(warehouse):
            configs = ", ".join(f"{kind} {name}" for kind, name in scrubbed.configs)
            print(f"{scrubbed.table}: {scrubbed.rows} secret value(s) redacted ({configs}); the files and log "
                  "entries that held them deleted")
        maintain(warehouse, retention_hours=args.retention_hours, progress=show)
    return 0
