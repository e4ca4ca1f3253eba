"""The quorum's settings (`conf/quorum.toml`, defined in `kraftlake.settings.quorum`) with what the Raft layer derives
from them: one node's RaftConfig and data directory."""

from __future__ import annotations

from pathlib import Path

from kraftlake.raft.core import RaftConfig
from kraftlake.settings import QuorumSettings, load_quorum

DEFAULT_CONFIG = Path("conf/quorum.toml")


class QuorumConfig(QuorumSettings):
    def raft_config(self, node_id: int) -> RaftConfig:
        self.require_node(node_id)
        return RaftConfig(
            node_id=node_id,
            voters=tuple(sorted(self.voters)),
            election_timeout_ms=self.election_timeout_ms,
            fetch_timeout_ms=self.fetch_timeout_ms,
            request_timeout_ms=self.request_timeout_ms,
            fetch_max_wait_ms=self.fetch_max_wait_ms,
            kraft_version=self.kraft_version,
            addresses=tuple((node, host, port) for node, (host, port) in sorted(self.nodes.items())),
        )

    def node_dir(self, node_id: int) -> Path:
        return self.data_dir / f"node-{node_id}"


def load_config(path: Path) -> QuorumConfig:
    """Read the TOML file; relative data dirs are taken from the current directory, like the CLI's paths."""
    return load_quorum(path, QuorumConfig)
