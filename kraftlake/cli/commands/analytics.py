"""`kraftlake sql`, `kraftlake summary NAME`, `kraftlake report`: Spark SQL over a warehouse."""

from __future__ import annotations

import argparse
import json
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from kraftlake.cli.commands.warehouse import lake_errors, offset_at, open_reader
from kraftlake.cli.config import add_warehouse_arguments
from kraftlake.cli.errors import UserFacingError


def register(subparsers: Any) -> None:
    from kraftlake.analytics.summaries import SUMMARIES

    sql = subparsers.add_parser("sql", help="Spark SQL over every table of a warehouse (and the summary views)")
    add_warehouse_arguments(sql)
    at = sql.add_mutually_exclusive_group()
    at.add_argument("--at-offset", metavar="N", help="sub-image tables as of this offset")
    at.add_argument("--at-time", metavar="T", help="sub-image tables as of this time (epoch ms or ISO-8601)")
    sql.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    sql.add_argument("--fleet", type=Path, metavar="FLEET_TOML",
                     help="every cluster of a fleet file as fleet_<table> views with `cluster` and `labels` "
                          "(--warehouse is ROOT; --at-time the same moment on every cluster), e.g. kraftlake sql "
                          "--fleet fleet.toml \"SELECT DISTINCT cluster FROM fleet_offline_partitions WHERE "
                          "offline > 0\"")
    sql.add_argument("query")
    sql.set_defaults(handler=run_sql)

    summary = subparsers.add_parser("summary", help="one named summary (see the list below)", epilog="; ".join(
        f"{name}: {s.description}" for name, s in SUMMARIES.items() if not s.description.startswith("helper")))
    summary.add_argument("name", choices=[n for n, s in SUMMARIES.items() if not s.description.startswith("helper")])
    add_warehouse_arguments(summary)
    summary.add_argument("--json", action="store_true")
    summary.set_defaults(handler=run_summary)

    report = subparsers.add_parser("report", help="one self-contained HTML page of a warehouse's history")
    add_warehouse_arguments(report)
    report.add_argument("--out", type=Path, default=Path("report.html"))
    report.add_argument("--from", dest="from_", metavar="OFFSET|TIME")
    report.add_argument("--to", metavar="OFFSET|TIME")
    report.set_defaults(handler=run_report)


def _session_with_views(
    args: argparse.Namespace, reader: Any, at_offset: str | None = None, at_time: str | None = None
) -> Any:
    """A Spark session with the views of the image at `at_offset` or `at_time` (the reader's rule; None:
    the last published image)."""
    from kraftlake.analytics.views import register_views
    from kraftlake.jobs.materialize import local_spark

    with lake_errors(reader.uri):
        offset = None if at_offset is None and at_time is None else \
            offset_at(reader, "--at-offset", at_offset, "--at-time", at_time)
        if offset is not None:
            reader.answer(offset)  # an offset no image answers is refused before Spark starts
        spark = local_spark("kraftlake-sql", short_lived=True)
        spark.conf.set("spark.sql.session.timeZone", "UTC")  # times print as the ISO-8601 UTC the CLI takes
        register_views(spark, reader, offset)
    return spark


def _print(frame: Any, as_json: bool) -> None:
    if as_json:
        for row in frame.toLocalIterator():
            print(json.dumps(row.asDict(recursive=True), default=_json_value, sort_keys=True))
    else:
        frame.show(n=1000, truncate=60)


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def run_sql(args: argparse.Namespace) -> int:
    from pyspark.errors import AnalysisException, ParseException

    if args.fleet is not None:
        from kraftlake.cli.fleet import fleet_session

        spark = fleet_session(args)
    else:
        spark = _session_with_views(args, open_reader(args), args.at_offset, args.at_time)
    try:
        frame = spark.sql(args.query)
    except (AnalysisException, ParseException) as error:
        raise UserFacingError(str(error).splitlines()[0]) from None
    _print(frame, args.json)
    return 0


def run_summary(args: argparse.Namespace) -> int:
    frame = _session_with_views(args, open_reader(args)).table(args.name)
    order = next((c for c in ("offset", "start_offset") if c in frame.columns), frame.columns[0])
    _print(frame.orderBy(order, *frame.columns[:1]), args.json)
    return 0


def run_report(args: argparse.Namespace) -> int:
    from kraftlake.analytics.report import write_report
    from kraftlake.cli.commands.history import offset_or_time

    reader = open_reader(args)
    with lake_errors(reader.uri):  # the window is checked before Spark starts
        window = offset_or_time(reader, "--from", args.from_), offset_or_time(reader, "--to", args.to)
    spark = _session_with_views(args, reader)
    with lake_errors(reader.uri):
        path = write_report(spark, reader, args.out, *window)
    print(path)
    return 0
