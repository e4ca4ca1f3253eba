"""`kraftlake alert`: sends the changes an alerts file selects, from a warehouse's published images, to
Alertmanager or a webhook, each once (`kraftlake.alerts`; this module only parses and starts it). Its own
command, beside the writer rather than inside it: it only reads the warehouse, so a receiver that is down never
slows the job, and one warehouse can have several alerts files (each keeps its own state)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kraftlake.cli.commands.warehouse import lake_errors, open_reader
from kraftlake.cli.config import add_warehouse_arguments
from kraftlake.cli.errors import UserFacingError


def register(subparsers: Any) -> None:
    alert = subparsers.add_parser("alert", help="send the changes an alerts file selects to Alertmanager or a "
                                                "webhook, each once, as the warehouse publishes them",
                                  epilog="The alerts file: docs/operating.md, Change alerts. What was sent is kept "
                                         "in WAREHOUSE/_alerts/<name>.json: a restart resumes there.")
    add_warehouse_arguments(alert)
    alert.add_argument("--alerts", type=Path, required=True, metavar="ALERTS_TOML", help="the alerts file")
    alert.add_argument("--explorer-url", metavar="URL",
                       help="the explorer's base URL for the links at each change (default: the file's explorer_url)")
    alert.add_argument("--from-offset", type=int, metavar="N",
                       help="first run only: send the changes after offset N (-1: the whole history; default: "
                            "from the last published image, only what happens from now on)")
    alert.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    alert.set_defaults(handler=run_alert)


def run_alert(args: argparse.Namespace) -> int:
    from kraftlake.alerts.errors import AlertsFileError
    from kraftlake.alerts.rules import load
    from kraftlake.alerts.runner import AlertJob
    from kraftlake.alerts.senders import receivers
    from kraftlake.stopping import stop_on_signals

    stop = stop_on_signals()
    try:
        files = load(args.alerts, args.explorer_url)
    except AlertsFileError as error:
        raise UserFacingError(str(error)) from None
    reader = open_reader(args)

    def log(line: str) -> None:
        print(f"alert {files.name} ({files.cluster}): {line}", file=sys.stderr, flush=True)

    job = AlertJob(reader, files, receivers(files), log)
    with lake_errors(reader.uri):
        job.start(args.from_offset)
    log(f"{len(files.rules)} rule(s) over {reader.uri}, sending to {', '.join(r.name for r in job.receivers)}; "
        f"changes after offset {job.state.matched}")
    job.run(stop)
    waiting = ", ".join(f"{count} for {name}" for name, count in job.waiting().items())
    log(f"stopped: matched through offset {job.state.matched}" + (f"; waiting: {waiting}" if waiting else ""))
    return 0
