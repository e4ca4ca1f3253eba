"""`fleet.toml`: every cluster a platform team runs, kept in one place (`kraftlake follow --fleet`,
`kraftlake materialize --fleet`, `kraftlake sql --fleet`).

    warehouse_root = "s3://lake/fleet"        # ROOT/<cluster>/ per cluster (default: [materialize] warehouse)
    checkpoint = "checkpoints/fleet"          # the fleet job's Spark checkpoint
    catalog_refresh_seconds = 30              # a cluster's persistent views re-created at most this often
    idle_publishes_per_second = 4             # the fleet's offset-only images, in all (kraftlake.lake.idle_budget)
    topic = "kraftlake-fleet"                 # optional: one shared topic for every cluster (key = cluster)
    topic_partitions = 4                      # its partition count (fixed once the topic exists)

    [defaults.properties]                     # every cluster's controller-listener client settings start here
    "security.protocol" = "SASL_SSL"

    [clusters.prod_eu]                        # the name: warehouse folder, catalog schema, `cluster` column
    bootstrap_controllers = ["ctrl1:9093", "ctrl2:9093"]
    cluster_id = "MkU3OEVBNTcwNTJENDM2Qg"      # optional, as `follow --cluster-id`
    security_file = "/etc/kraftlake/prod-eu.properties"   # the password stays out of this file
    labels = { env = "prod", region = "eu-west-1" }
    [clusters.prod_eu.properties]             # Kafka's client names, verbatim
    "sasl.mechanism" = "SCRAM-SHA-512"

    [clusters.lab]
    metadata_dir = "/var/lib/kafka/meta/__cluster_metadata-0"   # `publish --follow` of a node's directory

    [catalog]                                 # optional: a Hive metastore on PostgreSQL (default: embedded Derby)
    jdbc_url = "jdbc:postgresql://127.0.0.1:5432/metastore"
    user = "kraftlake"
    password_file = "/etc/kraftlake/metastore.password"

A cluster given twice is refused naming it (TOML's own error names only a line). A name is `[a-z][a-z0-9_]*`: it is
a Hive schema name (Hive refuses `-`), a folder and an SQL identifier without quoting; a name ending in `_published`
is refused (`<cluster>_published` is the schema of a cluster's views, `kraftlake.fleet.catalog`). Kafka's keys go
under `properties` verbatim; an unquoted `security.protocol = …` is a dotted key that TOML nests, so nested tables
are flattened back. Merge order: `[defaults.properties]`, the `security_file`, the cluster's `properties`. The topic
is `kraftlake-metadata-<name>` unless given; with a top-level `topic` every cluster's batches go to that one shared
topic instead, keyed by cluster (`kraftlake.records.topic.cluster_key`), and a cluster's own `topic` is refused. A
bad file raises `SettingsError` naming the file and the dotted key (`clusters.prod_eu.bootstrap_controllers`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kraftlake.lake import idle_budget
from kraftlake.settings.errors import SettingsError
from kraftlake.settings.loader import read_toml, validate

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
TOPIC_PREFIX = "kraftlake-metadata-"
PUBLISHED_SUFFIX = "_published"  # schema <cluster>_published: the catalog's views of the cluster's last image
# schemas a cluster may not take: the fleet views' (`default.fleet_*`) and Spark's global temporary views'
RESERVED_SCHEMAS = ("default", "global_temp")
SCHEMA_NAME_MAX = 128  # the metastore's limit on a schema's name (Hive's DBS.NAME, varchar(128))
_CLUSTER_TABLE = re.compile(r"""^[ \t]*\[[ \t]*clusters[ \t]*\.[ \t]*("[^"\n]*"|'[^'\n]*'|[A-Za-z0-9_-]+)[ \t]*\]""",
                            re.MULTILINE)


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """`{"security": {"protocol": "X"}}` (TOML's reading of an unquoted dotted key) → `{"security.protocol": "X"}`."""
    flat: dict[str, str] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return flat


