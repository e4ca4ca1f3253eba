"""The embedded default as real processes: the local broker and three controller processes (each a Raft
voter with its controller, admin API and publisher), configured on free loopback ports under one folder.
Used by `make run` and by the end-to-end tests."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from kraftlake.cli.broker import LocalBroker
from kraftlake.cli.kafka_node import free_ports
from kraftlake.controller.admin_client import AdminClient, AdminError
from kraftlake.raft.config import load_config
from kraftlake.raft.server import AppendSession
from kraftlake.records import decode_batch
from kraftlake.records.topic import message_value
from kraftlake.settings import DEFAULT_TOPIC

TOPIC = DEFAULT_TOPIC
REPO = Path(__file__).resolve().parents[2]


class LocalCluster:
    """Three controllers publishing into `broker`; `max_records_per_batch` small makes transactions likely."""

    def __init__(self, root: Path, broker: LocalBroker, *, max_records_per_batch: int = 10_000,
                 topic: str = TOPIC, spare_controller: bool = False) -> None:
        """`spare_controller`: a dynamic quorum (kraft.version 1) plus controller 4 as an observer, ready to be
        added as a voter (`change_voters`)."""
        self.root = root
        self.broker = broker
        self.topic = topic
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        root.mkdir(parents=True, exist_ok=True)
        nodes = 4 if spare_controller else 3
        raft_ports, admin_ports = free_ports(nodes), free_ports(nodes)
        self.admin_addresses = [f"127.0.0.1:{port}" for port in admin_ports]
        voters = "\n".join(f'{n} = "127.0.0.1:{port}"' for n, port in enumerate(raft_ports[:3], start=1))
        dynamic = f'kraft_version = 1\n[observers]\n4 = "127.0.0.1:{raft_ports[3]}"\n' if spare_controller else ""
        (root / "quorum.toml").write_text(
            f'[quorum]\ndata_dir = "{root / "quorum"}"\n{dynamic}[voters]\n{voters}\n'
        )
        admins = "\n".join(f'{n} = "{address}"' for n, address in enumerate(self.admin_addresses, start=1))
        (root / "controller.toml").write_text(
            f"[controller]\nmax_records_per_batch = {max_records_per_batch}\ndefault_replication_factor = 3\n"
            f"[admin.addresses]\n{admins}\n[publisher]\ntopic = \"{topic}\"\n"
        )
        self.admin = AdminClient(self.admin_addresses)

    def arm(self, failpoint: str) -> None:
        """Arm a failpoint in every controller process (see the failpoints package); `disarm` ends it."""
        self._failpoint_file.write_text(failpoint)

    def disarm(self) -> None:
        self._failpoint_file.unlink(missing_ok=True)

    @property
    def _failpoint_file(self) -> Path:
        return self.root / "failpoint"

    def log_dir(self, node: int) -> Path:
        return self.root / "quorum" / f"node-{node}" / "__cluster_metadata-0"

    def start(self) -> None:
        for node in (1, 2, 3):
            self.start_controller(node)

    def start_controller(self, node: int) -> None:
        log = (self.root / f"controller-{node}.log").open("ab")
        self.processes[node] = subprocess.Popen(
            [sys.executable, "-m", "kraftlake.cli.main", "controller", "start", "--node-id", str(node),
             "--quorum-config", str(self.root / "quorum.toml"), "--config", str(self.root / "controller.toml"),
             "--bootstrap-servers", self.broker.bootstrap_servers],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "KRAFTLAKE_FAILPOINT_FILE": str(self._failpoint_file)},
        )

    def kill(self, node: int) -> None:
        process = self.processes.pop(node)
        process.send_signal(signal.SIGKILL)
        process.wait()

    def wait_for_death(self, timeout_s: float = 30.0) -> int:
        """The node id of the first controller process to exit (one armed to die), once one has."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            for node, process in self.processes.items():
                if process.poll() is not None:
                    del self.processes[node]
                    return node
            time.sleep(0.1)
        raise RuntimeError(f"no controller process exited within {timeout_s:.0f} s")

    def stop(self) -> None:
        for node, process in list(self.processes.items()):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            del self.processes[node]

    def change_voters(self, add: bool, node: int, deadline_s: float = 60.0) -> dict[str, Any]:
        """AddRaftVoter / RemoveRaftVoter through the quorum leader, retried through catch-up and elections;
        returns `{"offset", "epoch", "voters"}` once the new voter set committed it."""
        config = load_config(self.root / "quorum.toml")

        async def run() -> dict[str, Any]:
            session = AppendSession(config, timeout=10.0)
            try:
                end = time.monotonic() + deadline_s
                while time.monotonic() < end:
                    response = await session.change_voters(add, node)
                    if "offset" in response:
                        return response
                    await asyncio.sleep(0.2)
                raise RuntimeError(f"voter change of node {node} not done within {deadline_s:.0f} s: {response}")
            finally:
                session.close()

        return asyncio.run(run())

    def wait_for_controller(self, excluding: int | None = None, deadline_s: float = 60.0) -> int:
        """The active controller's node id, once one other than `excluding` has committed something."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            with contextlib.suppress(AdminError, OSError):
                view = self.admin.describe()
                if view["leader_id"] not in (None, excluding) and view["committed_offset"] >= 0:
                    return int(view["leader_id"])
            time.sleep(0.2)
        raise RuntimeError(f"no active controller within {deadline_s:.0f} s (see {self.root}/controller-*.log)")

    def topic_exists(self, name: str) -> bool:
        try:
            self.admin.describe_topic(name)
        except AdminError:
            return False
        return True

    def wait_published(self, deadline_s: float = 60.0) -> int:
        """Until the topic's last batch reaches the offset committed when asked; returns that offset."""
        target = int(self.admin.describe()["committed_offset"])
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if self.topic_last_offset() >= target:
                return target
            time.sleep(0.5)
        raise RuntimeError(f"the publisher did not reach offset {target} within {deadline_s:.0f} s")

    def topic_end(self) -> int:
        """The topic's high watermark: the Kafka offset after its last message."""
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap_servers, "group.id": "kraftlake-cluster"})
        try:
            return consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10)[1]
        finally:
            consumer.close()

    def topic_last_offset(self) -> int:
        """The metadata offset that ends the topic's last batch (-1: empty)."""
        high = self.topic_end()
        if high <= 0:
            return -1
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap_servers, "group.id": "kraftlake-cluster"})
        try:
            consumer.assign([TopicPartition(self.topic, 0, high - 1)])
            message = consumer.poll(10)
            if message is None or message.error():
                return -1
            return decode_batch(message_value(message)).last_offset
        finally:
            consumer.close()
