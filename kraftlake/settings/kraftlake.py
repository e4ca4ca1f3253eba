"""`conf/kraftlake.toml`: the defaults of the CLI and the streaming job ([kafka], [materialize],
[warehouse], [follow]); every value can be overridden by a flag of the same name."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from kraftlake.settings.errors import SettingsError
from kraftlake.settings.loader import read_toml, validate

DEFAULT_CONFIG = Path("conf/kraftlake.toml")
DEFAULT_TOPIC = "kraftlake-metadata"  # Apache Kafka refuses __cluster_metadata as a user topic's name
# A follower whose position has not moved for this long while the quorum's high watermark is ahead of it (or
# whose source has not answered for this long) is STALLED: it reconnects, and `follow --status` says so.
DEFAULT_STALL_SECONDS = 30.0
# Below this a healthy follower could look stalled between two of its status writes and a leader's 500 ms wait.
MIN_STALL_SECONDS = 3.0


class KafkaSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: str = ""  # empty: $KRAFTLAKE_BOOTSTRAP_SERVERS or the local broker
    topic: str = DEFAULT_TOPIC
    # Kafka client options under the Java client's names (security.protocol, sasl.mechanism, ssl.*, …): the
    # streaming job hands each to Spark's Kafka source as `kafka.<name>`
    options: dict[str, str] = {}


class MaterializeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    warehouse: str = "warehouse"  # a local path or an object-store URI (s3://bucket/prefix), kept as given
    checkpoint: Path = Path("checkpoints/materialize")  # Spark's checkpoint location (the stream's progress)
    trigger_seconds: float = 1.0
    max_offsets_per_trigger: int = 0  # 0: no per-trigger limit
    idle_publish_seconds: float = 10.0  # an offset-only image waits up to this long (see kraftlake.lake.pipeline)
    coalesce_backlog: bool = True  # images of a backlog wait, at geometric steps (see kraftlake.lake.pipeline)


class WarehouseSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # delta-rs storage options for the warehouse; delta-rs reads the AWS_* environment for any not given
    storage_options: dict[str, str] = {}


class FollowSettings(BaseModel):
    """`kraftlake follow` and `publish --follow`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stall_seconds: float = Field(default=DEFAULT_STALL_SECONDS, ge=MIN_STALL_SECONDS)


class KraftlakeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kafka: KafkaSettings = KafkaSettings()
    materialize: MaterializeSettings = MaterializeSettings()
    warehouse: WarehouseSettings = WarehouseSettings()
    follow: FollowSettings = FollowSettings()


def load_kraftlake(path: Path | None = None) -> KraftlakeSettings:
    """`path`, else `conf/kraftlake.toml` if it exists, else the defaults."""
    config_path = path or DEFAULT_CONFIG
    if not config_path.exists():
        if path is not None:
            raise SettingsError(path, None, "no such config file")
        return KraftlakeSettings()
    return validate(config_path, KraftlakeSettings, read_toml(config_path, "kraftlake"))
