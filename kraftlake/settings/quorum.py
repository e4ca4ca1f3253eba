"""`conf/quorum.toml`: the quorum's voters and observers with their host:port, data root and timeouts.
The file keeps them in three tables ([quorum], [voters], [observers]); the settings are one flat model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from kraftlake.settings.errors import SettingsError
from kraftlake.settings.loader import read_toml, validate

DEFAULT_SEGMENT_BYTES = 1024 * 1024
ADDRESS_TABLES = ("voters", "observers")


def parse_address(text: Any) -> tuple[str, int]:
    host, _, port = str(text).rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bad address {text!r}: expected host:port")
    return host, int(port)


Settings = TypeVar("Settings", bound="QuorumSettings")
Address = Annotated[tuple[str, int], BeforeValidator(parse_address)]


class QuorumSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    voters: dict[int, Address] = Field(min_length=1)
    data_dir: Path = Path("run/quorum")  # relative: from the current directory, like the CLI's paths
    election_timeout_ms: float = 1000.0
    fetch_timeout_ms: float = 2000.0
    request_timeout_ms: float = 2000.0
    fetch_max_wait_ms: float = 500.0
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    observers: dict[int, Address] = Field(default_factory=dict)
    kraft_version: Literal[0, 1] = 0  # 1: dynamic quorum (KIP-853), [voters] only bootstraps the voter set
    auto_join: bool = False  # an observer asks the leader to add it as a voter (kraft_version 1)

    @model_validator(mode="after")
    def _voters_are_not_observers(self) -> QuorumSettings:
        if both := sorted(self.voters.keys() & self.observers.keys()):
            raise ValueError(f"nodes {both} are listed as both voters and observers")
        return self

    @property
    def nodes(self) -> dict[int, tuple[str, int]]:
        """Every node's address, voters and observers: where Raft messages to a node go."""
        return {**self.voters, **self.observers}

    def require_node(self, node_id: int) -> None:
        if node_id not in self.nodes:
            raise SettingsError(
                None, None,
                f"node {node_id} is neither a voter ({sorted(self.voters)}) nor an observer ({sorted(self.observers)})",
            )


def load_quorum(path: Path, model: type[Settings]) -> Settings:
    """The file as `model` (QuorumSettings or a subclass that adds behaviour, as raft's QuorumConfig does)."""
    document = read_toml(path, "quorum")
    unknown = sorted(set(document) - {"quorum", *ADDRESS_TABLES})
    if unknown:
        raise SettingsError(path, unknown[0], "unknown table")
    if not document.get("voters"):
        raise SettingsError(path, "voters", "no [voters] configured")
    quorum = document.get("quorum", {})
    tables = {table: document.get(table, {}) for table in ADDRESS_TABLES}
    if clash := sorted(set(quorum) & set(ADDRESS_TABLES)):
        raise SettingsError(path, f"quorum.{clash[0]}", "unknown setting")
    return validate(path, model, {**quorum, **tables}, table_of=table_of)


def table_of(field_name: str) -> str | None:
    """The table a field of the flat model comes from: [voters] and [observers] carry their own name."""
    return None if field_name in ADDRESS_TABLES else "quorum"
