"""`kraftlake replay PATH... [--to-offset N] [--json]`: the metadata image a log describes, at any offset.

PATH is one or more files (a `.checkpoint` and/or `.log`) or a `__cluster_metadata-0` directory (or the
log dir holding it): then the latest snapshot ending at or before N+1 is loaded, then the log.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kraftlake import inputs
from kraftlake.cli.errors import UserFacingError
from kraftlake.records.errors import RecordFormatError
from kraftlake.replay.canonical import provenance_json
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.log_replay import ReplayResult, replay_paths


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("replay", help="replay metadata files into an image", description=__doc__)
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    parser.add_argument("--to-offset", metavar="N", help="the image at offset N (default: the end)")
    parser.add_argument("--json", action="store_true", help="print the canonical image JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        to_offset = None if args.to_offset is None else inputs.offset("--to-offset", args.to_offset)
        result = replay_paths(args.paths, to_offset)
    except (RecordFormatError, ReplayError) as error:
        raise UserFacingError(str(error)) from None
    if args.json:
        from kraftlake.image_schema.canonical import image_chunks, write_chunks

        write_chunks(image_chunks(result.image, indent=2), sys.stdout)
    else:
        print(summary(result))
    return 0


def summary(result: ReplayResult) -> str:
    image = result.image
    provenance = provenance_json(image.provenance)
    lines = [
        f"asked: offset {result.asked}, answered by the image published at offset {image.provenance.offset}",
        "provenance: " + ", ".join(f"{key} {value}" for key, value in provenance.items()),
        f"replayed: {result.batches} log batches, {result.records} records",
        f"transaction: {result.transaction.value}"
        + (" (open: its records are not visible)" if result.transaction.value in ("started", "continued") else ""),
        f"metadata.version: {image.features.metadata_version}",
        f"finalized features: {dict(image.features.finalized) or 'none'}",
        f"brokers: {len(image.cluster.brokers)} "
        f"({sum(1 for b in image.cluster.brokers.values() if b.fenced)} fenced)",
        f"controllers: {len(image.cluster.controllers)}",
        f"topics: {len(image.topics.by_id)}, partitions: {image.topics.partition_count()}",
        f"config resources: {len(image.configs.resources)}",
        f"client quota entities: {len(image.client_quotas.entities)}",
        f"next producer id: {image.producer_ids.next_producer_id}",
        f"acls: {len(image.acls.acls)}",
        f"scram credentials: {len(image.scram.credentials)}",
        f"delegation tokens: {len(image.delegation_tokens.tokens)}",
    ]
    return "\n".join(lines)


