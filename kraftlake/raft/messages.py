"""The quorum's RPCs as plain frozen dataclasses: the core consumes and emits them, the simulation passes
them between nodes as objects, and the TCP transport frames them as JSON headers plus raw batch bytes.

Every message carries the sender's epoch (KRaft's "current leader epoch" field), so a receiver can fence
stale senders or learn of a newer epoch from any message.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """Vote (KIP-595) or PreVote (KIP-996): the nominee's last log position decides up-to-dateness."""

    epoch: int
    candidate_id: int
    last_epoch: int
    end_offset: int
    pre_vote: bool


@dataclass(frozen=True, slots=True)
class VoteResponse:
    epoch: int
    voter_id: int
    granted: bool
    pre_vote: bool
    leader_id: int | None


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    """Sent by a new leader because pull-based replication gives it no other way to announce itself."""

    epoch: int
    leader_id: int


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    epoch: int
    voter_id: int


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    """A resigning leader's hand-off: successors ordered most caught up first get the shortest backoff."""

    epoch: int
    leader_id: int
    preferred_successors: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """Pull replication: the follower's end offset and the epoch of its last batch let the leader detect
    divergence; `fetch_id` pairs the answer with the single in-flight request."""

    epoch: int
    replica_id: int
    fetch_offset: int
    last_fetched_epoch: int
    fetch_id: int
    replica_directory_id: str = ""  # KIP-853: the leader adds a voter only with the key that fetched


@dataclass(frozen=True, slots=True)
class DivergingEpoch:
    """The leader's largest epoch not above the follower's last fetched epoch, and where it ends."""

    epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    end_offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """Exactly one of: batches (possibly none), a diverging epoch, a snapshot to fetch, or an error."""

    epoch: int
    leader_id: int | None
    fetch_id: int
    high_watermark: int
    batches: tuple[bytes, ...] = ()
    diverging_epoch: DivergingEpoch | None = None
    snapshot: SnapshotRef | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    epoch: int
    replica_id: int
    snapshot: SnapshotRef
    position: int


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    epoch: int
    leader_id: int | None
    snapshot: SnapshotRef
    position: int
    total_size: int
    chunk: bytes
    error: str | None = None


RaftMessage = (
    VoteRequest
    | VoteResponse
    | BeginQuorumEpochRequest
    | BeginQuorumEpochResponse
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchResponse
    | FetchSnapshotRequest
    | FetchSnapshotResponse
)


@dataclass(frozen=True, slots=True)
class Envelope:
    """A message addressed from one node to another: what the core emits and the network delivers."""

    source: int
    destination: int
    message: RaftMessage
