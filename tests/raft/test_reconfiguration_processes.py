"""Dynamic quorum (KIP-853) with real processes on loopback: a fourth voter joins under write load, a voter is
removed while the leader is SIGKILLed, the CLI adds it back; nothing committed is lost and the new voter
set is in force."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftlake.cli.main import main
from kraftlake.raft.server import AppendSession
from kraftlake.raft.voters import default_directory_id
from tests.harness.processes import QuorumProcesses
from tests.raft.test_processes import _append_until, _node_batches

pytestmark = pytest.mark.integration


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[QuorumProcesses]:
    processes = QuorumProcesses(tmp_path, voters=3, observers=1, quorum="kraft_version = 1")
    processes.start_all()
    try:
        yield processes
    finally:
        processes.stop_all()


async def _change_until_done(session: AppendSession, add: bool, node: int, stop: float) -> dict[str, Any]:
    """Retry through catch-up, a pending change and elections; a removal a new leader already committed
    answers VOTER_NOT_FOUND."""
    while time.monotonic() < stop:
        response = await session.change_voters(add, node)
        if "offset" in response or (not add and response.get("error") == "VOTER_NOT_FOUND"):
            return response
        await asyncio.sleep(0.1)
    raise AssertionError(f"voter change of node {node} not done: {response}")


def _voters(quorum: QuorumProcesses, excluding: int | None = None) -> list[int]:
    return sorted(quorum.wait_for_leader(excluding=excluding)["voters"])


def test_add_a_fourth_voter_under_load_then_remove_one_while_the_leader_is_killed(quorum: QuorumProcesses) -> None:
    first = quorum.wait_for_leader()
    leader = first["leaderId"]
    committed: dict[int, int] = {}

    async def add_under_load() -> dict[str, Any]:
        writes, changes = AppendSession(quorum.config, timeout=5.0), AppendSession(quorum.config, timeout=5.0)
        try:
            load = asyncio.create_task(_append_until(writes, committed, time.monotonic() + 60, want=40))
            added = await _change_until_done(changes, True, 4, time.monotonic() + 60)
            await load
            return added
        finally:
            writes.close()
            changes.close()

    added = asyncio.run(add_under_load())
    assert added["voters"] == [1, 2, 3, 4] and len(committed) >= 40
    assert _voters(quorum) == [1, 2, 3, 4]

    victim = next(node for node in (1, 2, 3) if node != leader)

    async def remove_while_leader_dies() -> None:
        writes, changes = AppendSession(quorum.config, timeout=5.0), AppendSession(quorum.config, timeout=5.0)
        try:
            load = asyncio.create_task(_append_until(writes, committed, time.monotonic() + 60, want=30))
            change = asyncio.create_task(_change_until_done(changes, False, victim, time.monotonic() + 60))
            await asyncio.sleep(0.02)
            quorum.kill(leader)  # SIGKILL, possibly with the VotersRecord appended but not yet committed
            await change
            await load
        finally:
            writes.close()
            changes.close()

    asyncio.run(remove_while_leader_dies())
    remaining = [node for node in (1, 2, 3, 4) if node != victim]
    assert _voters(quorum, excluding=leader) == remaining

    # the CLI puts the removed node (still running, now an observer) back
    assert main(["quorum", "add-voter", "--node-id", str(victim), "--config", str(quorum.config_path)]) == 0
    final = quorum.wait_for_leader(excluding=leader)
    assert sorted(final["voters"]) == [1, 2, 3, 4]
    addresses = quorum.config.nodes  # every voter's endpoint in the VotersRecord is its Raft address
    assert sorted(final["currentVoters"], key=lambda v: v["id"]) == [
        {"id": n, "directoryId": default_directory_id(n), "endpoints": [f"CONTROLLER://{host}:{port}"]}
        for n, (host, port) in sorted(addresses.items())
    ]
    batches = _node_batches(quorum, final["leaderId"])
    held = {last: epoch for last, epoch, _ in batches.values()}
    lost = {offset: epoch for offset, epoch in committed.items() if held.get(offset) != epoch}
    assert lost == {}, f"committed batches missing from the new leader's log: {lost}"


def test_an_observer_with_auto_join_becomes_a_voter(tmp_path: Path) -> None:
    processes = QuorumProcesses(tmp_path, voters=3, observers=1, quorum="kraft_version = 1\nauto_join = true")
    processes.start_all()
    try:
        deadline = time.monotonic() + 60
        while _voters(processes) != [1, 2, 3, 4]:
            assert time.monotonic() < deadline, "observer 4 never joined the voters"
            time.sleep(0.2)
    finally:
        processes.stop_all()
