"""The voter set of a dynamic quorum (KIP-853) and its history along the log.

Under kraft.version 1 the voters are not configuration but data: `KRaftVersionRecord` and `VotersRecord`
control records in the log (and in every snapshot's header batch). The voter set in force at an offset is the
latest VotersRecord at or before it, uncommitted ones included, as Kafka's KRaftControlRecordStateMachine
does; before the first one, the bootstrap voters (the configured ones) are in force. Voters are keyed by node
id *and* directory id, so a re-formatted disk with the same node id is a different replica.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kraftlake.records import decode_batch
from kraftlake.records.batch import CONTROL_FLAG
from kraftlake.records.control_types import (
    KRaftVersionFeature,
    KRaftVersionRecord,
    VoterEndpoint,
    VotersRecord,
    VotersVoter,
)
from kraftlake.records.wire import uuid_to_text

# attributes sit at bytes 21..23 of a RecordBatch v2: enough to skip data batches without decoding them
_ATTRIBUTES_AT = 21
KRAFT_VERSION_DYNAMIC = 1
# The listener name a voter's Raft endpoint is written under (Kafka's default controller.listener.names).
CONTROLLER_LISTENER = "CONTROLLER"


@dataclass(frozen=True, slots=True, order=True)
class VoterKey:
    """One replica of the quorum: its node id and the directory id of its metadata log directory."""

    node_id: int
    directory_id: str

    def __str__(self) -> str:
        return f"{self.node_id}@{self.directory_id}"


def default_directory_id(node_id: int) -> str:
    """A stable directory id for a node whose meta.properties gives none (static configs, the simulation)."""
    return uuid_to_text(hashlib.sha256(f"kraftlake-directory-{node_id}".encode()).digest()[:16])


@dataclass(frozen=True, slots=True, order=True)
class Endpoint:
    """A listener a voter answers Raft requests on, as VotersRecord carries it."""

    name: str
    host: str
    port: int


Endpoints = tuple[Endpoint, ...]
_NO_ENDPOINTS: Mapping[int, Endpoints] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class VoterSet:
    """An immutable set of voter keys; majorities are counted on node ids. Each voter's endpoints ride along
    (written into VotersRecord) but are no part of the set's identity: two sets with the same keys are equal."""

    keys: tuple[VoterKey, ...]
    endpoints: Mapping[int, Endpoints] = field(default_factory=lambda: _NO_ENDPOINTS, compare=False)

    @classmethod
    def of(cls, keys: Iterable[VoterKey], endpoints: Mapping[int, Endpoints] = _NO_ENDPOINTS) -> VoterSet:
        ordered = tuple(sorted(set(keys)))
        ids = {key.node_id for key in ordered}
        return cls(ordered, MappingProxyType({n: tuple(sorted(e)) for n, e in endpoints.items() if n in ids and e}))

    @classmethod
    def bootstrap(cls, node_ids: Iterable[int], endpoints: Mapping[int, Endpoints] = _NO_ENDPOINTS) -> VoterSet:
        return cls.of((VoterKey(node_id, default_directory_id(node_id)) for node_id in node_ids), endpoints)

    def endpoints_of(self, node_id: int) -> Endpoints:
        return self.endpoints.get(node_id, ())

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(key.node_id for key in self.keys)

    @property
    def majority(self) -> int:
        return len(self.keys) // 2 + 1

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.ids

    def key_of(self, node_id: int) -> VoterKey | None:
        return next((key for key in self.keys if key.node_id == node_id), None)

    def with_voter(self, key: VoterKey, endpoints: Endpoints = ()) -> VoterSet:
        return VoterSet.of((*self.keys, key), {**self.endpoints, key.node_id: endpoints})

    def without_voter(self, key: VoterKey) -> VoterSet:
        return VoterSet.of((k for k in self.keys if k != key), self.endpoints)


def raft_endpoint(host: str, port: int) -> Endpoints:
    """A node's Raft address from the quorum config, as the one endpoint of its controller listener."""
    return (Endpoint(CONTROLLER_LISTENER, host, port),)


