"""The CLI side of `--fleet` (`kraftlake follow --fleet`, `follow --status DIR`): parse, call `kraftlake.fleet`,
map its errors to one line and exit code 2."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from kraftlake.cli.config import resolve_bootstrap
from kraftlake.cli.errors import UserFacingError
from kraftlake.stopping import stop_on_signals


def follow_fleet(args: argparse.Namespace) -> int:
    """Every cluster of the fleet file, until SIGTERM/SIGINT; SIGHUP looks at the file now."""
    from kraftlake.bridge.publisher import PublisherConfig
    from kraftlake.fleet.supervisor import FleetSupervisor, SupervisorConfig
    from kraftlake.metrics.endpoint import metrics_served
    from kraftlake.metrics.follow import FollowCollector
    from kraftlake.settings import load_kraftlake

    if args.bootstrap_controllers or args.topic:
        raise UserFacingError("--fleet takes the controllers and topics from the fleet file: drop "
                              "--bootstrap-controllers and --topic")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(threadName)s] %(message)s")
    kafka = load_kraftlake(args.config).kafka
    bootstrap = resolve_bootstrap(args.bootstrap_servers or kafka.bootstrap_servers or None)
    config = SupervisorConfig(PublisherConfig(bootstrap), status_dir=args.status_file,
                              log_interval_s=args.log_interval)
    supervisor = FleetSupervisor(args.fleet, config, stop_on_signals())

    def _look_now(signum: int, frame: FrameType | None) -> None:
        supervisor.look_now.set()

    signal.signal(signal.SIGHUP, _look_now)
    with metrics_served(args.metrics_address, [FollowCollector(supervisor.statuses)]) as metrics:
        if metrics is not None:
            logging.getLogger(__name__).info("fleet: metrics at %s", metrics.url)
        supervisor.run()  # a fleet file that does not load at start: SettingsError, one line
    for name, follower in supervisor.followers.items():
        print(f"stopped: cluster {name}: {follower.holds()}")
    print(f"stopped: {len(supervisor.followers)} cluster followers")
    return 0


def print_fleet_status(directory: Path) -> int:
    from kraftlake.fleet.status import fleet_status_lines
    from kraftlake.follow.status import StatusError

    try:
        lines = fleet_status_lines(directory, time.time())
    except StatusError as error:
        raise UserFacingError(str(error)) from None
    print("\n".join(lines))
    return 0


def fleet_session(args: argparse.Namespace, engine: str) -> Any:
    """`kraftlake sql --fleet`: a session of `engine` (a Spark session, or a DataFusion one:
    `kraftlake.analytics.engine`) with every cluster's `fleet_*` views (a Spark session also has the fleet's
    catalog, when the file names a shared one); clusters without an image are named on stderr and left out."""
    from kraftlake import inputs
    from kraftlake.analytics.fleet import PREFIX, register_fleet_views
    from kraftlake.analytics.views import views_used
    from kraftlake.cli.config import resolve_warehouse
    from kraftlake.lake.reader import WarehouseReader
    from kraftlake.lake.warehouse import Warehouse
    from kraftlake.settings.fleet import cluster_location, load_fleet

    if args.at_offset is not None:
        raise UserFacingError("--fleet: offsets are per cluster; name a moment with --at-time")
    fleet = load_fleet(args.fleet)
    root = resolve_warehouse(args.warehouse or fleet.settings.warehouse_root, args.storage_option,
                             getattr(args, "config", None))
    readers = {
        name: (WarehouseReader(Warehouse(cluster_location(root.uri, name), dict(root.storage_options))), cluster.labels)
        for name, cluster in fleet.clusters.items()
    }
    at_time_ms = None if args.at_time is None else inputs.epoch_or_iso_time("--at-time", args.at_time)
    only = views_used(args.query, PREFIX)
    if engine == "spark":
        session = _fleet_spark(fleet.settings.catalog)
        registered = register_fleet_views(session, readers, at_time_ms, only)
    else:
        from kraftlake.analytics.engine import fleet as fleet_context

        session, registered = fleet_context(readers, at_time_ms, only)
    for name, why in registered.skipped.items():
        print(f"kraftlake sql: cluster {name} left out: {why}", file=sys.stderr)
    return session


def _fleet_spark(catalog: Any) -> Any:
    """A local Spark session, on the fleet's shared catalog if it names one."""
    from kraftlake.fleet.catalog import CatalogError, catalog_conf
    from kraftlake.jobs.materialize import local_spark

    extra: dict[str, str] = {}
    if catalog is not None:  # embedded Derby is the job's alone (one JVM at a time)
        try:
            extra = catalog_conf(catalog, Path("."))
        except CatalogError as error:
            raise UserFacingError(str(error)) from None
    # C1 only, as `kraftlake sql`: a fleet question is one plan whatever the number of clusters (when it was a
    # union of every cluster's, it filled C1's code cache and the JVM ran on without a compiler)
    spark = local_spark("kraftlake-sql-fleet", short_lived=True, extra=extra)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark
