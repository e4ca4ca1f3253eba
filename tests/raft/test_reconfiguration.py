"""Dynamic quorums (KIP-853) step by step: the exact control records, catch-up before joining, the new
majority, one change at a time, fencing of a removed voter, a leader removing itself, snapshots."""

from __future__ import annotations

import pytest

from kraftlake.raft.core import BugFlags, RaftConfig, RaftNode, VoterChangeError
from kraftlake.raft.roles import Leader, Role
from kraftlake.raft.simulation import InvariantChecker
from kraftlake.raft.snapshots import encode_snapshot
from kraftlake.raft.voters import Endpoint, VoterKey, VoterSet, control_records_of, default_directory_id
from kraftlake.records import decode_batches
from kraftlake.records.control_types import KRaftVersionRecord, SnapshotHeaderRecord, VotersRecord
from kraftlake.records.metadata_types import NoOpRecord
from tests.raft.scripted import ADDRESSES, OBSERVER, VOTERS, ScriptedCluster


def _key(node: int) -> VoterKey:
    return VoterKey(node, default_directory_id(node))


def _voters(record: object) -> list[tuple[int, str, list[tuple[str, str, int]]]]:
    """A VotersRecord's voters: id, directory id and endpoints, exactly as written."""
    return [
        (v.voter_id, v.voter_directory_id, [(e.name, e.host, e.port) for e in v.endpoints])
        for v in record.voters  # type: ignore[attr-defined]
    ]


def _expected(nodes: tuple[int, ...] | list[int]) -> list[tuple[int, str, list[tuple[str, str, int]]]]:
    """The voters of `nodes`, each with its Raft address from the config (ADDRESSES) as its one endpoint."""
    hosts = {node: (host, port) for node, host, port in ADDRESSES}
    return [(n, default_directory_id(n), [("CONTROLLER", *hosts[n])]) for n in nodes]


def _cluster(with_observer: bool = True) -> tuple[ScriptedCluster, int]:
    cluster = ScriptedCluster(BugFlags())
    cluster.checker = InvariantChecker((*VOTERS, OBSERVER))  # the observer may become a voter
    for node in VOTERS:
        cluster.start(node, kraft_version=1)
    if with_observer:
        cluster.start(OBSERVER, kraft_version=1)
    assert cluster.run(lambda: any(c.role is Role.LEADER and c.high_watermark >= 3 for c in cluster.cores.values()))
    leader = next(n for n, c in cluster.cores.items() if c.role is Role.LEADER)
    return cluster, leader


def _leader_sees_observer_caught_up(core: RaftNode) -> bool:
    progress = core.state.observers.get(OBSERVER) if isinstance(core.state, Leader) else None
    return progress is not None and progress.end_offset >= core.log.end_offset


def _records_at(cluster: ScriptedCluster, node: int, offset: int) -> list[object]:
    entry = cluster.cores[node].log.entries_between(offset, offset + 1)[0]
    return [record for _, record in control_records_of(entry.data)]


def test_kraft_version_1_bootstrap_writes_the_voter_set_into_the_log() -> None:
    cluster, leader = _cluster(with_observer=False)
    kraft_version, voters = _records_at(cluster, leader, 1)
    assert isinstance(kraft_version, KRaftVersionRecord) and kraft_version.kraft_version == 1
    assert isinstance(voters, VotersRecord)
    assert _voters(voters) == _expected(VOTERS)
    assert all(core.voters == VoterSet.bootstrap(VOTERS) and core.kraft_version == 1 for core in cluster.cores.values())


def test_a_static_quorum_refuses_reconfiguration() -> None:
    cluster = ScriptedCluster(BugFlags())
    for node in VOTERS:
        cluster.start(node)
    assert cluster.run(lambda: any(c.role is Role.LEADER and c.high_watermark >= 1 for c in cluster.cores.values()))
    leader = next(n for n, c in cluster.cores.items() if c.role is Role.LEADER)
    with pytest.raises(VoterChangeError, match="UNSUPPORTED_VERSION"):
        cluster.cores[leader].add_voter(cluster.now, _key(OBSERVER))


