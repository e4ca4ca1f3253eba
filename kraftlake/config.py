"""Which Kafka to talk to: every setting that names a broker accepts a real cluster as well as the local one.
The configuration files themselves are defined and read by the `settings` package."""

from __future__ import annotations

import os
from pathlib import Path

from kraftlake.broker import default_data_dir, running_broker
from kraftlake.errors import UserFacingError

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
    local_dir = data_dir if data_dir is not None else default_data_dir()
    state = running_broker(local_dir)
    if state is not None:
        return state.bootstrap_servers
    raise UserFacingError(
        f"no Kafka broker given and no local broker running on {local_dir}: pass --bootstrap-servers "
        f"HOST:PORT, set {BOOTSTRAP_ENV}, or start the local one with `kraftlake broker start`"
    )

