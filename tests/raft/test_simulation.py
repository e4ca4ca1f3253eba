"""The deterministic simulation: a few hundred seeded fault scenarios hold every invariant, and each
deliberately broken variant of the core is caught by those same invariants."""

from __future__ import annotations

import pytest

from kraftlake.cli.main import main
from kraftlake.raft.core import BugFlags
from kraftlake.raft.election_state import ElectionState
from kraftlake.raft.roles import Role
from kraftlake.raft.simulation import Simulation
from tests.raft.scripted import ScriptedCluster, batch

SEEDS = range(300)


@pytest.mark.slow  # make check leaves it to make test
def test_seeded_scenarios_hold_every_invariant() -> None:
    failures = [(seed, r.violations[0]) for seed in SEEDS if (r := Simulation(seed).run()).violations]
    assert failures == []


def test_scenarios_do_real_work() -> None:
    """Guards against a vacuous pass: scenarios elect several leaders and commit many batches."""
    results = [Simulation(seed).run() for seed in range(20)]
    assert sum(r.committed_offsets for r in results) > 20 * 30
    assert max(r.max_epoch for r in results) >= 3


def test_a_seed_is_deterministic() -> None:
    first = Simulation(42, trace=True).run()
    second = Simulation(42, trace=True).run()
    assert first.trace == second.trace and len(first.trace) > 100


@pytest.mark.parametrize("bug", ["vote_without_log_check", "truncate_below_high_watermark"])
def test_broken_variants_are_caught_by_random_scenarios(bug: str) -> None:
    bugs = BugFlags(**{bug: True})
    caught = [seed for seed in range(60) if Simulation(seed, bugs=bugs).run().violations]
    assert caught, f"{bug} went unnoticed in 60 scenarios"


def _figure_eight(bugs: BugFlags) -> ScriptedCluster:
    """Raft's figure 8 on three nodes. Node 1 led epoch 2 and wrote offset 1 only locally; node 2 led epoch 3
    and wrote a different offset 1 only locally; node 3 has offset 0 only. Node 1 wins epoch 4 with node 3,
    replicates its epoch-2 batch to node 3 (one batch per fetch) — then both crash before node 3 makes the
    epoch-4 batch durable. Node 2 (last epoch 3) is elected by node 3 and overwrites offset 1."""
    cluster = ScriptedCluster(bugs)
    shared = batch(0, 1)
    cluster.preload(1, [shared, batch(1, 2)], ElectionState(3, None, None))
    cluster.preload(2, [shared, batch(1, 3)], ElectionState(3, 2, 2))
    cluster.preload(3, [shared], ElectionState(3, 2, 2))
    cluster.start(1)
    cluster.start(3)
    assert cluster.run(lambda: cluster.cores[1].role is Role.LEADER and cluster.cores[1].epoch == 4)
    assert cluster.run(lambda: cluster.cores[3].log.end_offset == 3)
    cluster.crash(3, lose_unflushed=True)
    cluster.crash(1, lose_unflushed=False)
    cluster.start(2)
    cluster.start(3)
    node_2_leads = lambda: 2 in cluster.cores and cluster.cores[2].role is Role.LEADER  # noqa: E731
    assert cluster.run(lambda: node_2_leads() or bool(cluster.violations))
    return cluster


def test_figure_eight_is_safe_with_the_epoch_commit_rule() -> None:
    cluster = _figure_eight(BugFlags())
    assert cluster.violations == []
    assert cluster.cores[2].role is Role.LEADER and cluster.cores[2].epoch == 5


def test_high_watermark_on_a_prior_epoch_entry_is_caught() -> None:
    cluster = _figure_eight(BugFlags(commit_prior_epoch_entries=True))
    assert any("lacks committed batch at offset 1" in v for v in cluster.violations), cluster.violations


def test_simulate_command_reports_scenarios_and_violations(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quorum", "simulate", "--seeds", "5", "--start-seed", "100"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "5 scenarios, 0 violations"


def test_simulate_command_prints_the_failing_seed_and_its_trace(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = main(["quorum", "simulate", "--seeds", "12", "--bug", "truncate_below_high_watermark"])
    out = capsys.readouterr().out
    assert exit_code == 1
    assert "failed:" in out and "trace of seed" in out and "VIOLATION" in out
    assert out.strip().splitlines()[-1].startswith("12 scenarios, ")
    assert not out.strip().endswith(", 0 violations")


@pytest.mark.slow  # make check leaves it to make test
def test_reconfiguration_scenarios_hold_every_invariant() -> None:
    results = [Simulation(seed, reconfigure=True).run() for seed in range(1000, 1100)]
    assert [(r.seed, r.violations[0]) for r in results if r.violations] == []
    assert sum(r.voter_changes for r in results) > 100  # voters really came and went


@pytest.mark.parametrize("bug", ["concurrent_voter_changes", "count_old_majority"])
def test_broken_reconfigurations_are_caught(bug: str) -> None:
    bugs = BugFlags(**{bug: True})
    caught = [seed for seed in range(40) if Simulation(seed, bugs=bugs, reconfigure=True).run().violations]
    assert caught, f"{bug} went unnoticed in 40 reconfiguration scenarios"
