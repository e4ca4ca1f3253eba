"""`kraftlake history`: every version of one row, as users name it (a broker id, orders-3, topic:orders)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kraftlake.cli.commands.warehouse import lake_errors, open_reader
from kraftlake.cli.config import add_warehouse_arguments
from kraftlake.lake.history import gap_note

KEY_FORMS = (
    "brokers: 1 · partitions: orders-3 · topics: orders · configs: topic:orders[:retention.ms] or broker:[:name] "
    "(cluster default) · client_quotas: user=alice · scram_credentials: alice[:SCRAM-SHA-256] · others: the key"
)


def register(subparsers: Any) -> None:
    history = subparsers.add_parser("history", help="every version of one row, in offset order",
                                    epilog=f"keys: {KEY_FORMS}")
    add_warehouse_arguments(history)
    history.add_argument("--table", required=True, help="a sub-image table: brokers, partitions, topics, configs, …")
    history.add_argument("--key", required=True, help="the row as users name it (see below)")
    history.add_argument("--from", dest="from_", metavar="OFFSET|TIME", help="only versions after this")
    history.add_argument("--to", metavar="OFFSET|TIME", help="only versions up to this")
    history.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    history.set_defaults(handler=run_history)


def offset_or_time(reader: Any, flag: str, text: str | None) -> int | None:
    """Digits are an offset; anything else is an ISO-8601 time, turned into an offset by the reader's one
    rule (`WarehouseReader.offset_at`); both by `kraftlake.inputs`' rule."""
    from kraftlake import inputs

    if text is None:
        return None
    found = inputs.moment(flag, text, low=-1)
    return found.value if found.is_offset else int(reader.offset_at(found.value))


def run_history(args: argparse.Namespace) -> int:
    from kraftlake.lake.history import iso_time

    reader = open_reader(args)
    with lake_errors(reader.uri):
        window = offset_or_time(reader, "--from", args.from_), offset_or_time(reader, "--to", args.to)
        versions = reader.history(args.table, args.key, *window)
    for version in versions:
        if args.json:
            print(json.dumps(version.as_json(), sort_keys=True))
        else:
            key = ",".join(str(part) for part in version.key.values())
            print(f"{version.offset:>10}  {iso_time(version.time_ms):<29}  {version.change:<6}  {key}")
            if version.gap is not None:
                print(f"{'':>12}(across a gap: {gap_note(version.gap)})")
            for column in [*version.after, *(c for c in version.before if c not in version.after)]:
                if version.change == "update":
                    print(f"{'':>12}{column}: {_text(version.before[column])} → {_text(version.after[column])}")
                else:
                    print(f"{'':>12}{column}: {_text((version.after or version.before).get(column))}")
    if not versions and not args.json:
        print(f"no version of {args.table} {args.key!r} in that range")
    return 0


def _text(value: Any) -> str:
    return "∅" if value is None else json.dumps(value, sort_keys=True) if isinstance(value, list | dict) else str(value)
