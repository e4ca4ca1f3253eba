"""The CLI side of `--fleet` (`kraftlake follow --fleet`, `follow --status DIR`): parse, call `kraftlake.fleet`,
map its errors to one line and exit code 2."""

from __future__ import annotations

import argparse
import logging
import signal
import time
from pathlib import Path
from types import FrameType

from kraftlake.cli.commands.follow import _stop_on_signals
from kraftlake.cli.config import resolve_bootstrap
from kraftlake.cli.errors import UserFacingError


def follow_fleet(args: argparse.Namespace) -> int:
    """Every cluster of the fleet file, until SIGTERM/SIGINT; SIGHUP looks at the file now."""
    from kraftlake.bridge.publisher import PublisherConfig
    from kraftlake.fleet.supervisor import FleetSupervisor, SupervisorConfig
    from kraftlake.settings import load_kraftlake

    if args.bootstrap_controllers or args.topic:
        raise UserFacingError("--fleet takes the controllers and topics from the fleet file: drop "
                              "--bootstrap-controllers and --topic")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(threadName)s] %(message)s")
    kafka = load_kraftlake(args.config).kafka
    bootstrap = resolve_bootstrap(args.bootstrap_servers or kafka.bootstrap_servers or None)
    config = SupervisorConfig(PublisherConfig(bootstrap), status_dir=args.status_file,
                              log_interval_s=args.log_interval)
    supervisor = FleetSupervisor(args.fleet, config, _stop_on_signals())

    def _look_now(signum: int, frame: FrameType | None) -> None:
        supervisor.look_now.set()

    signal.signal(signal.SIGHUP, _look_now)
    supervisor.run()  # a fleet file that does not load at start: SettingsError, one line
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
