"""`kraftlake follow --bootstrap-controllers HOST:PORT[,…]`: a live Apache Kafka cluster's metadata log, fetched
as a KRaft observer, into the metadata topic, exactly once by offset (see `follow.follower`). Runs until
interrupted; a rerun resumes from what the topic holds.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from kraftlake.config import resolve_bootstrap
from kraftlake.errors import UserFacingError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("follow", help="follow a live KRaft quorum's metadata log into the metadata topic")
    parser.add_argument("--bootstrap-controllers", required=True,
                        help="HOST:PORT[,…] of the controllers' listener (controller.quorum.bootstrap.servers)")
    parser.add_argument("--cluster-id", help="the cluster's id: a quorum of another cluster is refused")
    parser.add_argument("--topic", help="default: [kafka] topic in the config")
    parser.add_argument("--bootstrap-servers", help="Kafka to write to (default: [kafka] or the local broker)")
    parser.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    parser.add_argument("--log-interval", type=float, default=10.0, help="seconds between position lines")
    parser.add_argument("--connect-timeout", type=float, default=30.0,
                        help="seconds the first controller may take to answer (later outages are waited out)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException

    from controller.publisher import PublisherConfig, PublishError
    from follow.client import FollowError, parse_endpoints
    from follow.follower import FollowConfig, Follower
    from follow.observer import ObserverConfig
    from settings import load_kraftlake

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    kafka = load_kraftlake(args.config).kafka
    bootstrap = resolve_bootstrap(args.bootstrap_servers or kafka.bootstrap_servers or None)
    try:
        controllers = tuple(parse_endpoints(args.bootstrap_controllers))
    except FollowError as error:
        raise UserFacingError(f"--bootstrap-controllers: {error}") from None
    observer = ObserverConfig(controllers, cluster_id=args.cluster_id, connect_timeout_s=args.connect_timeout)
    config = FollowConfig(observer, PublisherConfig(bootstrap, topic=args.topic or kafka.topic), args.log_interval)
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    follower = Follower(config, stop)
    try:
        follower.run()
    except FollowError as error:
        raise UserFacingError(f"{error} (topic {config.publisher.topic} holds the log up to offset "
                              f"{follower.published_offset}; a rerun resumes there)") from None
    except (PublishError, KafkaException) as error:
        detail = error.args[0].str() if isinstance(error, KafkaException) else str(error)
        raise UserFacingError(f"Kafka at {bootstrap}, topic {config.publisher.topic}: {detail}") from None
    print(f"stopped: topic {config.publisher.topic} holds the log up to offset {follower.published_offset}")
    return 0
