"""Which Kafka to talk to: every setting that names a broker accepts a real cluster as well as the local one.
The configuration files and the flags over them are defined and read by the `kraftlake.settings` package."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kraftlake.cli.errors import UserFacingError
from kraftlake.settings import SettingsError, load_kraftlake
from kraftlake.settings.flags import WarehouseLocation, add_warehouse_arguments, warehouse_location

__all__ = ["BOOTSTRAP_ENV", "add_warehouse_arguments", "resolve_bootstrap", "resolve_warehouse"]

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


def resolve_warehouse(
    uri: str | None, option_pairs: Iterable[str] = (), config_path: Path | None = None
) -> WarehouseLocation:
    """The flag, else `[materialize] warehouse`; options: `[warehouse] storage_options`, overridden by flags
    (`kraftlake.settings.flags`)."""
    try:
        return warehouse_location(load_kraftlake(config_path), uri, option_pairs)
    except SettingsError as error:
        raise UserFacingError(str(error)) from None
