"""The quorum's configuration file (`conf/quorum.toml`): voters and observers with their host:port, data root,
timeouts."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from kraftlake.errors import UserFacingError
from raft.core import RaftConfig
from raft.log import DEFAULT_SEGMENT_BYTES

DEFAULT_CONFIG = Path("conf/quorum.toml")


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    voters: dict[int, tuple[str, int]]
    data_dir: Path
    election_timeout_ms: float = 1000.0
    fetch_timeout_ms: float = 2000.0
    request_timeout_ms: float = 2000.0
    fetch_max_wait_ms: float = 500.0
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    observers: dict[int, tuple[str, int]] = field(default_factory=dict)

    @property
    def nodes(self) -> dict[int, tuple[str, int]]:
        """Every node's address, voters and observers: where Raft messages to a node go."""
        return {**self.voters, **self.observers}

    def raft_config(self, node_id: int) -> RaftConfig:
        if node_id not in self.nodes:
            raise UserFacingError(
                f"node {node_id} is neither a voter ({sorted(self.voters)}) nor an observer ({sorted(self.observers)})"
            )
        return RaftConfig(
            node_id=node_id,
            voters=tuple(sorted(self.voters)),
            election_timeout_ms=self.election_timeout_ms,
            fetch_timeout_ms=self.fetch_timeout_ms,
            request_timeout_ms=self.request_timeout_ms,
            fetch_max_wait_ms=self.fetch_max_wait_ms,
        )

    def node_dir(self, node_id: int) -> Path:
        return self.data_dir / f"node-{node_id}"


def parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise UserFacingError(f"bad address {text!r}: expected host:port")
    return host, int(port)


def load_config(path: Path) -> QuorumConfig:
    """Read the TOML file; relative data dirs are taken from the current directory, like the CLI's paths."""
    try:
        document = tomllib.loads(path.read_text())
    except OSError as error:
        raise UserFacingError(f"cannot read quorum config {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise UserFacingError(f"{path}: {error}") from None
    settings = document.get("quorum", {})
    voters = {int(node_id): parse_address(address) for node_id, address in document.get("voters", {}).items()}
    if not voters:
        raise UserFacingError(f"{path}: no [voters] configured")
    observers = {int(node_id): parse_address(address) for node_id, address in document.get("observers", {}).items()}
    if both := sorted(voters.keys() & observers.keys()):
        raise UserFacingError(f"{path}: nodes {both} are listed as both voters and observers")
    return QuorumConfig(
        voters=voters,
        data_dir=Path(settings.get("data_dir", "run/quorum")),
        election_timeout_ms=float(settings.get("election_timeout_ms", 1000)),
        fetch_timeout_ms=float(settings.get("fetch_timeout_ms", 2000)),
        request_timeout_ms=float(settings.get("request_timeout_ms", 2000)),
        fetch_max_wait_ms=float(settings.get("fetch_max_wait_ms", 500)),
        segment_bytes=int(settings.get("segment_bytes", DEFAULT_SEGMENT_BYTES)),
        observers=observers,
    )
