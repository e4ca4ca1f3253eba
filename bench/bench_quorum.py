"""The Raft quorum with three voter processes on loopback, fsync on: commit latency (one append at a time,
client -> leader -> majority fsync -> response), throughput with 32 concurrent appenders (each batch one
NoOpRecord, the leader fsyncs once per round of appends), and failover time (leader SIGKILL -> first write
committed by the new leader, default timeouts) over 10 trials. Goals (issue 4): p50 commit <= 10 ms;
median failover <= 3 s.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from kraftlake.raft.server import AppendSession
from tests.harness.processes import QuorumProcesses

LATENCY_APPENDS = 500
THROUGHPUT_SECONDS = 5.0
THROUGHPUT_CLIENTS = 32
FAILOVER_TRIALS = 10
GOAL_P50_MS = 10.0
GOAL_FAILOVER_S = 3.0


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _latencies(quorum: QuorumProcesses) -> list[float]:
    session = AppendSession(quorum.config)
    samples: list[float] = []
    try:
        while len(samples) < LATENCY_APPENDS + 50:
            started = time.perf_counter()
            response = await session.append()
            if "offset" in response:
                samples.append((time.perf_counter() - started) * 1000.0)
    finally:
        session.close()
    return samples[50:]  # the first ones warm connections up


async def _throughput(quorum: QuorumProcesses) -> float:
    stop = time.monotonic() + THROUGHPUT_SECONDS
    committed = 0

    async def client() -> None:
        nonlocal committed
        session = AppendSession(quorum.config)
        try:
            while time.monotonic() < stop:
                if "offset" in await session.append():
                    committed += 1
        finally:
            session.close()

    await asyncio.gather(*(client() for _ in range(THROUGHPUT_CLIENTS)))
    return committed / THROUGHPUT_SECONDS


async def _failover_seconds(quorum: QuorumProcesses, view: dict[str, Any]) -> float:
    """Kill the leader while one client appends; time until a write commits in a newer epoch."""
    session = AppendSession(quorum.config, timeout=5.0)
    try:
        for _ in range(5):
            await session.append()
        quorum.kill(view["leaderId"])
        killed_at = time.monotonic()
        while time.monotonic() - killed_at < 60:
            response = await session.append()
            if "offset" in response and response["epoch"] > view["leaderEpoch"]:
                return time.monotonic() - killed_at
            if "offset" not in response:
                await asyncio.sleep(0.01)
        raise RuntimeError("no new leader within 60 s")
    finally:
        session.close()
        quorum.start(view["leaderId"])


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        quorum = QuorumProcesses(Path(scratch))
        quorum.start_all()
        try:
            quorum.wait_for_leader()
            latencies = asyncio.run(_latencies(quorum))
            throughput = asyncio.run(_throughput(quorum))
            failovers = []
            for _ in range(FAILOVER_TRIALS):
                failovers.append(asyncio.run(_failover_seconds(quorum, quorum.wait_for_leader())))
        finally:
            quorum.stop_all()
    p50, p99 = _percentile(latencies, 0.5), _percentile(latencies, 0.99)
    failover = statistics.median(failovers)
    return [
        {"name": "commit latency p50", "value": round(p50, 2), "unit": "ms",
         "notes": f"{LATENCY_APPENDS} sequential 1-record appends, 3 voters, fsync"},
        {"name": "commit latency p99", "value": round(p99, 2), "unit": "ms", "notes": ""},
        {"name": "throughput", "value": round(throughput), "unit": "batches/s",
         "notes": f"{THROUGHPUT_CLIENTS} concurrent appenders for {THROUGHPUT_SECONDS:.0f} s"},
        {"name": "failover median", "value": round(failover, 2), "unit": "s",
         "notes": f"leader SIGKILL -> first commit in a new epoch, {FAILOVER_TRIALS} trials, "
                  f"min {min(failovers):.2f} max {max(failovers):.2f}"},
        {"name": "goal: p50 commit <= 10 ms, median failover <= 3 s",
         "value": "met" if p50 <= GOAL_P50_MS and failover <= GOAL_FAILOVER_S else "NOT met", "unit": "",
         "notes": ""},
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