class Properties(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    properties: dict[str, str] = {}

    @field_validator("properties", mode="before")
    @classmethod
    def _flat(cls, value: Any) -> Any:
        return _flatten(value) if isinstance(value, dict) else value


class ClusterSettings(Properties):
    """One cluster: how to follow it (a live quorum's controllers, or a node's metadata directory) and its labels."""

    bootstrap_controllers: list[str] = []
    metadata_dir: Path | None = None
    cluster_id: str | None = None
    topic: str | None = None
    security_file: Path | None = None
    connect_timeout_seconds: float = 30.0
    labels: dict[str, str] = {}

    @model_validator(mode="after")
    def _one_source(self) -> ClusterSettings:
        if bool(self.bootstrap_controllers) == (self.metadata_dir is not None):
            raise ValueError("give bootstrap_controllers (a live quorum) or metadata_dir (a node's directory), one")
        if self.metadata_dir is not None and (self.properties or self.security_file):
            raise ValueError("metadata_dir is read from disk: properties and security_file are for controllers")
        return self


class CatalogSettings(BaseModel):
    """A Hive metastore on a database the job and every Spark session share; none: Spark's embedded Derby."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    jdbc_url: str
    user: str = "kraftlake"
    password_file: Path | None = None  # the password stays out of this file (and out of every log line)
    warehouse_dir: str | None = None  # spark.sql.warehouse.dir, for managed tables (kraftlake registers external ones)


class FleetSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    warehouse_root: str | None = None
    checkpoint: Path | None = None
    defaults: Properties = Properties()
    clusters: dict[str, ClusterSettings] = {}
    catalog: CatalogSettings | None = None
    # the job re-creates a cluster's persistent views at most this often, and only when its last image changed
    catalog_refresh_seconds: float = Field(default=30.0, ge=0)
    # the job publishes idle clusters' offset-only images at most this often in all, longest wait first: an idle
    # cluster's last offset is readable at most max(idle_publish_seconds, clusters / this) late
    # (`kraftlake.lake.idle_budget`); a change publishes at once
    idle_publishes_per_second: float = Field(default=idle_budget.PER_SECOND, gt=0)
    # one topic for every cluster (None: a topic per cluster); a micro-batch then costs its changes, not the
    # number of clusters (Spark's Kafka source pays round trips per topic-partition: docs/fleet.md)
    topic: str | None = None
    topic_partitions: int = Field(default=4, ge=1)

    @field_validator("clusters")
    @classmethod
    def _names(cls, clusters: dict[str, ClusterSettings]) -> dict[str, ClusterSettings]:
        for name in clusters:
            if not NAME.match(name):
                raise ValueError(f"cluster name {name!r}: [a-z][a-z0-9_]* (it names a folder and a catalog schema)")
            if name.endswith(PUBLISHED_SUFFIX):
                raise ValueError(f"cluster name {name!r}: a name ending in {PUBLISHED_SUFFIX} is reserved (schema "
                                 f"<cluster>{PUBLISHED_SUFFIX} holds a cluster's views in the catalog)")
            if name in RESERVED_SCHEMAS:
                raise ValueError(f"cluster name {name!r}: reserved (the catalog's schema {name} is not a cluster's)")
            if len(name) > SCHEMA_NAME_MAX:
                raise ValueError(f"cluster name {name[:20]!r}…: at most {SCHEMA_NAME_MAX} characters (a catalog "
                                 "schema name)")
        return clusters


class FleetCluster:
    """A cluster as the fleet runs it: its settings with the defaults merged in and its topic decided."""

    def __init__(self, name: str, settings: ClusterSettings, defaults: Properties, path: Path,
                 shared: FleetSettings | None = None) -> None:
        self.name = name
        self.settings = settings
        self.path = path  # the fleet file, for errors
        self.topic = (shared.topic if shared is not None else None) or settings.topic or f"{TOPIC_PREFIX}{name}"
        # the shared topic's partition count; None: the cluster has a topic of its own
        self.shared_partitions = shared.topic_partitions if shared is not None and shared.topic else None
        self.labels = dict(settings.labels)
        self._defaults = defaults.properties
        # the security file's stamp as loaded: a password rotated in it makes this cluster a changed one
        self.security_stamp = None if settings.security_file is None else file_stamp(settings.security_file)

    def client_properties(self) -> dict[str, str]:
        """The controller listener's client settings: defaults, then the security file, then `properties`."""
        merged = dict(self._defaults)
        if self.settings.security_file is not None:
            merged.update(_read_properties(self.settings.security_file, self.path, self.key("security_file")))
        merged.update(self.settings.properties)
        return merged

    def key(self, field: str = "") -> str:
        return f"clusters.{self.name}" + (f".{field}" if field else "")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FleetCluster) and (
            self.name, self.settings, self._defaults, self.security_stamp, self.topic, self.shared_partitions) == (
            other.name, other.settings, other._defaults, other.security_stamp, other.topic, other.shared_partitions)

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:  # never the properties: they may hold a password
        return f"FleetCluster({self.name!r}, topic={self.topic!r})"


