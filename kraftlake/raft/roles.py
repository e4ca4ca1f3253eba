"""The roles a node can be in, one dataclass each, holding only what that role needs (KRaft's EpochState).

A vote is not a role of its own: like Kafka, "voted" is Unattached (or Prospective) with `voted_id` set.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kraftlake.raft.messages import FetchRequest, SnapshotRef


class Role(enum.Enum):
    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


@dataclass(slots=True)
class Unattached:
    """No leader known. For a voter the deadline starts a pre-vote; for an observer it is when it next asks
    a voter who leads."""

    epoch: int
    voted_id: int | None
    election_deadline: float
    role: Role = Role.UNATTACHED


@dataclass(slots=True)
class Prospective:
    """Canvassing pre-votes at the current epoch; the epoch is only bumped once a majority agrees."""

    epoch: int
    voted_id: int | None
    leader_id: int | None  # the last known leader, to fall back to when the pre-vote fails
    election_deadline: float
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    role: Role = Role.PROSPECTIVE


@dataclass(slots=True)
class Candidate:
    epoch: int
    election_deadline: float
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    role: Role = Role.CANDIDATE


@dataclass(slots=True)
class ReplicaProgress:
    """The leader's view of one follower: its end offset (-1 until it fetched in this epoch)."""

    end_offset: int = -1
    last_fetch_ms: float | None = None
    acknowledged: bool = False
    directory_id: str = ""


@dataclass(slots=True)
class ParkedFetch:
    """A Fetch with nothing to return yet: answered when data or a new high watermark arrives, or at expiry."""

    request: FetchRequest
    deadline: float
    high_watermark: int


@dataclass(slots=True)
class Leader:
    epoch: int
    epoch_start_offset: int
    check_quorum_deadline: float
    begin_epoch_resend_at: float
    replicas: dict[int, ReplicaProgress] = field(default_factory=dict)  # the other voters
    observers: dict[int, ReplicaProgress] = field(default_factory=dict)  # whoever else fetched in this epoch
    fetched_since_check: set[int] = field(default_factory=set)
    parked: dict[int, ParkedFetch] = field(default_factory=dict)
    role: Role = Role.LEADER


@dataclass(slots=True)
class SnapshotDownload:
    snapshot: SnapshotRef
    received: bytearray = field(default_factory=bytearray)


@dataclass(slots=True)
class Follower:
    epoch: int
    leader_id: int
    voted_id: int | None
    fetch_deadline: float
    has_fetched: bool = False
    inflight_id: int | None = None
    inflight_sent_ms: float = 0.0
    next_fetch_at: float = 0.0
    download: SnapshotDownload | None = None
    role: Role = Role.FOLLOWER


@dataclass(slots=True)
class Resigned:
    """A leader stepping down: it stays in its epoch (it voted for itself) until an election timeout."""

    epoch: int
    election_deadline: float
    preferred_successors: tuple[int, ...]
    role: Role = Role.RESIGNED


EpochState = Unattached | Prospective | Candidate | Leader | Follower | Resigned
