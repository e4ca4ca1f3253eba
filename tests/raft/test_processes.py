"""Three quorum processes on loopback: leader SIGKILL under write load, rejoin and catch-up, a full
restart from disk, and the log files decode as Kafka's format."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftlake.cli.main import main
from kraftlake.raft.log import LOG_DIR_NAME
from kraftlake.raft.server import AppendSession
from kraftlake.records import MetadataLogDir
from tests.harness.processes import QuorumProcesses

pytestmark = pytest.mark.integration


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[QuorumProcesses]:
    processes = QuorumProcesses(tmp_path)
    processes.start_all()
    try:
        yield processes
    finally:
        processes.stop_all()


async def _append_until(session: AppendSession, committed: dict[int, int], stop: float, want: int) -> None:
    """Append until `want` more batches commit or the deadline; records offset -> epoch of each commit."""
    goal = len(committed) + want
    while len(committed) < goal and time.monotonic() < stop:
        response = await session.append()
        if "offset" in response:
            committed[response["offset"]] = response["epoch"]
        else:
            await asyncio.sleep(0.05)


def _node_batches(quorum: QuorumProcesses, node: int) -> dict[int, tuple[object, ...]]:
    log_dir = MetadataLogDir(quorum.config.node_dir(node) / LOG_DIR_NAME)
    return {
        batch.base_offset: (batch.last_offset, batch.partition_leader_epoch, tuple(batch.records))
        for batch in log_dir.log_batches()
    }


def test_leader_sigkill_under_load_fails_over_and_the_node_rejoins(quorum: QuorumProcesses) -> None:
    first = quorum.wait_for_leader()
    committed: dict[int, int] = {}

    async def load() -> None:
        session = AppendSession(quorum.config, timeout=5.0)
        try:
            await _append_until(session, committed, time.monotonic() + 30, want=30)
            quorum.kill(first["leaderId"])
            # a generous deadline, not a speed assertion: the new leader must commit new writes
            await _append_until(session, committed, time.monotonic() + 30, want=30)
        finally:
            session.close()

    asyncio.run(load())
    assert len(committed) >= 60, f"only {len(committed)} batches committed around the failover"
    assert max(committed.values()) > first["leaderEpoch"]
    second = quorum.wait_for_leader(excluding=first["leaderId"])

    quorum.start(first["leaderId"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        view = quorum.wait_for_leader()
        rejoined = {r["nodeId"]: r for r in view["replicas"]}[first["leaderId"]]
        if rejoined["lag"] == 0 and rejoined["logEndOffset"] >= max(committed) + 1:
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"node {first['leaderId']} did not catch up: {view}")
    assert second["leaderEpoch"] > first["leaderEpoch"]
    quorum.stop_all()

    logs = {node: _node_batches(quorum, node) for node in quorum.config.voters}
    for offset, epoch in committed.items():
        copies = {node: logs[node].get(offset) for node in logs}
        assert all(copy is not None for copy in copies.values()), f"committed offset {offset} missing: {copies}"
        assert len(set(copies.values())) == 1, f"committed offset {offset} differs between nodes"
        leader_copy = copies[first["leaderId"]]
        assert leader_copy is not None and leader_copy[1] == epoch


def test_the_whole_quorum_restarts_from_disk(quorum: QuorumProcesses, capsys: pytest.CaptureFixture[str]) -> None:
    """All three SIGKILLed, the shortest log's last batch torn (as if its unflushed tail was lost), all restarted.

    The shortest log loses only a batch both other logs hold, which is what Raft tolerates; tearing a longer
    log's last batch could destroy the only other copy of an acknowledged entry (fsynced data, not a tail)."""
    quorum.wait_for_leader()
    committed: dict[int, int] = {}

    async def write(want: int) -> None:
        session = AppendSession(quorum.config, timeout=5.0)
        try:
            await _append_until(session, committed, time.monotonic() + 30, want=want)
        finally:
            session.close()

    asyncio.run(write(20))
    for node in list(quorum.processes):
        quorum.kill(node)
    before = {node: _node_batches(quorum, node) for node in quorum.config.voters}
    torn = min(quorum.config.voters, key=lambda node: (max(before[node], default=-1), node))
    last_segment = max((quorum.config.node_dir(torn) / LOG_DIR_NAME).glob("*.log"))
    with last_segment.open("r+b") as handle:
        handle.truncate(last_segment.stat().st_size - 7)
    quorum.start_all()
    # A new leader reports a high watermark as soon as its epoch commits; everything committed before the
    # crash must be under it once it has (a generous deadline, not a speed assertion).
    deadline = time.monotonic() + 30
    view = quorum.wait_for_leader()
    while view["highWatermark"] < max(committed) + 1 and time.monotonic() < deadline:
        time.sleep(0.2)
        view = quorum.wait_for_leader()
    assert view["highWatermark"] >= max(committed) + 1, view
    asyncio.run(write(5))
    quorum.stop_all()
    for node in quorum.config.voters:
        after = _node_batches(quorum, node)
        for offset in committed:
            if offset in before[node]:
                assert after[offset] == before[node][offset]
        assert all(offset in after for offset in committed)

    log_dir = quorum.config.node_dir(1) / LOG_DIR_NAME
    assert main(["dump", str(log_dir)]) == 0
    out = capsys.readouterr().out
    assert "NO_OP_RECORD" in out or "NoOpRecord" in out
    assert (log_dir / "quorum-state").exists()
