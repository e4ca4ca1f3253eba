"""The quorum's own state as the log says it (KIP-853): the kraft.version in force and the voter set.

Kafka keeps these out of the metadata image (its MetadataLoader skips control batches; the Raft layer's
KRaftControlRecordStateMachine reads KRaftVersion and KRaftVoters records). Here they are one more sub-image,
so the warehouse holds the quorum's history too. They are Raft state, not controller state: a record takes
effect at its own offset whether or not a metadata transaction is open around it (see `kraftlake.replay.loader`).
A VotersRecord states the whole voter set, so each one replaces the previous set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from kraftlake.replay.mapping import empty_map


class VoterEndpoint(NamedTuple):
    """A listener a voter answers Raft requests on (VotersRecord has no security protocol)."""

    name: str
    host: str
    port: int


@dataclass(frozen=True)
class QuorumVoter:
    voter_id: int
    directory_id: str
    endpoints: tuple[VoterEndpoint, ...]
    min_supported_kraft_version: int
    max_supported_kraft_version: int


@dataclass(frozen=True)
class VotersImage:
    kraft_version: int | None = None  # None: the log has said nothing (kraft.version 0, static voters)
    voters: MappingProxyType[int, QuorumVoter] = field(default_factory=empty_map)

    def is_empty(self) -> bool:
        return self.kraft_version is None and not self.voters


def voter_of(raw: Any) -> QuorumVoter:
    """One voter of a VotersRecord; endpoints sorted (a set in Kafka)."""
    feature = raw.kraft_version_feature
    return QuorumVoter(
        raw.voter_id,
        raw.voter_directory_id,
        tuple(sorted(VoterEndpoint(e.name, e.host, e.port) for e in raw.endpoints)),
        feature.min_supported_version,
        feature.max_supported_version,
    )


_UNCHANGED: Any = object()


def _by_id(voter: QuorumVoter) -> int:
    return voter.voter_id


class VotersDelta:
    def __init__(self, image: VotersImage) -> None:
        self.image = image
        self._kraft_version: Any = _UNCHANGED
        self._voters: Any = _UNCHANGED

    def replay_kraft_version(self, record: Any) -> None:
        self._kraft_version = record.kraft_version

    def replay_voters(self, record: Any) -> None:
        self._voters = MappingProxyType({v.voter_id: v for v in sorted(map(voter_of, record.voters), key=_by_id)})

    @property
    def kraft_version(self) -> int | None:
        return self.image.kraft_version if self._kraft_version is _UNCHANGED else self._kraft_version

    @property
    def voters(self) -> MappingProxyType[int, QuorumVoter]:
        return self.image.voters if self._voters is _UNCHANGED else self._voters

    def finish_snapshot(self) -> None:
        """A snapshot without KRaftVersion / Voters records (kraft.version 0) leaves no quorum state."""
        if self._kraft_version is _UNCHANGED:
            self._kraft_version = None
        if self._voters is _UNCHANGED:
            self._voters = MappingProxyType({})

    def apply(self) -> VotersImage:
        image = VotersImage(self.kraft_version, self.voters)
        return self.image if image == self.image else image
