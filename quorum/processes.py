"""Launch real quorum processes on loopback (for the integration tests and the benchmark): free ports, a
config file in a scratch directory, `python -m kraftlake.cli quorum start` per voter, SIGKILL and restart."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from quorum.config import QuorumConfig, load_config
from quorum.server import QuorumUnavailable, describe_quorum

REPO = Path(__file__).resolve().parents[1]


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


class QuorumProcesses:
    def __init__(self, root: Path, voters: int = 3) -> None:
        self.root = root
        ports = free_ports(voters)
        lines = ["[quorum]", f'data_dir = "{root / "data"}"', "[voters]"]
        lines += [f'{node} = "127.0.0.1:{port}"' for node, port in enumerate(ports, start=1)]
        self.config_path = root / "quorum.toml"
        self.config_path.write_text("\n".join(lines) + "\n")
        self.config: QuorumConfig = load_config(self.config_path)
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, node: int) -> None:
        log = (self.root / f"node-{node}.out").open("ab")
        self.processes[node] = subprocess.Popen(
            [sys.executable, "-m", "kraftlake.cli", "quorum", "start", "--node-id", str(node),
             "--config", str(self.config_path)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
        )

    def start_all(self) -> None:
        for node in self.config.voters:
            self.start(node)

    def kill(self, node: int) -> None:
        process = self.processes.pop(node)
        process.send_signal(signal.SIGKILL)
        process.wait()

    def stop_all(self) -> None:
        for node in list(self.processes):
            process = self.processes.pop(node)
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def wait_for_leader(self, deadline_s: float = 30.0, excluding: int | None = None) -> dict[str, Any]:
        """The leader's describe view once a leader (other than `excluding`) has committed its epoch."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            with contextlib.suppress(QuorumUnavailable):
                view = asyncio.run(describe_quorum(self.config, timeout=1.0))
                if view["leaderId"] != excluding and view["highWatermark"] > 0:
                    return view
            time.sleep(0.1)
        raise AssertionError(f"no leader within {deadline_s} s")