def voters_record(voters: VoterSet) -> object:
    """The VotersRecord of `voters`, each voter with its endpoints."""
    return VotersRecord(
        version=0,
        voters=tuple(
            VotersVoter(
                voter_id=key.node_id,
                voter_directory_id=key.directory_id,
                endpoints=tuple(
                    VoterEndpoint(name=e.name, host=e.host, port=e.port) for e in voters.endpoints_of(key.node_id)
                ),
                kraft_version_feature=KRaftVersionFeature(min_supported_version=0, max_supported_version=1),
            )
            for key in voters.keys
        ),
    )


def kraft_version_record(level: int) -> object:
    return KRaftVersionRecord(version=0, kraft_version=level)


def voter_set_of(record: Any) -> VoterSet:
    """The voter set a VotersRecord states, endpoints included."""
    return VoterSet.of(
        (VoterKey(v.voter_id, v.voter_directory_id) for v in record.voters),
        {v.voter_id: tuple(Endpoint(e.name, e.host, e.port) for e in v.endpoints) for v in record.voters},
    )


def control_records_of(batch_bytes: bytes) -> list[tuple[int, object]]:
    """The (offset, KRaftVersion or Voters record) pairs of one encoded batch; data batches cost nothing."""
    attributes = int.from_bytes(batch_bytes[_ATTRIBUTES_AT:_ATTRIBUTES_AT + 2], "big")
    if not attributes & CONTROL_FLAG:
        return []
    return [
        (record.offset, record.message)
        for record in decode_batch(batch_bytes, "<control batch>").records
        if isinstance(record.message, KRaftVersionRecord | VotersRecord)
    ]


class VoterHistory:
    """The voter sets and kraft.version levels along one replica's log: what is in force at any offset."""

    def __init__(self, bootstrap: VoterSet) -> None:
        self.bootstrap = bootstrap
        self._offsets: list[int] = []
        self._sets: list[VoterSet] = []
        self._version_offsets: list[int] = []
        self._versions: list[int] = []

    def reset(self, base: VoterSet, kraft_version: int = 0) -> None:
        """Start over from a snapshot's voters (or the bootstrap ones)."""
        self.bootstrap = base
        self._offsets.clear()
        self._sets.clear()
        self._version_offsets.clear()
        self._versions.clear()
        if kraft_version:
            self._version_offsets.append(-1)
            self._versions.append(kraft_version)

    def apply(self, batch_bytes: bytes) -> None:
        """Track the control records of a batch just appended (at the log's end)."""
        for offset, record in control_records_of(batch_bytes):
            if isinstance(record, VotersRecord):
                self._offsets.append(offset)
                self._sets.append(voter_set_of(record))
            else:
                self._version_offsets.append(offset)
                self._versions.append(record.kraft_version)  # type: ignore[attr-defined]

    def truncate(self, end_offset: int) -> None:
        """Forget what the log no longer holds (offsets >= `end_offset`)."""
        keep = bisect.bisect_left(self._offsets, end_offset)
        del self._offsets[keep:], self._sets[keep:]
        keep = bisect.bisect_left(self._version_offsets, end_offset)
        del self._version_offsets[keep:], self._versions[keep:]

    def voters_at(self, offset: int) -> VoterSet:
        """The voter set in force at `offset`: the latest VotersRecord at or before it."""
        index = bisect.bisect_right(self._offsets, offset) - 1
        return self._sets[index] if index >= 0 else self.bootstrap

    @property
    def latest(self) -> VoterSet:
        return self._sets[-1] if self._sets else self.bootstrap

    @property
    def latest_offset(self) -> int:
        """Where the latest VotersRecord sits (-1: only the bootstrap set)."""
        return self._offsets[-1] if self._offsets else -1

    @property
    def record_offsets(self) -> Sequence[int]:
        return tuple(self._offsets)

    def kraft_version_at(self, offset: int) -> int:
        index = bisect.bisect_right(self._version_offsets, offset) - 1
        return self._versions[index] if index >= 0 else 0

    def previous_set(self) -> VoterSet:
        """The set before the latest record: what a broken leader would wrongly count majorities on."""
        return self._sets[-2] if len(self._sets) >= 2 else self.bootstrap
