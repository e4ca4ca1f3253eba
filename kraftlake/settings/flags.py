"""The flags over `conf/kraftlake.toml`, one definition for the CLI and the spark-submit entry points
(`jobs/materialize.py`, `jobs/ingest.py`): each flag overrides the setting of the same name, so every default
is the settings models' (`kraftlake.settings.kraftlake`) and every flag has one help text. A bad flag value
raises `SettingsError`, like a bad file."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftlake.settings.errors import SettingsError
from kraftlake.settings.fleet import load_fleet
from kraftlake.settings.kraftlake import KafkaSettings, KraftlakeSettings, MaterializeSettings

_KAFKA, _JOB = KafkaSettings(), MaterializeSettings()


@dataclass(frozen=True)
class WarehouseLocation:
    """A warehouse URI (a local path, `s3://bucket/prefix`, or any URI delta-rs takes) and the storage options
    given for it. Options not given here come from the environment as delta-rs reads it (`AWS_*`)."""

    uri: str
    storage_options: Mapping[str, str]


@dataclass(frozen=True)
class MaterializeConfig:
    """One run of the streaming job: [kafka], [materialize] and [warehouse] with the flags applied."""

    bootstrap_servers: str
    topic: str
    warehouse: str  # a local path or an object-store URI (s3://bucket/prefix)
    spark_checkpoint: Path  # Spark's checkpoint location: the stream's progress (not an image checkpoint)
    trigger_seconds: float = _JOB.trigger_seconds
    available_now: bool = False
    max_offsets_per_trigger: int | None = None  # None: no per-trigger limit
    idle_publish_seconds: float = _JOB.idle_publish_seconds  # hold offset-only images (see lake.pipeline)
    coalesce_backlog: bool = _JOB.coalesce_backlog  # hold images of a backlog (see lake.pipeline)
    storage_options: tuple[tuple[str, str], ...] = ()  # for the warehouse; delta-rs reads AWS_* besides
    kafka_options: tuple[tuple[str, str], ...] = ()  # Kafka client options (Java names), Spark's `kafka.X`
    cluster_id: str | None = None  # the cluster whose log the topic holds, when the operator says (lake.source)
    fleet: Path | None = None  # a fleet file: every cluster's topic, `warehouse` is ROOT (ROOT/<cluster>)


def parse_key_values(pairs: Iterable[str], flag: str = "--storage-option") -> dict[str, str]:
    """KEY=VALUE flags (given repeatedly) as a dict; a pair without `=` names the flag it came with."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key.strip():
            raise SettingsError(None, None, f"{flag} {pair!r}: expected KEY=VALUE")
        options[key.strip()] = value
    return options


def add_warehouse_arguments(parser: Any) -> None:
    """`--warehouse URI` and `--storage-option KEY=VALUE` (repeatable), the same on every command."""
    parser.add_argument("--warehouse", metavar="URI",
                        help="a local path or an object-store URI such as s3://bucket/prefix "
                             "(default: [materialize] warehouse in the config, else ./warehouse)")
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a delta-rs storage option (e.g. AWS_ENDPOINT_URL=http://…), over [warehouse] "
                             "storage_options in the config and the AWS_* environment")


def warehouse_location(
    settings: KraftlakeSettings, uri: str | None, option_pairs: Iterable[str] = ()
) -> WarehouseLocation:
    """The flag, else `[materialize] warehouse`; options: `[warehouse] storage_options`, overridden by flags."""
    options = {**settings.warehouse.storage_options, **parse_key_values(option_pairs)}
    return WarehouseLocation(str(uri or settings.materialize.warehouse), options)


def add_ingest_arguments(parser: Any) -> None:
    """The flags of an ingest of a directory (`kraftlake ingest`, `spark-submit jobs/ingest.py`)."""
    parser.add_argument("directory", type=Path, help="a __cluster_metadata-0 directory or the log dir holding it")
    add_warehouse_arguments(parser)
    parser.add_argument("--image-every", type=int, metavar="OFFSETS",
                        help="publish an image every this many offsets (default: every 1,000 offsets, and every "
                             "30 s of work while catching up a log older than a minute; every offset stays "
                             "exact either way)")
    parser.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")


def add_materialize_arguments(parser: Any) -> None:
    """The streaming job's flags (`kraftlake materialize`, `spark-submit jobs/materialize.py`)."""
    parser.add_argument("--config", type=Path, help="TOML settings (default conf/kraftlake.toml)")
    parser.add_argument("--bootstrap-servers", help="Kafka to read (default: [kafka] or the local broker)")
    parser.add_argument("--topic", help=f"default: [kafka] topic, else {_KAFKA.topic}")
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
    parser.add_argument("--fleet", type=Path, metavar="FLEET_TOML",
                        help="one query over every cluster of a fleet file, each into ROOT/<cluster> (ROOT: "
                             "--warehouse, else the file's warehouse_root); e.g. kraftlake materialize --fleet "
                             "fleet.toml --warehouse s3://lake/fleet --checkpoint checkpoints/fleet")


def materialize_config(
    args: argparse.Namespace, settings: KraftlakeSettings, bootstrap_servers: str
) -> MaterializeConfig:
    """The flags of `add_materialize_arguments` over `settings`; `bootstrap_servers` as the caller found them."""
    kafka, job = settings.kafka, settings.materialize

    def pick(flag: Any, configured: Any) -> Any:
        return flag if flag is not None else configured

    trigger = pick(args.trigger_seconds, job.trigger_seconds)
    if trigger <= 0:
        raise SettingsError(None, None, "trigger_seconds must be positive")
    fleet = load_fleet(args.fleet).settings if getattr(args, "fleet", None) else None
    if fleet is not None and (args.topic or args.cluster_id):
        raise SettingsError(args.fleet, None, "--fleet takes each cluster's topic and id from the file: drop "
                                              "--topic and --cluster-id")
    root = args.warehouse or (fleet.warehouse_root if fleet is not None else None)
    location = warehouse_location(settings, root, args.storage_option)
    return MaterializeConfig(
        bootstrap_servers=bootstrap_servers,
        topic=pick(args.topic, kafka.topic),
        warehouse=location.uri,
        storage_options=tuple(location.storage_options.items()),
        spark_checkpoint=pick(args.checkpoint, fleet.checkpoint if fleet and fleet.checkpoint else job.checkpoint),
        trigger_seconds=trigger,
        available_now=args.available_now,
        max_offsets_per_trigger=pick(args.max_offsets_per_trigger, job.max_offsets_per_trigger) or None,
        idle_publish_seconds=pick(args.idle_publish_seconds, job.idle_publish_seconds),
        kafka_options=tuple({**kafka.options, **parse_key_values(args.kafka_option, "--kafka-option")}.items()),
        coalesce_backlog=pick(args.coalesce_backlog, job.coalesce_backlog),
        cluster_id=args.cluster_id,
        fleet=getattr(args, "fleet", None),
    )
