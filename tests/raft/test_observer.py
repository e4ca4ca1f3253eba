"""Observers: nodes outside the voter set that only replicate. They never vote, never run an election, never
count towards the high watermark; they find the leader by asking voters and fetch from it like a follower."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlake.raft.config import load_config
from kraftlake.raft.core import BugFlags, RaftNode
from kraftlake.raft.messages import VoteRequest
from kraftlake.raft.roles import Leader, Role
from kraftlake.raft.simulation import Simulation
from kraftlake.records.metadata_types import NoOpRecord
from kraftlake.settings import SettingsError
from tests.raft.scripted import OBSERVER, VOTERS, ScriptedCluster


def _cluster_with_leader() -> tuple[ScriptedCluster, int]:
    cluster = ScriptedCluster(BugFlags())
    for node in VOTERS:
        cluster.start(node)
    assert cluster.run(lambda: any(c.role is Role.LEADER and c.high_watermark > 0 for c in cluster.cores.values()))
    leader = next(node for node, core in cluster.cores.items() if core.role is Role.LEADER)
    return cluster, leader


def _caught_up(observer: RaftNode, leader: RaftNode) -> bool:
    return (
        observer.role is Role.FOLLOWER
        and observer.log.end_offset == leader.log.end_offset
        and observer.high_watermark == leader.high_watermark == leader.log.end_offset
    )


def test_an_observer_finds_the_leader_and_replicates_the_committed_log() -> None:
    cluster, leader = _cluster_with_leader()
    for _ in range(5):
        cluster.append(leader)
    cluster.start(OBSERVER)
    observer, leader_core = cluster.cores[OBSERVER], cluster.cores[leader]
    assert cluster.run(lambda: _caught_up(observer, leader_core))
    assert observer.leader_id == leader and observer.epoch == leader_core.epoch
    assert [e.data for e in observer.log.entries] == [e.data for e in leader_core.log.entries]
    state = leader_core.state
    assert isinstance(state, Leader)
    assert OBSERVER not in state.replicas and OBSERVER not in leader_core.replica_end_offsets()
    # the leader learns the observer's end offset from its next fetch, for describe
    assert cluster.run(lambda: OBSERVER in state.observers and state.observers[OBSERVER].end_offset == 6)
    assert leader_core.log.end_offset == 6  # the LeaderChange batch and 5 appends
    assert cluster.violations == []


def test_an_observer_never_votes_nor_starts_an_election() -> None:
    cluster = ScriptedCluster(BugFlags())
    cluster.start(OBSERVER)  # no voter is up: it can only keep asking for a leader
    assert cluster.run(lambda: cluster.now > 60_000)
    observer = cluster.cores[OBSERVER]
    assert (observer.role, observer.epoch) == (Role.UNATTACHED, 0)
    for pre_vote in (True, False):
        observer.handle(cluster.now, 1, VoteRequest(3, 1, 2, 10, pre_vote))
        assert observer.take_outbox() == []
    assert observer.epoch == 0
    state = cluster.stores[OBSERVER].state
    assert state is not None and state.voted_id is None
    assert cluster.violations == []


def test_an_observer_does_not_advance_the_high_watermark() -> None:
    cluster, leader = _cluster_with_leader()
    cluster.start(OBSERVER)
    observer, leader_core = cluster.cores[OBSERVER], cluster.cores[leader]
    assert cluster.run(lambda: _caught_up(observer, leader_core))
    committed = leader_core.high_watermark
    for voter in set(VOTERS) - {leader}:
        cluster.crash(voter, lose_unflushed=False)
    for _ in range(3):
        cluster.append(leader)
    assert cluster.run(lambda: observer.log.end_offset == leader_core.log.end_offset)
    assert leader_core.role is Role.LEADER
    assert leader_core.high_watermark == committed < leader_core.log.end_offset
    assert observer.high_watermark == committed
    assert cluster.violations == []


def test_an_observer_follows_the_new_leader_after_the_leader_crashes() -> None:
    cluster, leader = _cluster_with_leader()
    cluster.start(OBSERVER)
    observer = cluster.cores[OBSERVER]
    assert cluster.run(lambda: _caught_up(observer, cluster.cores[leader]))
    cluster.crash(leader, lose_unflushed=False)

    def new_leader() -> int | None:
        return next((n for n, c in cluster.cores.items() if c.role is Role.LEADER and c.high_watermark > 0), None)

    assert cluster.run(lambda: new_leader() is not None)
    successor = new_leader()
    assert successor is not None
    last = cluster.append(successor)
    assert cluster.run(lambda: _caught_up(observer, cluster.cores[successor]))
    assert observer.leader_id == successor and observer.high_watermark > last
    assert cluster.violations == []


def test_an_observer_behind_the_log_start_fetches_the_snapshot_then_the_tail() -> None:
    cluster, leader = _cluster_with_leader()
    leader_core = cluster.cores[leader]
    for _ in range(4):
        cluster.append(leader)
    assert cluster.run(lambda: leader_core.high_watermark == leader_core.log.end_offset)
    snapshot = leader_core.create_snapshot(leader_core.high_watermark, [(NoOpRecord(), 0)], 1)
    leader_core.delete_log_prefix(snapshot.end_offset)
    cluster.append(leader)
    cluster.start(OBSERVER)
    observer = cluster.cores[OBSERVER]
    assert cluster.run(lambda: _caught_up(observer, leader_core))
    assert observer.log.snapshot == snapshot and observer.log.start_offset == snapshot.end_offset
    assert cluster.violations == []


def test_an_observer_that_believes_it_votes_is_caught_by_the_invariants() -> None:
    """Proves the checks have teeth: a misconfigured node 4 (a voter in its own eyes only) canvasses votes."""
    cluster, _ = _cluster_with_leader()
    cluster.start(OBSERVER, voters=(*VOTERS, OBSERVER))
    cluster.crash(next(n for n in VOTERS if cluster.cores[n].role is Role.LEADER), lose_unflushed=False)
    assert cluster.run(lambda: bool(cluster.violations))
    assert any("non-voter 4" in v or "observer 4 became" in v for v in cluster.violations), cluster.violations


@pytest.mark.slow  # make check leaves it to make test
def test_seeded_scenarios_with_an_observer_hold_every_invariant() -> None:
    caught_up = 0
    for seed in range(60):
        simulation = Simulation(seed, observer=True)
        result = simulation.run()
        assert result.violations == (), (seed, result.violations[:1])
        core = simulation.nodes[simulation.observers[0]].core
        caught_up += core is not None and core.high_watermark > 0
    assert caught_up >= 57  # not vacuous: observers do replicate the committed log


def test_config_lists_observers_and_start_accepts_their_ids(tmp_path: Path) -> None:
    path = tmp_path / "quorum.toml"
    path.write_text('[voters]\n1 = "127.0.0.1:1"\n2 = "127.0.0.1:2"\n3 = "127.0.0.1:3"\n'
                    '[observers]\n7 = "127.0.0.1:7"\n')
    config = load_config(path)
    assert config.observers == {7: ("127.0.0.1", 7)} and sorted(config.nodes) == [1, 2, 3, 7]
    raft = config.raft_config(7)
    assert raft.voters == (1, 2, 3) and 7 not in raft.bootstrap_voters and raft.bootstrap_voters.majority == 2
    with pytest.raises(SettingsError, match="neither a voter"):
        config.raft_config(8)
    path.write_text('[voters]\n1 = "127.0.0.1:1"\n[observers]\n1 = "127.0.0.1:7"\n')
    with pytest.raises(SettingsError, match="both voters and observers"):
        load_config(path)
