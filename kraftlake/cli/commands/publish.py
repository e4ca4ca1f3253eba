"""`kraftlake publish DIR --topic T`: a real cluster's metadata directory into the metadata topic, which the
streaming job (`kraftlake materialize`, `spark-submit jobs/materialize.py`) then replays.

Exactly once by offset: a rerun publishes only what the topic lacks (see `kraftlake.bridge.log_dir_publisher`).
With `--follow` it keeps tailing a live node's directory as Kafka writes it (`kraftlake.follow.tail`) until interrupted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kraftlake.cli.commands.follow import add_follower_arguments, run_follower
from kraftlake.cli.config import resolve_bootstrap
from kraftlake.cli.errors import UserFacingError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("publish", help="put a __cluster_metadata-0 directory into the metadata topic")
    parser.add_argument("directory", type=Path, help="a __cluster_metadata-0 directory or the log dir holding it")
    parser.add_argument("--follow", action="store_true",
                        help="keep tailing the directory of a running node as Kafka writes it, until interrupted")
    parser.add_argument("--poll-interval", type=float, default=0.5,
                        help="with --follow: seconds between looks at the directory when nothing was new")
    add_follower_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException

    from kraftlake.bridge.log_dir_publisher import LogDirPublishError, publish_log_dir
    from kraftlake.bridge.publisher import PublisherConfig, PublishError
    from kraftlake.records.errors import NotAMetadataLogError, RecordFormatError
    from kraftlake.settings import load_kraftlake

    if args.follow:
        return _follow(args)
    kafka = load_kraftlake(args.config).kafka
    bootstrap = resolve_bootstrap(args.bootstrap_servers or kafka.bootstrap_servers or None)
    config = PublisherConfig(bootstrap, topic=args.topic or kafka.topic)
    try:
        result = publish_log_dir(args.directory, config)
    except NotAMetadataLogError as error:
        raise UserFacingError(str(error)) from None
    except RecordFormatError as error:
        raise UserFacingError(f"{error} (nothing from there on was published; fix the file and rerun)") from None
    except (LogDirPublishError, PublishError) as error:
        raise UserFacingError(str(error)) from None
    except KafkaException as error:
        raise UserFacingError(f"Kafka at {bootstrap}, topic {config.topic}: {error.args[0].str()}") from None
    parts = []
    if result.snapshot is not None:
        parts.append(f"snapshot {result.snapshot.file_name()}")
    if result.first_offset is not None:
        parts.append(f"log offsets {result.first_offset}..{result.last_offset}")
    what = " and ".join(parts) if parts else "nothing new (the topic already holds this log)"
    print(f"published {what} to topic {config.topic}: {result.messages} messages")
    return 0


def _follow(args: argparse.Namespace) -> int:
    from kraftlake.follow.tail import TailConfig
    from kraftlake.records.errors import NotAMetadataLogError
    from kraftlake.records.files import metadata_log_dir

    try:
        directory = metadata_log_dir(args.directory)
    except NotAMetadataLogError as error:
        raise UserFacingError(str(error)) from None
    return run_follower(args, TailConfig(directory, args.poll_interval))