class Fleet:
    """A loaded fleet file: the clusters in file order, and what the job and the catalog take from it."""

    def __init__(self, path: Path, settings: FleetSettings) -> None:
        self.path = path
        self.settings = settings
        self.clusters = {name: FleetCluster(name, cluster, settings.defaults, path, settings)
                         for name, cluster in settings.clusters.items()}

    def watched_files(self) -> list[Path]:
        """The files whose change is a change of the fleet: the fleet file and every cluster's security file."""
        return [self.path, *[c.settings.security_file for c in self.clusters.values() if c.settings.security_file]]


def load_fleet(path: Path) -> Fleet:
    """The fleet file, checked whole (two clusters on one topic, too, unless it is the shared one)."""
    fleet = Fleet(path, validate(path, FleetSettings, _read_fleet(path)))
    seen: dict[str, str] = {}
    for name, cluster in fleet.clusters.items():
        if fleet.settings.topic and cluster.settings.topic:
            raise SettingsError(path, cluster.key("topic"), f"the fleet's topic {fleet.settings.topic} carries every "
                                "cluster: a cluster has no topic of its own then")
        if cluster.shared_partitions is None and cluster.topic in seen:
            other = seen[cluster.topic]
            raise SettingsError(path, cluster.key("topic"), f"topic {cluster.topic} is cluster {other}'s too")
        seen[cluster.topic] = name
    if not fleet.clusters:
        raise SettingsError(path, "clusters", "no cluster: add a [clusters.<name>] table")
    _one_directory_each(fleet)
    return fleet


def _read_fleet(path: Path) -> dict[str, Any]:
    """The parsed file; a cluster's table given twice is named (TOML's own error names a line, not the cluster)."""
    try:
        return read_toml(path, "fleet")
    except SettingsError:
        _refuse_twice(path)
        raise


def _refuse_twice(path: Path) -> None:
    try:
        text = path.read_text()
    except OSError:
        return
    first: dict[str, int] = {}
    for found in _CLUSTER_TABLE.finditer(text):
        name, line = found[1].strip("'\""), text.count("\n", 0, found.start()) + 1
        if name in first:
            raise SettingsError(path, f"clusters.{name}", f"cluster {name} is given twice (lines {first[name]} and "
                                f"{line}): one [clusters.{name}] table each")
        first[name] = line


def _one_directory_each(fleet: Fleet) -> None:
    """Two clusters tailing one node's directory would write one log into two warehouses (and follow it twice)."""
    seen: dict[Path, str] = {}
    for name, cluster in fleet.clusters.items():
        if cluster.settings.metadata_dir is None:
            continue
        directory = cluster.settings.metadata_dir.expanduser().resolve()
        if directory in seen:
            raise SettingsError(fleet.path, cluster.key("metadata_dir"),
                                f"directory {cluster.settings.metadata_dir} is cluster {seen[directory]}'s too")
        seen[directory] = name


def _read_properties(path: Path, fleet_file: Path, key: str) -> dict[str, str]:
    """A Java client properties file (`KEY=VALUE` lines, `#`/`!` comments)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise SettingsError(fleet_file, key, f"cannot read {path}: {error.strerror or error}") from None
    pairs: dict[str, str] = {}
    for line in lines:
        if not line.strip() or line.lstrip()[0] in "#!":
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise SettingsError(fleet_file, key, f"{path}: {name.strip()!r} is not KEY=VALUE")
        pairs[name.strip()] = value.strip()
    return pairs


def cluster_location(root: str, name: str) -> str:
    """ROOT/<cluster>: a local path or an object-store URI alike."""
    return f"{root.rstrip('/')}/{name}"


def file_stamp(path: Path) -> tuple[int, int]:
    """What tells a changed fleet file (modification time, size); (-1, -1) while it is missing."""
    try:
        stat = path.stat()
    except OSError:
        return (-1, -1)
    return (stat.st_mtime_ns, stat.st_size)
