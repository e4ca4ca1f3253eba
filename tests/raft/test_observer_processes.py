"""Three voters and one observer as real processes on loopback: the observer catches up with the committed
log, the leader describes it, and after the leader is SIGKILLed the observer follows the new leader."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftlake.raft.log import LOG_DIR_NAME
from kraftlake.raft.server import AppendSession, print_describe
from kraftlake.raft.transport import request
from kraftlake.records import MetadataLogDir
from tests.harness.processes import QuorumProcesses

pytestmark = pytest.mark.integration

OBSERVER = 4


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[QuorumProcesses]:
    processes = QuorumProcesses(tmp_path, observers=1)
    processes.start_all()
    try:
        yield processes
    finally:
        processes.stop_all()


def _describe(quorum: QuorumProcesses, node: int) -> dict[str, Any] | None:
    host, port = quorum.config.nodes[node]
    with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
        return asyncio.run(request(host, port, {"kind": "describe"}, 1.0))
    return None


def _wait_for(what: str, check: Callable[[], dict[str, Any] | None], deadline_s: float = 30.0) -> dict[str, Any]:
    """Polls until `check` returns a view; the deadline is generous: a hang guard, not a speed assertion."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        view = check()
        if view is not None:
            return view
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {deadline_s} s")


def _append(quorum: QuorumProcesses, count: int) -> int:
    """Appends `count` batches through the leader, one after the other; returns the last committed offset."""

    async def run() -> list[int]:
        session = AppendSession(quorum.config, timeout=5.0)
        offsets: list[int] = []
        end = time.monotonic() + 30
        try:
            while len(offsets) < count and time.monotonic() < end:
                response = await session.append()
                if "offset" in response:
                    offsets.append(response["offset"])
                else:
                    await asyncio.sleep(0.05)
        finally:
            session.close()
        return offsets

    offsets = asyncio.run(run())
    assert len(offsets) == count, f"only {len(offsets)} of {count} appends committed"
    return offsets[-1]


def _observer_caught_up(quorum: QuorumProcesses, leader: int, end: int) -> Callable[[], dict[str, Any] | None]:
    """The observer follows `leader` and knows the log committed up to `end`."""

    def check() -> dict[str, Any] | None:
        view = _describe(quorum, OBSERVER)
        if view is not None and view["leaderId"] == leader and view["highWatermark"] >= end:
            return view
        return None

    return check


def _batches(quorum: QuorumProcesses, node: int) -> dict[int, tuple[object, ...]]:
    log_dir = MetadataLogDir(quorum.config.node_dir(node) / LOG_DIR_NAME)
    return {b.base_offset: (b.last_offset, b.partition_leader_epoch, tuple(b.records)) for b in log_dir.log_batches()}


def test_an_observer_replicates_and_follows_the_new_leader_after_a_sigkill(
    quorum: QuorumProcesses, capsys: pytest.CaptureFixture[str]
) -> None:
    first = quorum.wait_for_leader()
    leader = first["leaderId"]
    last = _append(quorum, 20)
    view = _wait_for("observer catches up", _observer_caught_up(quorum, leader, last + 1))
    assert (view["role"], view["state"]) == ("Observer", "Follower")
    assert view["logEndOffset"] >= last + 1 and OBSERVER not in view["voters"]

    def leader_tracks_observer() -> dict[str, Any] | None:
        described = quorum.wait_for_leader()
        rows = {row["nodeId"]: row for row in described["observers"]}
        return described if rows.get(OBSERVER, {}).get("logEndOffset", -1) >= last + 1 else None

    described = _wait_for("leader lists the observer", leader_tracks_observer)
    assert OBSERVER not in {row["nodeId"] for row in described["replicas"]}
    print_describe(described)
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert any(row[0] == str(OBSERVER) and row[-1] == "Observer" for row in rows if row)

    quorum.kill(leader)
    second = quorum.wait_for_leader(excluding=leader)
    last = _append(quorum, 5)
    view = _wait_for("observer follows the new leader",
                     _observer_caught_up(quorum, second["leaderId"], last + 1))
    assert view["leaderEpoch"] > first["leaderEpoch"]

    quorum.stop_all()
    observed = _batches(quorum, OBSERVER)
    voter = _batches(quorum, second["leaderId"])
    committed = [offset for offset in voter if offset <= last]
    assert committed and all(observed.get(offset) == voter[offset] for offset in committed)
