"""The persisted election state (`quorum-state`), with Kafka's QuorumStateData field names.

It is written before a role change takes effect, so a vote or a candidacy survives a crash: that is what
keeps "one vote per epoch" true across restarts.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kraftlake.raft.log import LOG_DIR_NAME, fsync_directory

QUORUM_STATE_FILE = "quorum-state"
DATA_VERSION = 0


@dataclass(frozen=True, slots=True)
class ElectionState:
    """Epoch, the leader known in it, and this node's vote in it (None when unknown / not cast)."""

    epoch: int
    leader_id: int | None
    voted_id: int | None


class ElectionStore(Protocol):
    def read(self) -> ElectionState | None: ...

    def write(self, state: ElectionState) -> None: ...


class MemoryElectionStore:
    """The simulation's store: writes are durable at once (the real one fsyncs before returning)."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state


class FileElectionStore:
    """`__cluster_metadata-0/quorum-state`: JSON to a `.tmp` file, fsync, rename, fsync the directory."""

    def __init__(self, data_dir: Path, voters: tuple[int, ...]) -> None:
        self.directory = data_dir / LOG_DIR_NAME
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / QUORUM_STATE_FILE
        self.voters = voters

    def read(self) -> ElectionState | None:
        if not self.path.exists():
            return None
        data = json.loads(self.path.read_text())
        leader_id = data.get("leaderId", -1)
        voted_id = data.get("votedId", -1)
        return ElectionState(
            epoch=max(data.get("leaderEpoch", 0), 0),
            leader_id=None if leader_id < 0 else leader_id,
            voted_id=None if voted_id < 0 else voted_id,
        )

    def write(self, state: ElectionState) -> None:
        document = {
            "clusterId": "",
            "leaderId": -1 if state.leader_id is None else state.leader_id,
            "leaderEpoch": state.epoch,
            "votedId": -1 if state.voted_id is None else state.voted_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": voter} for voter in self.voters],
            "data_version": DATA_VERSION,
        }
        temporary = self.path.with_name(QUORUM_STATE_FILE + ".tmp")
        with temporary.open("w") as handle:
            json.dump(document, handle)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.rename(self.path)
        fsync_directory(self.directory)