def test_add_voter_waits_for_catch_up_and_commits_only_under_the_new_majority() -> None:
    cluster, leader = _cluster()
    core = cluster.cores[leader]
    with pytest.raises(VoterChangeError, match="DUPLICATE_VOTER"):
        core.add_voter(cluster.now, _key(VOTERS[0]))
    with pytest.raises(VoterChangeError, match="has not fetched"):
        core.add_voter(cluster.now, VoterKey(OBSERVER, default_directory_id(99)))  # another disk, same id
    assert cluster.run(lambda: _leader_sees_observer_caught_up(core))
    offset = core.add_voter(cluster.now, _key(OBSERVER))
    assert _voters(_records_at(cluster, leader, offset)[0]) == _expected((1, 2, 3, 4))  # with the newcomer's endpoint
    with pytest.raises(VoterChangeError, match="not committed yet"):
        core.remove_voter(cluster.now, _key(OBSERVER))  # one change at a time
    # Only the leader and the newcomer are left: 2 of the new set's 4 is no majority, so nothing commits.
    for node in VOTERS:
        if node != leader:
            cluster.crash(node, lose_unflushed=False)
    cluster.run(lambda: False, max_steps=300)
    assert core.high_watermark <= offset and cluster.cores[OBSERVER].log.end_offset > offset
    survivor = next(node for node in VOTERS if node != leader)
    cluster.start(survivor, kraft_version=1)
    assert cluster.run(lambda: core.high_watermark > offset)
    assert cluster.cores[OBSERVER].is_voter and cluster.violations == []


def test_a_removed_voter_stops_canvassing_and_a_leader_removing_itself_resigns_after_commit() -> None:
    cluster, leader = _cluster(with_observer=False)
    core = cluster.cores[leader]
    offset = core.remove_voter(cluster.now, _key(leader))
    assert _voters(_records_at(cluster, leader, offset)[0]) == _expected([n for n in VOTERS if n != leader])
    assert core.role is Role.LEADER  # it leads until the change commits, without counting itself
    assert cluster.run(lambda: core.role is not Role.LEADER)
    assert core.high_watermark > offset and not core.is_voter
    others = [n for n in VOTERS if n != leader]
    assert cluster.run(lambda: any(cluster.cores[n].role is Role.LEADER for n in others))
    roles_seen: set[Role] = set()
    cluster.run(lambda: roles_seen.add(core.role) or False, max_steps=2000)  # type: ignore[func-returns-value]
    assert roles_seen <= {Role.FOLLOWER, Role.UNATTACHED, Role.RESIGNED}, roles_seen
    assert cluster.violations == []


def test_snapshots_carry_the_voter_set_and_a_restart_from_one_recovers_it() -> None:
    cluster, leader = _cluster()
    core = cluster.cores[leader]
    assert cluster.run(lambda: _leader_sees_observer_caught_up(core))
    offset = core.add_voter(cluster.now, _key(OBSERVER))
    cluster.append(leader)
    assert cluster.run(lambda: core.high_watermark > offset + 1)
    end = core.log.end_offset
    assert cluster.run(lambda: all(c.high_watermark == end for c in cluster.cores.values()))
    snapshot = core.create_snapshot(end, [(NoOpRecord(), 0)], 1234)
    header = next(iter(decode_batches(core.log.snapshot_data or b"", "<snapshot>")))
    kinds = [type(r.message) for r in header.records]
    assert kinds == [SnapshotHeaderRecord, KRaftVersionRecord, VotersRecord]
    assert _voters(header.records[2].message) == _expected((1, 2, 3, 4))
    core.delete_log_prefix(snapshot.end_offset)
    cluster.crash(leader, lose_unflushed=False)
    cluster.start(leader, kraft_version=1)
    restarted = cluster.cores[leader].voters
    assert restarted.ids == (1, 2, 3, 4)
    assert [(n, restarted.endpoints_of(n)) for n in restarted.ids] == [  # the endpoints came back too
        (n, (Endpoint("CONTROLLER", host, port),)) for n, host, port in ADDRESSES
    ]


def test_encode_snapshot_without_quorum_records_is_unchanged() -> None:
    """kraft.version 0 snapshots keep Kafka's old header batch: SnapshotHeader alone."""
    data = encode_snapshot(1, [(NoOpRecord(), 0)], 5)
    header = next(iter(decode_batches(data, "<snapshot>")))
    assert [type(r.message) for r in header.records] == [SnapshotHeaderRecord]
    assert RaftConfig(node_id=1, voters=(1,)).kraft_version == 0


def test_update_voter_rewrites_the_voter_set_for_a_known_key_only() -> None:
    cluster, leader = _cluster(with_observer=False)
    core = cluster.cores[leader]
    with pytest.raises(VoterChangeError, match="VOTER_NOT_FOUND"):
        core.update_voter(cluster.now, VoterKey(leader, default_directory_id(99)))  # same id, another disk
    offset = core.update_voter(cluster.now, _key(leader))
    assert _voters(_records_at(cluster, leader, offset)[0]) == _expected(VOTERS)
    assert cluster.run(lambda: core.high_watermark > offset) and cluster.violations == []
