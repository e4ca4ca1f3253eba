"""`kraftlake follow --bootstrap-controllers HOST:PORT[,…]`: a live Apache Kafka cluster's metadata log, fetched
as a KRaft observer, into the metadata topic, exactly once by offset (see `kraftlake.follow.follower`). Runs until
interrupted; a rerun resumes from what the topic holds. `kraftlake follow --status FILE` prints where a running
follower (started with `--status-file FILE`) stands: FOLLOWING (exit 0) or STALLED (exit 1, see
`kraftlake.follow.status`), and the gaps it noticed. `kraftlake publish DIR --follow` runs the same follower
over a node's directory (`kraftlake.follow.tail`).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftlake.cli.config import resolve_bootstrap
from kraftlake.cli.errors import UserFacingError
from kraftlake.stopping import stop_on_signals

if TYPE_CHECKING:
    from kraftlake.follow.observer import ObserverConfig
    from kraftlake.follow.tail import TailConfig


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("follow", help="follow a live KRaft quorum's metadata log into the metadata topic")
    parser.add_argument("--bootstrap-controllers",
                        help="HOST:PORT[,…] of the controllers' listener (controller.quorum.bootstrap.servers)")
    parser.add_argument("--cluster-id", help="the cluster's id: a quorum of another cluster is refused")
    parser.add_argument("--security", action="append", default=[], metavar="KEY=VALUE",
                        help="a client setting for the controller listener, as Kafka names it: security.protocol, "
                             "sasl.mechanism, sasl.username, sasl.password, sasl.jaas.config, ssl.ca.location, "
                             "ssl.endpoint.identification.algorithm, … (repeatable)")
    parser.add_argument("--security-file", type=Path,
                        help="a client properties file with those settings (keeps the password off the command line)")
    parser.add_argument("--connect-timeout", type=float, default=30.0,
                        help="seconds the first controller may take to answer (later outages are waited out)")
    parser.add_argument("--status", type=Path, metavar="FILE",
                        help="print where the follower writing FILE (--status-file) stands, and exit; a fleet's "
                             "status directory: one line per cluster")
    parser.add_argument("--fleet", type=Path, metavar="FLEET_TOML",
                        help="follow every cluster of a fleet file from this process, reloading it when it changes "
                             "(e.g. kraftlake follow --fleet fleet.toml --status-file run/fleet, then "
                             "kraftlake follow --status run/fleet)")
    add_follower_arguments(parser)
    parser.set_defaults(handler=run)


def add_follower_arguments(parser: argparse.ArgumentParser) -> None:
    """What `kraftlake.follow` and `publish --follow` share: where to publish, how often to report."""
    parser.add_argument("--topic", help="default: [kafka] topic in the config")
    parser.add_argument("--bootstrap-servers", help="Kafka to write to (default: [kafka] or the local broker)")
    parser.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    parser.add_argument("--log-interval", type=float, default=10.0, help="seconds between position lines")
    parser.add_argument("--status-file", type=Path,
                        help="keep FILE up to date with the position (read it with `kraftlake follow --status FILE`)")
    parser.add_argument("--stall-timeout", type=float, metavar="SECONDS",
                        help="STALLED after this long without progress while the quorum moves on: the follower "
                             "reconnects, --status exits 1 (default: [follow] stall_seconds in the config)")
    parser.add_argument("--metrics-address", metavar="HOST:PORT",
                        help="serve Prometheus metrics at http://HOST:PORT/metrics (a port alone: on 127.0.0.1; "
                             "default: off)")


def run(args: argparse.Namespace) -> int:
    from kraftlake.follow.client import FollowError, parse_endpoints
    from kraftlake.follow.observer import ObserverConfig
    from kraftlake.follow.security import SecurityError, load_security

    if args.status is not None:
        return print_status(args.status)
    if args.fleet is not None:
        from kraftlake.cli.fleet import follow_fleet

        return follow_fleet(args)
    if not args.bootstrap_controllers:
        raise UserFacingError("--bootstrap-controllers is required (or --status FILE)")
    try:
        controllers = tuple(parse_endpoints(args.bootstrap_controllers))
    except FollowError as error:
        raise UserFacingError(f"--bootstrap-controllers: {error}") from None
    try:
        security = load_security(args.security, args.security_file)
    except SecurityError as error:
        raise UserFacingError(str(error)) from None
    observer = ObserverConfig(controllers, cluster_id=args.cluster_id, connect_timeout_s=args.connect_timeout,
                              security=security)
    return run_follower(args, observer)


def print_status(path: Path) -> int:
    from kraftlake.follow.status import StatusError, read_status

    if path.is_dir():
        from kraftlake.cli.fleet import print_fleet_status

        return print_fleet_status(path)
    try:
        status = read_status(path)
    except StatusError as error:
        raise UserFacingError(str(error)) from None
    now = time.time()
    print("\n".join(status.describe(now)))
    return 1 if status.stalled(now) else 0


def run_follower(args: argparse.Namespace, source: ObserverConfig | TailConfig) -> int:
    """Follow `source` into the topic until SIGTERM/SIGINT; one line naming the endpoint, file or topic when
    following cannot go on."""
    from confluent_kafka import KafkaException

    from kraftlake.bridge.publisher import PublisherConfig, PublishError
    from kraftlake.follow.client import FollowError
    from kraftlake.follow.follower import FollowConfig, Follower
    from kraftlake.follow.observer import ObserverConfig
    from kraftlake.metrics.endpoint import metrics_served
    from kraftlake.metrics.follow import FollowCollector
    from kraftlake.settings import MIN_STALL_SECONDS, load_kraftlake

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    settings = load_kraftlake(args.config)
    kafka = settings.kafka
    stall = settings.follow.stall_seconds if args.stall_timeout is None else args.stall_timeout
    if stall < MIN_STALL_SECONDS:
        raise UserFacingError(f"--stall-timeout {stall:g}: at least {MIN_STALL_SECONDS:g} seconds")
    if isinstance(source, ObserverConfig):
        source = dataclasses.replace(source, stall_after_s=stall)
    bootstrap = resolve_bootstrap(args.bootstrap_servers or kafka.bootstrap_servers or None)
    publisher = PublisherConfig(bootstrap, topic=args.topic or kafka.topic)
    config = FollowConfig(source, publisher, args.log_interval, args.status_file, stall)
    follower = Follower(config, stop_on_signals())
    collector = FollowCollector(lambda: [("default", s) for s in [follower.status()] if s is not None])
    try:
        with metrics_served(args.metrics_address, [collector]) as metrics:
            if metrics is not None:
                logging.getLogger(__name__).info("follow: metrics at %s", metrics.url)
            follower.run()
    except FollowError as error:
        raise UserFacingError(f"{error} ({follower.holds()}; a rerun resumes there)") from None
    except (PublishError, KafkaException) as error:
        detail = error.args[0].str() if isinstance(error, KafkaException) else str(error)
        raise UserFacingError(f"Kafka at {bootstrap}, topic {publisher.topic}: {detail}") from None
    print(f"stopped: {follower.holds()}")
    return 0
