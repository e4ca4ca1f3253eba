"""Which Kafka to talk to: every setting that names a broker accepts a real cluster as well as the local one.
The configuration files themselves are defined and read by the `kraftlake.settings` package."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftlake.cli.errors import UserFacingError

BOOTSTRAP_ENV = "KRAFTLAKE_BOOTSTRAP_SERVERS"


def resolve_bootstrap(explicit: str | None, data_dir: Path | None = None) -> str:
    """`--bootstrap-servers`, else $KRAFTLAKE_BOOTSTRAP_SERVERS, else the running local broker's address.

    The order lets a user point any command at a real cluster without touching the local broker.
    """
    if explicit:
        return explicit
    from_env = os.environ.get(BOOTSTRAP_ENV, "").strip()
    if from_env:
        return from_env
    from kraftlake.cli.broker import default_data_dir, running_broker  # the Kafka client: only when asked

    local_dir = data_dir if data_dir is not None else default_data_dir()
    state = running_broker(local_dir)
    if state is not None:
        return state.bootstrap_servers
    raise UserFacingError(
        f"no Kafka broker given and no local broker running on {local_dir}: pass --bootstrap-servers "
        f"HOST:PORT, set {BOOTSTRAP_ENV}, or start the local one with `kraftlake broker start`"
    )



@dataclass(frozen=True)
class WarehouseLocation:
    """A warehouse URI (a local path, `s3://bucket/prefix`, or any URI delta-rs takes) and the storage options
    given for it. Options not given here come from the environment as delta-rs reads it (`AWS_*`)."""

    uri: str
    storage_options: Mapping[str, str]


def add_warehouse_arguments(parser: Any) -> None:
    """`--warehouse URI` and `--storage-option KEY=VALUE` (repeatable), the same on every command."""
    parser.add_argument("--warehouse", metavar="URI",
                        help="a local path or an object-store URI such as s3://bucket/prefix "
                             "(default: [materialize] warehouse in the config, else ./warehouse)")
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a delta-rs storage option (e.g. AWS_ENDPOINT_URL=http://…), over [warehouse] "
                             "storage_options in the config and the AWS_* environment")


def parse_key_values(pairs: Iterable[str], flag: str = "--storage-option") -> dict[str, str]:
    """KEY=VALUE flags (given repeatedly) as a dict; a pair without `=` names the flag it came with."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key.strip():
            raise UserFacingError(f"{flag} {pair!r}: expected KEY=VALUE")
        options[key.strip()] = value
    return options


def resolve_warehouse(
    uri: str | None, option_pairs: Iterable[str] = (), config_path: Path | None = None
) -> WarehouseLocation:
    """The flag, else `[materialize] warehouse`; options: `[warehouse] storage_options`, overridden by flags."""
    from kraftlake.settings import load_kraftlake

    settings = load_kraftlake(config_path)
    options = {**settings.warehouse.storage_options, **parse_key_values(option_pairs)}
    return WarehouseLocation(str(uri or settings.materialize.warehouse), options)
