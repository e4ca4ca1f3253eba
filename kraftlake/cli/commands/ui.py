"""`kraftlake ui`: the history explorer, a read-only web app and HTTP API over a warehouse, or over every
cluster of a fleet file (`kraftlake.explorer`; this module only parses and starts it)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from kraftlake.cli.commands.warehouse import lake_errors, open_reader
from kraftlake.cli.config import add_warehouse_arguments, resolve_warehouse
from kraftlake.cli.errors import UserFacingError


def register(subparsers: Any) -> None:
    ui = subparsers.add_parser("ui", help="the history explorer: a read-only web app and HTTP API over a warehouse "
                                          "or a fleet",
                               epilog="Every cluster of a fleet file: kraftlake ui --fleet fleet.toml (its health on "
                                      "/fleet, each cluster at /clusters/<name>).\n\nBinds 127.0.0.1 by default. "
                                      "Another --host needs --token (or $KRAFTLAKE_UI_TOKEN); the URL printed "
                                      "carries it once, as a cookie.")
    add_warehouse_arguments(ui)
    ui.add_argument("--fleet", type=Path, metavar="FLEET_TOML",
                    help="instead of --warehouse: every cluster of a fleet file, each from ROOT/<cluster> (ROOT: the "
                         "file's warehouse_root, else [materialize] warehouse) at /clusters/<name>, all of them on "
                         "/fleet; the file is read again when it changes")
    ui.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    ui.add_argument("--port", type=int, default=0, help="port (default: a free one, printed)")
    ui.add_argument("--token", help="access token every request must carry (default: $KRAFTLAKE_UI_TOKEN)")
    ui.add_argument("--name", help="the cluster's name in URLs (default: default; a fleet's names are its file's)")
    ui.add_argument("--cache-mb", type=int, default=512,
                    help="memory for cached images (default 512; a fleet's clusters share it)")
    ui.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    ui.add_argument("--metrics-address", metavar="HOST:PORT",
                    help="serve Prometheus metrics (request latency, each cluster's health) at "
                         "http://HOST:PORT/metrics (a port alone: on 127.0.0.1; default: off)")
    ui.set_defaults(handler=run_ui)


def run_ui(args: argparse.Namespace) -> int:
    from starlette.middleware import Middleware

    from kraftlake.explorer.errors import ExplorerError
    from kraftlake.explorer.server import TOKEN_ENV, ServeOptions, serve
    from kraftlake.metrics.endpoint import metrics_served
    from kraftlake.metrics.health import HealthCollector
    from kraftlake.metrics.requests import RequestLatency, request_histogram
    from kraftlake.stopping import stop_on_signals

    token = args.token or os.environ.get(TOKEN_ENV) or None
    options = ServeOptions(args.host, args.port, token)
    clusters = fleet_clusters(args) if args.fleet else one_cluster(args)
    stop = stop_on_signals()  # Ctrl-C and SIGTERM stop the server: exit 0, one line
    latency = request_histogram()
    try:
        # bound before the URL is announced: an address in use is the only line
        with metrics_served(args.metrics_address, [latency, HealthCollector(clusters, (ExplorerError,))]) as metrics:
            timing = [] if metrics is None else [Middleware(RequestLatency, histogram=latency)]
            notes = [] if metrics is None else [f"kraftlake ui: metrics at {metrics.url}"]
            serve(clusters, options, stop, announce=lambda line: print(line, flush=True), middleware=timing,
                  notes=notes)
    except ExplorerError as error:
        raise UserFacingError(str(error)) from None
    print("kraftlake ui: stopped", flush=True)
    return 0


def one_cluster(args: argparse.Namespace) -> Any:
    from kraftlake.explorer.clusters import OneCluster
    from kraftlake.explorer.service import Explorer

    reader = open_reader(args)
    with lake_errors(reader.uri):
        reader.published_range()  # not a warehouse, or nothing published yet: one line now, not per request
    return OneCluster(Explorer(reader, args.name or "default", args.cache_mb << 20))


def fleet_clusters(args: argparse.Namespace) -> Any:
    """Every cluster of the fleet file; one without a warehouse yet is served as "no history yet"."""
    from kraftlake.explorer.clusters import FleetClusters

    if args.warehouse or args.name:
        raise UserFacingError("--fleet takes each cluster's warehouse and name from its file: drop "
                              f"{'--warehouse' if args.warehouse else '--name'}")
    default = resolve_warehouse(None, args.storage_option, args.config)
    return FleetClusters(args.fleet, default.uri, default.storage_options, args.cache_mb << 20)
