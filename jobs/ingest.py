"""Ingest a real cluster's metadata directory (`__cluster_metadata-0`) into a warehouse.

    spark-submit jobs/ingest.py DIR [--warehouse URI] [--storage-option KEY=VALUE …] [--config FILE]
    (or: kraftlake ingest DIR …, the same flags, settings, output and errors)

Replay is sequential by nature (offset order), so the work happens in this one process
(`kraftlake.lake.ingest`): Spark is not needed to write, only to query.
"""

from __future__ import annotations

import argparse
import sys

from kraftlake.lake.ingest import IngestError, ingest_directory, terminal_progress
from kraftlake.lake.warehouse import Warehouse
from kraftlake.settings import SettingsError, load_kraftlake
from kraftlake.settings.flags import add_ingest_arguments, warehouse_location


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_ingest_arguments(parser)
    args = parser.parse_args(argv)
    try:
        location = warehouse_location(load_kraftlake(args.config), args.warehouse, args.storage_option)
        warehouse, result = ingest_directory(
            args.directory, lambda: Warehouse(location.uri, location.storage_options),
            image_every=args.image_every, progress=terminal_progress(),
        )
    except (SettingsError, IngestError) as error:
        print(f"ingest: {error}", file=sys.stderr)
        return 2
    print(result.summary(warehouse.uri))
    return 0


if __name__ == "__main__":
    sys.exit(main())
