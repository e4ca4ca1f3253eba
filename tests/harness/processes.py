"""Launch real quorum processes on loopback (for the integration tests and the benchmark): free ports, a
config file in a scratch directory, `python -m kraftlake.cli.main quorum start` (or `controller start`) per
voter and observer, SIGKILL and restart."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kraftlake.cli.local_cluster import REPO, free_ports
from kraftlake.raft.config import QuorumConfig, load_config
from kraftlake.raft.server import QuorumUnavailable, describe_quorum


class QuorumProcesses:
    def __init__(self, root: Path, voters: int = 3, quorum: str = "", observers: int = 0) -> None:
        """`quorum`: extra lines of the [quorum] section (e.g. timeouts, segment_bytes). Voters are nodes
        1..voters, observers the ids after them."""
        self.root = root
        ports = free_ports(voters + observers)
        lines = ["[quorum]", f'data_dir = "{root / "data"}"', quorum, "[voters]"]
        lines += [f'{node} = "127.0.0.1:{port}"' for node, port in enumerate(ports[:voters], start=1)]
        lines += ["[observers]"]
        lines += [f'{node} = "127.0.0.1:{port}"' for node, port in enumerate(ports[voters:], start=voters + 1)]
        self.config_path = root / "quorum.toml"
        self.config_path.write_text("\n".join(lines) + "\n")
        self.config: QuorumConfig = load_config(self.config_path)
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    def command(self, node: int) -> list[str]:
        return [sys.executable, "-m", "kraftlake.cli.main", "quorum", "start", "--node-id", str(node),
                "--config", str(self.config_path)]

    def start(self, node: int) -> None:
        with (self.root / f"node-{node}.out").open("ab") as log:
            self.processes[node] = subprocess.Popen(self.command(node), cwd=REPO, stdout=log, stderr=subprocess.STDOUT)

    def start_all(self) -> None:
        for node in self.config.nodes:
            self.start(node)

    def kill(self, node: int) -> None:
        process = self.processes.pop(node)
        process.send_signal(signal.SIGKILL)
        process.wait()

    def stop(self, node: int, timeout_s: float = 10.0) -> int:
        """SIGTERM (graceful), SIGKILL after `timeout_s`; returns the exit code."""
        process = self.processes.pop(node)
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()

    def stop_all(self) -> None:
        for node in list(self.processes):
            self.stop(node)

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


class ControllerProcesses(QuorumProcesses):
    """`kraftlake controller start` per voter: the quorum plus the controller, its admin API on a free port
    and (given a broker) the publisher into `topic`."""

    def __init__(
        self, root: Path, bootstrap_servers: str | None, topic: str, voters: int = 3, *, quorum: str = "",
        controller: str = "",
    ) -> None:
        """`controller`: extra lines of the [controller] section."""
        super().__init__(root, voters, quorum)
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        admin_ports = free_ports(voters)
        self.admin_addresses = {node: f"127.0.0.1:{port}" for node, port in zip(self.config.voters, admin_ports,
                                                                                 strict=True)}
        lines = ["[controller]", controller, "[admin.addresses]"]
        lines += [f'{node} = "{address}"' for node, address in self.admin_addresses.items()]
        lines += ["[publisher]", f'topic = "{topic}"']
        self.controller_config_path = root / "controller.toml"
        self.controller_config_path.write_text("\n".join(lines) + "\n")

    def command(self, node: int) -> list[str]:
        command = [sys.executable, "-m", "kraftlake.cli.main", "controller", "start", "--node-id", str(node),
                   "--quorum-config", str(self.config_path), "--config", str(self.controller_config_path)]
        if self.bootstrap_servers is None:
            return [*command, "--no-publisher"]
        return [*command, "--bootstrap-servers", self.bootstrap_servers]

    def output(self, node: int) -> str:
        return (self.root / f"node-{node}.out").read_text(errors="replace")
