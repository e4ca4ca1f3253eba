"""Ingest a real cluster's metadata directory (`__cluster_metadata-0`) into a warehouse.

    spark-submit jobs/ingest.py DIR --warehouse W      (or: kraftlake ingest DIR --warehouse W)

Replay is sequential by nature (offset order), so the work happens in this one process (`kraftlake.lake.ingest`):
Spark is not needed to write, only to query.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kraftlake.lake.ingest import ingest, terminal_progress
from kraftlake.lake.sink_tables import WriterFencedError
from kraftlake.lake.source import SourceMismatchError
from kraftlake.lake.warehouse import Warehouse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--warehouse", required=True, help="a local path or an object-store URI")
    parser.add_argument("--image-every", type=int,
                        help="publish an image every this many offsets (default: as `kraftlake ingest`)")
    args = parser.parse_args(argv)
    try:
        result = ingest(
            args.directory, Warehouse(args.warehouse), image_every=args.image_every, progress=terminal_progress()
        )
    except (SourceMismatchError, WriterFencedError) as error:
        print(f"ingest: {error}", file=sys.stderr)
        return 2
    print(f"ingested offsets {result.first_offset}..{result.last_offset}: {result.images_published} images published")
    return 0


if __name__ == "__main__":
    sys.exit(main())
