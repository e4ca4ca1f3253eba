"""`kraftlake sql`, `kraftlake summary NAME`, `kraftlake report`: SQL over a warehouse. `sql` and `summary` answer
in-process with DataFusion (`kraftlake.analytics.engine`: no JVM to start) unless `--engine spark`; a query naming
a table by its Delta path (delta.`…`) and the report run on Spark."""

from __future__ import annotations

import argparse
import re
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
    _add_engine(sql)
    sql.add_argument("query")
    sql.set_defaults(handler=run_sql)

    summary = subparsers.add_parser("summary", help="one named summary (see the list below)", epilog="; ".join(
        f"{name}: {s.description}" for name, s in SUMMARIES.items() if not s.description.startswith("helper")))
    summary.add_argument("name", choices=[n for n, s in SUMMARIES.items() if not s.description.startswith("helper")])
    add_warehouse_arguments(summary)
    summary.add_argument("--json", action="store_true")
    _add_engine(summary)
    summary.set_defaults(handler=run_summary)

    report = subparsers.add_parser("report", help="one self-contained HTML page of a warehouse's history")
    add_warehouse_arguments(report)
    report.add_argument("--out", type=Path, default=Path("report.html"))
    report.add_argument("--from", dest="from_", metavar="OFFSET|TIME")
    report.add_argument("--to", metavar="OFFSET|TIME")
    report.set_defaults(handler=run_report)


def _add_engine(parser: Any) -> None:
    parser.add_argument("--engine", choices=ENGINES, default=None,
                        help="datafusion (the default: in-process, no JVM) or spark (a local Spark session, "
                             "Delta's own reader; the default for a query naming a table by its Delta path)")


ENGINES = ("datafusion", "spark")
_DELTA_PATH = re.compile(r"\bdelta\s*\.\s*`", re.IGNORECASE)  # delta.`path`: Spark's Delta reader only


def _engine(args: argparse.Namespace, query: str = "") -> str:
    return args.engine or ("spark" if _DELTA_PATH.search(query) else "datafusion")


def _image_offset(reader: Any, at_offset: str | None, at_time: str | None) -> int | None:
    """The offset of the image asked for (None: the last published one); one no image answers is refused."""
    with lake_errors(reader.uri):
        offset = None if at_offset is None and at_time is None else \
            offset_at(reader, "--at-offset", at_offset, "--at-time", at_time)
        if offset is not None:
            reader.answer(offset)
    return offset


def _session_with_views(reader: Any, offset: int | None = None) -> Any:
    """A Spark session with the views of the image at `offset` (None: the last published image)."""
    from kraftlake.analytics.views import register_views
    from kraftlake.jobs.materialize import local_spark

    with lake_errors(reader.uri):
        spark = local_spark("kraftlake-sql", short_lived=True)
        spark.conf.set("spark.sql.session.timeZone", "UTC")  # times print as the ISO-8601 UTC the CLI takes
        register_views(spark, reader, offset)
    return spark


def _in_process(reader: Any, offset: int | None, query: str) -> Any:
    """A DataFusion session with the views `query` names (and those they read)."""
    from kraftlake.analytics.engine import one_cluster
    from kraftlake.analytics.views import views_used

    with lake_errors(reader.uri):
        return one_cluster(reader, offset, views_used(query))


def _print_spark(frame: Any, as_json: bool) -> None:
    from kraftlake.analytics.printing import SHOWN, WIDTH, json_value

    if as_json:
        import json

        for row in frame.toLocalIterator():
            print(json.dumps(row.asDict(recursive=True), default=json_value, sort_keys=True))
    else:
        frame.show(n=SHOWN, truncate=WIDTH)


def _print_arrow(table: Any, as_json: bool) -> None:
    from kraftlake.analytics.printing import json_lines, show

    if as_json:
        for line in json_lines(table):
            print(line)
    else:
        print(show(table))


def run_sql(args: argparse.Namespace) -> int:
    engine = _engine(args, args.query)
    if args.fleet is not None:
        from kraftlake.cli.fleet import fleet_session

        session = fleet_session(args, engine)
    else:
        reader = open_reader(args)
        offset = _image_offset(reader, args.at_offset, args.at_time)
        session = _session_with_views(reader, offset) if engine == "spark" else _in_process(reader, offset, args.query)
    _answer(session, engine, args.query, args.json)
    return 0


def run_summary(args: argparse.Namespace) -> int:
    engine = _engine(args)
    reader = open_reader(args)
    session = _session_with_views(reader) if engine == "spark" else _in_process(reader, None, args.name)
    columns = session.table(args.name).columns if engine == "spark" else session.table(args.name).schema().names
    order = next((c for c in ("offset", "start_offset") if c in columns), columns[0])
    _answer(session, engine, f"SELECT * FROM {args.name} ORDER BY `{order}`, `{columns[0]}`", args.json)
    return 0


def _answer(session: Any, engine: str, query: str, as_json: bool) -> None:
    if engine == "spark":
        from pyspark.errors import AnalysisException, ParseException

        try:
            frame = session.sql(query)
        except (AnalysisException, ParseException) as error:
            raise UserFacingError(str(error).splitlines()[0]) from None
        _print_spark(frame, as_json)
        return
    from kraftlake.analytics.engine import QueryError, run

    try:
        table = run(session, query)
    except QueryError as error:
        raise UserFacingError(str(error)) from None
    _print_arrow(table, as_json)


def run_report(args: argparse.Namespace) -> int:
    from kraftlake.analytics.report import write_report
    from kraftlake.cli.commands.history import offset_or_time

    reader = open_reader(args)
    with lake_errors(reader.uri):  # the window is checked before Spark starts
        window = offset_or_time(reader, "--from", args.from_), offset_or_time(reader, "--to", args.to)
    spark = _session_with_views(reader)
    with lake_errors(reader.uri):
        path = write_report(spark, reader, args.out, *window)
    print(path)
    return 0
