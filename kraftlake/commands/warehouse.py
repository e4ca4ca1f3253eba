"""Warehouse commands: `kraftlake ingest`, `kraftlake image`, `kraftlake changes`, `kraftlake maintain`.

`image --json` prints the canonical image form of `kraftlake replay --json`, so the two can be diffed.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kraftlake.errors import UserFacingError
from records.errors import RecordFormatError
from replay.errors import ReplayError

DEFAULT_WAREHOUSE = "warehouse"


def register(subparsers: Any) -> None:
    ingest = subparsers.add_parser("ingest", help="build a warehouse from a __cluster_metadata-0 directory")
    ingest.add_argument("directory", type=Path, help="a __cluster_metadata-0 directory or the log dir holding it")
    ingest.add_argument("--warehouse", default=DEFAULT_WAREHOUSE, help="a local path or an object-store URI")
    ingest.add_argument("--image-every", type=int, default=1000, metavar="OFFSETS",
                        help="publish an image every this many offsets (every offset stays exact)")
    ingest.set_defaults(handler=run_ingest)

    image = subparsers.add_parser("image", help="the metadata image at an offset or a time, from a warehouse")
    image.add_argument("--warehouse", default=DEFAULT_WAREHOUSE, help="a local path or an object-store URI")
    at = image.add_mutually_exclusive_group(required=True)
    at.add_argument("--at-offset", type=int, metavar="N")
    at.add_argument("--at-time", metavar="T", help="epoch milliseconds or an ISO-8601 time (UTC if no zone)")
    image.add_argument("--table", help="print this table's rows as JSON lines")
    image.add_argument("--json", action="store_true", help="print the canonical image JSON")
    image.set_defaults(handler=run_image)

    changes = subparsers.add_parser("changes", help="what changed between two offsets, per table")
    changes.add_argument("--warehouse", default=DEFAULT_WAREHOUSE, help="a local path or an object-store URI")
    changes.add_argument("--from", dest="from_offset", type=int, required=True, metavar="A")
    changes.add_argument("--to", dest="to_offset", type=int, required=True, metavar="B")
    changes.add_argument("--table", help="only this table")
    changes.set_defaults(handler=run_changes)

    maintain = subparsers.add_parser("maintain", help="compact, checkpoint and vacuum every table of a warehouse")
    maintain.add_argument("--warehouse", default=DEFAULT_WAREHOUSE, help="a local path or an object-store URI")
    maintain.add_argument("--retention-hours", type=int, metavar="H",
                          help="vacuum files removed more than H hours ago (default: the tables' 24 h; lower "
                               "only when no read runs that long)")
    maintain.set_defaults(handler=run_maintain)


def run_ingest(args: argparse.Namespace) -> int:
    from lake.ingest import ingest, terminal_progress
    from lake.warehouse import Warehouse

    if not args.directory.is_dir():
        raise UserFacingError(f"{args.directory}: not a directory")
    try:
        result = ingest(
            args.directory, Warehouse(args.warehouse), image_every=args.image_every, progress=terminal_progress()
        )
    except (RecordFormatError, ReplayError) as error:
        raise UserFacingError(f"{error} (nothing past the last good image was published; fix and rerun)") from None
    print(
        f"ingested offsets {result.first_offset}..{result.last_offset} into {args.warehouse}: "
        f"{result.images_published} images published"
    )
    return 0


def parse_time(text: str) -> int:
    """Epoch milliseconds from digits or ISO-8601 text."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UserFacingError(f"--at-time {text!r}: not epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def run_image(args: argparse.Namespace) -> int:
    from lake.time_travel import TimeTravelError, image_at_offset, image_at_time
    from lake.warehouse import Warehouse

    warehouse = Warehouse(args.warehouse)
    try:
        if args.at_offset is not None:
            image = image_at_offset(warehouse, args.at_offset)
        else:
            image = image_at_time(warehouse, parse_time(args.at_time))
    except TimeTravelError as error:
        raise UserFacingError(str(error)) from None
    if args.json:
        print(image.canonical_json())
    elif args.table:
        if args.table not in image.tables:
            raise UserFacingError(f"no table {args.table!r}; tables: {', '.join(image.tables)}")
        for row in image.tables[args.table].to_pylist():
            print(json.dumps(row, sort_keys=True))
    else:
        provenance = image.provenance
        print(f"image at offset {provenance.offset} (epoch {provenance.epoch}, log time {provenance.log_time_ms})")
        for name, table in image.tables.items():
            print(f"  {name:<18} {table.num_rows:>9} rows")
    return 0


def run_changes(args: argparse.Namespace) -> int:
    from lake.time_travel import TimeTravelError, changes_between
    from lake.warehouse import Warehouse

    if args.to_offset < args.from_offset:
        raise UserFacingError("--to must not be before --from")
    try:
        changes = changes_between(Warehouse(args.warehouse), args.from_offset, args.to_offset)
    except TimeTravelError as error:
        raise UserFacingError(str(error)) from None
    for name, table in changes.items():
        if args.table and name != args.table:
            continue
        for row in table.to_pylist():
            change = "delete" if row.pop("deleted") else "upsert"
            offset = row.pop("from_offset")
            values = {key: value for key, value in row.items() if value is not None}
            print(json.dumps({"table": name, "offset": offset, "change": change, "row": values}, sort_keys=True))
    return 0


def run_maintain(args: argparse.Namespace) -> int:
    from lake.maintenance import TableReport, maintain
    from lake.warehouse import Warehouse

    warehouse = Warehouse(args.warehouse)
    if not warehouse.exists():
        raise UserFacingError(f"{warehouse.uri} is not a kraftlake warehouse (no images table)")

    def show(report: TableReport) -> None:
        before, after = report.files_before, report.files_after
        print(f"{report.table:<28} files {before:>5} -> {after:<5} vacuumed {report.vacuumed}")

    maintain(warehouse, retention_hours=args.retention_hours, progress=show)
    return 0
