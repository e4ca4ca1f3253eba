"""`kraftlake materialize`: run the streaming job (jobs/materialize.py) with settings from
conf/kraftlake.toml, each overridable by a flag. `--available-now` drains the topic and stops."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kraftlake.config import add_warehouse_arguments, load_section, resolve_bootstrap, resolve_warehouse
from kraftlake.errors import UserFacingError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("materialize", help="replay the metadata topic into the Delta warehouse")
    parser.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    parser.add_argument("--bootstrap-servers", help="Kafka to read (default: [kafka] or the local broker)")
    parser.add_argument("--topic")
    add_warehouse_arguments(parser)
    parser.add_argument("--checkpoint", type=Path)
    parser.add_argument("--trigger-seconds", type=float)
    parser.add_argument("--max-offsets-per-trigger", type=int)
    parser.add_argument("--available-now", action="store_true", help="drain the topic, then stop")
    parser.set_defaults(handler=run)


def config_from(args: argparse.Namespace) -> Any:
    from jobs.materialize import MaterializeConfig

    kafka = load_section("kafka", args.config)
    job = load_section("materialize", args.config)

    def pick(flag: Any, section: dict, key: str, default: Any) -> Any:
        return flag if flag is not None else section.get(key, default)

    bootstrap = resolve_bootstrap(args.bootstrap_servers or str(kafka.get("bootstrap_servers", "")) or None)
    trigger = float(pick(args.trigger_seconds, job, "trigger_seconds", 1.0))
    if trigger <= 0:
        raise UserFacingError("trigger_seconds must be positive")
    location = resolve_warehouse(args.warehouse, args.storage_option, args.config)
    return MaterializeConfig(
        bootstrap_servers=bootstrap,
        topic=str(pick(args.topic, kafka, "topic", "kraftlake-metadata")),
        warehouse=location.uri,
        storage_options=tuple(location.storage_options.items()),
        checkpoint=Path(pick(args.checkpoint, job, "checkpoint", "checkpoints/materialize")),
        trigger_seconds=trigger,
        available_now=args.available_now,
        max_offsets_per_trigger=int(pick(args.max_offsets_per_trigger, job, "max_offsets_per_trigger", 0)) or None,
    )


def run(args: argparse.Namespace) -> int:
    from jobs.materialize import MaterializeError
    from jobs.materialize import run as run_job

    config = config_from(args)
    try:
        run_job(config)
    except MaterializeError as error:
        raise UserFacingError(f"{error} (nothing past the last good image was published; fix and rerun)") from None
    return 0
