"""The embedded default as real processes: the local broker and three controller processes (each a Raft
voter with its controller, admin API and publisher), configured on free loopback ports under one folder.
Used by `make run` and by the end-to-end tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from controller.admin_client import AdminClient, AdminError
from kraftlake.broker import LocalBroker
from records import decode_batch
from settings import DEFAULT_TOPIC

TOPIC = DEFAULT_TOPIC
REPO = Path(__file__).resolve().parents[1]


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports free right now (held open together so none is handed out twice)."""
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


class LocalCluster:
    """Three controllers publishing into `broker`; `max_records_per_batch` small makes transactions likely."""

    def __init__(self, root: Path, broker: LocalBroker, *, max_records_per_batch: int = 10_000,
                 topic: str = TOPIC) -> None:
        self.root = root
        self.broker = broker
        self.topic = topic
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        root.mkdir(parents=True, exist_ok=True)
        raft_ports, admin_ports = free_ports(3), free_ports(3)
        self.admin_addresses = [f"127.0.0.1:{port}" for port in admin_ports]
        voters = "\n".join(f'{n} = "127.0.0.1:{port}"' for n, port in enumerate(raft_ports, start=1))
        (root / "quorum.toml").write_text(f'[quorum]\ndata_dir = "{root / "quorum"}"\n[voters]\n{voters}\n')
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
            [sys.executable, "-m", "kraftlake.cli", "controller", "start", "--node-id", str(node),
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
            return decode_batch(message.value()).last_offset
        finally:
            consumer.close()
