"""Controller settings, defaulted like Kafka's (broker.session.timeout.ms, metadata.max.idle.interval.ms,
…): the [controller] table of `conf/controller.toml`, typed (a pydantic dataclass, so a bad value or an
unknown name is refused naming the key) and read through the `kraftlake.settings` package."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from kraftlake.controller.versions import LATEST_METADATA_VERSION, default_bootstrap_features, parse_metadata_version
from kraftlake.settings import ControllerFile, validate


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class ControllerConfig:
    node_id: int = 1
    cluster_id: str | None = None  # when set, registrations naming another cluster are refused
    metadata_version: int | str = LATEST_METADATA_VERSION  # written at bootstrap: a level or a release ("4.2")
    bootstrap_features: dict[str, int] | None = None  # None: Kafka's defaults at metadata_version
    session_timeout_ms: int = 9_000
    noop_interval_ms: int = 500  # a NoOpRecord after this long without a write; 0 disables
    max_records_per_batch: int = 10_000
    max_records_per_operation: int = 2_000_000
    default_replication_factor: int = 1
    default_partitions: int = 1
    producer_id_block_size: int = 1_000
    unclean_election_interval_ms: int = 300_000
    token_expiry_check_interval_ms: int = 300_000
    delegation_token_secret_key: str | None = field(default=None, repr=False)  # tokens disabled when unset
    delegation_token_max_lifetime_ms: int = 7 * 24 * 3600 * 1000
    delegation_token_renew_interval_ms: int = 24 * 3600 * 1000
    scram_iterations: int = 4096
    # metadata.log.max.record.bytes.between.snapshots and metadata.log.max.snapshot.interval.ms
    snapshot_max_new_record_bytes: int = 20 * 1024 * 1024
    snapshot_max_interval_ms: int = 3_600_000

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata_version", parse_metadata_version(self.metadata_version))

    @property
    def bootstrap_metadata_version(self) -> int:
        assert isinstance(self.metadata_version, int)  # normalized by __post_init__
        return self.metadata_version

    @property
    def bootstrap_feature_levels(self) -> dict[str, int]:
        if self.bootstrap_features is None:
            return default_bootstrap_features(self.bootstrap_metadata_version)
        return dict(self.bootstrap_features)


def controller_config(path: Path, file: ControllerFile, node_id: int) -> ControllerConfig:
    """Node `node_id`'s settings from the [controller] table of `file` (read from `path`)."""
    return validate(path, ControllerConfig, {**file.controller, "node_id": node_id}, section="controller")
