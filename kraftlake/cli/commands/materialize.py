"""`kraftlake materialize`: run the streaming job (jobs/materialize.py) with settings from
conf/kraftlake.toml, each overridable by a flag. `--available-now` drains the topic and stops."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kraftlake.cli.config import add_warehouse_arguments, parse_key_values, resolve_bootstrap, resolve_warehouse
from kraftlake.cli.errors import UserFacingError
from kraftlake.settings import load_kraftlake


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("materialize", help="replay the metadata topic into the Delta warehouse")
    parser.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    parser.add_argument("--bootstrap-servers", help="Kafka to read (default: [kafka] or the local broker)")
    parser.add_argument("--topic")
    parser.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a Kafka client option, Java client names (e.g. security.protocol=SASL_SSL); "
                             "adds to [kafka] options")
    add_warehouse_arguments(parser)
    parser.add_argument("--checkpoint", type=Path,
                        help="Spark's checkpoint location (the stream's progress; not an image checkpoint)")
    parser.add_argument("--cluster-id",
                        help="the cluster whose log the topic holds: the warehouse records it, refuses another")
    parser.add_argument("--trigger-seconds", type=float)
    parser.add_argument("--max-offsets-per-trigger", type=int)
    parser.add_argument("--idle-publish-seconds", type=float,
                        help="an image that only moves offsets waits up to this long (0: publish every trigger)")
    parser.add_argument("--coalesce-backlog", action=argparse.BooleanOptionalAction,
                        help="while the job is behind (batches older than a minute), images wait until their "
                             "change is as big as the history before it (default: [materialize])")
    parser.add_argument("--available-now", action="store_true", help="drain the topic, then stop")
    parser.set_defaults(handler=run)


def config_from(args: argparse.Namespace) -> Any:
    from kraftlake.jobs.materialize import MaterializeConfig

    settings = load_kraftlake(args.config)
    kafka, job = settings.kafka, settings.materialize

    def pick(flag: Any, configured: Any) -> Any:
        return flag if flag is not None else configured

    bootstrap = resolve_bootstrap(args.bootstrap_servers or kafka.bootstrap_servers or None)
    trigger = pick(args.trigger_seconds, job.trigger_seconds)
    if trigger <= 0:
        raise UserFacingError("trigger_seconds must be positive")
    location = resolve_warehouse(args.warehouse, args.storage_option, args.config)
    return MaterializeConfig(
        bootstrap_servers=bootstrap,
        topic=pick(args.topic, kafka.topic),
        warehouse=location.uri,
        storage_options=tuple(location.storage_options.items()),
        spark_checkpoint=pick(args.checkpoint, job.checkpoint),
        trigger_seconds=trigger,
        available_now=args.available_now,
        max_offsets_per_trigger=pick(args.max_offsets_per_trigger, job.max_offsets_per_trigger) or None,
        idle_publish_seconds=pick(args.idle_publish_seconds, job.idle_publish_seconds),
        kafka_options=tuple({**kafka.options, **parse_key_values(args.kafka_option, "--kafka-option")}.items()),
        coalesce_backlog=pick(args.coalesce_backlog, job.coalesce_backlog),
        cluster_id=args.cluster_id,
    )


def run(args: argparse.Namespace) -> int:
    from kraftlake.jobs.materialize import MaterializeError
    from kraftlake.jobs.materialize import run as run_job

    config = config_from(args)
    try:
        run_job(config)
    except MaterializeError as error:
        raise UserFacingError(f"{error} (nothing past the last good image was published; fix and rerun)") from None
    return 0
