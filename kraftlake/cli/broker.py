"""The embedded local Kafka broker: one Apache Kafka 4.4.0 node (broker and controller in one JVM, a
standalone KRaft quorum) on loopback, from the `kafka` jar set (`make jars`).

It is the default broker of `make run` and of the tests; users point the project at their own cluster instead
(see `kraftlake.cli.config.resolve_bootstrap`). A small JSON state file (pid, host, port) in the data directory
lets another process (`kraftlake broker status|stop`) find a broker it did not start. The node itself is
`kraftlake.cli.kafka_node.KafkaNode`; its files (`server.properties`, `server.log`, `logs/`) are in the same
data directory.

What was checked about Kafka here (4.4.0, these machines):

- Start-up is 2.5 s to the first answered metadata request on a quiet machine (7 s with the load average at
  24), 170 MB resident with the small heap; the C1-only JIT starts it 2-3x faster than C2 or G1 (figures:
  `bench/bench_broker.py`, BENCHMARKS.md). A clean stop (SIGTERM) takes about 0.4 s.
- SIGKILL loses nothing that was acknowledged: Kafka appends to the page cache, which outlives the process
  (only a machine crash could lose unflushed writes). After a SIGKILL the new incarnation registers once the
  old one's session expired (`broker.session.timeout.ms`, lowered to 3 s here; 9 s by default).
- Message size: the topic gets one message per Raft batch, up to 8 MiB in Kafka's own logs, while Kafka and
  librdkafka allow 1 MiB by default. The broker's `message.max.bytes`, the metadata topic's
  `max.message.bytes` and the publisher's producer are all raised to `kraftlake.records.topic.MAX_MESSAGE_BYTES`.
  Fetches honour `fetch.max.bytes` (KIP-74: at least one whole batch per fetch), so librdkafka's default
  `receive.message.max.bytes` (100 MB) is enough: nothing needs the 2 GiB the former broker did.
- Retention: 7 days by default (`log.retention.hours`), so the metadata topic is created with
  `retention.ms=-1` and `retention.bytes=-1`.
- Transactions and read_committed are Kafka's own: the former broker's bug (a read_committed fetch past an
  aborted transaction dropped that producer's later commits) is gone, and so is its canary test.
- A taken port: Kafka exits with "Address already in use"; the launcher checks the ports before starting,
  so the readiness probe never talks to another listener. A second node on the same data dir is refused by
  the state file (and Kafka's own lock on the log dir).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from kraftlake.cli.kafka_node import CONFIG_FILE, HOST, LOG_DIR, KafkaNode, KafkaNodeError, PortInUseError, kafka_uuid

STATE_FILE = "kraftlake-broker.json"
BrokerError = KafkaNodeError  # one error for the node and the broker around it
# One node is the whole cluster: Kafka's internal topics default to replication factor 3 and 50 partitions.
SINGLE_NODE_PROPERTIES = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}

__all__ = ["HOST", "STATE_FILE", "BrokerError", "BrokerState", "LocalBroker", "PortInUseError"]


def default_data_dir() -> Path:
    """`run/broker` under the current directory: `make clean` removes `run/`, and git ignores it."""
    return Path.cwd() / "run" / "broker"


@dataclass(frozen=True)
class BrokerState:
    """What the state file records about a started broker."""

    pid: int
    host: str
    port: int

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"


def read_state(data_dir: Path) -> BrokerState | None:
    """The state file's content, or None when there is none (never started, or stopped)."""
    try:
        raw = json.loads((data_dir / STATE_FILE).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise BrokerError(f"unreadable broker state file {data_dir / STATE_FILE}: {error}") from error
    return BrokerState(pid=int(raw["pid"]), host=str(raw["host"]), port=int(raw["port"]))


def running_broker(data_dir: Path) -> BrokerState | None:
    """The broker recorded for this data dir if its process is still alive, else None (a stale file)."""
    data_dir = data_dir.resolve()
    state = read_state(data_dir)
    if state is None or not _is_live_broker(state.pid, data_dir):
        return None
    return state


def stop_broker(data_dir: Path, grace: float = 20.0) -> BrokerState | None:
    """Stop the broker of a data dir that any process started; returns what was stopped, None if nothing was."""
    data_dir = data_dir.resolve()
    state = running_broker(data_dir)
    if state is not None:
        os.kill(state.pid, signal.SIGTERM)
        if not _wait_gone(state.pid, data_dir, grace):
            os.kill(state.pid, signal.SIGKILL)
            _wait_gone(state.pid, data_dir, grace)
    with contextlib.suppress(FileNotFoundError):
        (data_dir / STATE_FILE).unlink()
    return state


def _is_live_broker(pid: int, data_dir: Path) -> bool:
    """True if `pid` runs Kafka on this data dir's config and is not a zombie: a recycled pid does not count."""
    proc = Path("/proc") / str(pid)
    if not Path("/proc/self").is_dir():  # no procfs (macOS): the signal probe is all there is
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # alive, owned by another user
            pass
        return True
    try:
        cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        process_state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return process_state != "Z" and os.fsencode(str(data_dir / CONFIG_FILE)) in cmdline


def _wait_gone(pid: int, data_dir: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _is_live_broker(pid, data_dir):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class LocalBroker:
    """One Kafka node (broker + controller, standalone quorum) on a loopback port with its own data dir.

    The port is picked once (free, or the one given; an existing data dir keeps its own) and kept across
    `restart()`, so clients and state files stay valid. The first start formats the storage. `detach=True`
    puts the JVM in its own session so it outlives the starting process (the CLI); otherwise it is a plain
    child that the owner must stop.
    """

    def __init__(
        self,
        data_dir: Path | str,
        port: int | None = None,
        *,
        host: str = HOST,
        startup_timeout: float = 90.0,
        detach: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self._requested_port = port
        self._node = self._new_node(startup_timeout, detach)

    def _new_node(self, startup_timeout: float, detach: bool) -> KafkaNode:
        return KafkaNode(
            self.data_dir, broker_port=self._requested_port, properties=SINGLE_NODE_PROPERTIES, host=self.host,
            startup_timeout=startup_timeout, detach=detach,
        )  # fmt: skip

    @property
    def node(self) -> KafkaNode:
        return self._node

    @property
    def port(self) -> int:
        return self._node.broker_port

    @property
    def bootstrap_servers(self) -> str:
        return self._node.bootstrap_servers

    @property
    def log_path(self) -> Path:
        return self._node.log_path

    @property
    def pid(self) -> int | None:
        return self._node.pid

    @property
    def running(self) -> bool:
        return self._node.running

    def start(self) -> LocalBroker:
        """Format the storage on the first start, launch Kafka and return once it answers a metadata request."""
        if self.running:
            raise BrokerError(f"the local broker is already running at {self.bootstrap_servers}")
        existing = running_broker(self.data_dir)
        if existing is not None:
            raise BrokerError(
                f"a broker already runs on {self.data_dir} at {existing.bootstrap_servers} "
                f"(pid {existing.pid}); stop it with `kraftlake broker stop --data-dir {self.data_dir}`"
            )
        if self._node.formatted:
            self._node.start()
        else:
            self._start_fresh()
        self._write_state()
        return self

    def _start_fresh(self, attempts: int = 3) -> None:
        """Format and start. Another process can take a free port before Kafka binds it: then, unless the
        port was asked for, wipe the new storage (the controller port is in its voter set) and pick others."""
        for attempt in range(attempts):
            self._node.format(kafka_uuid(), standalone=True)
            try:
                self._node.start()
                return
            except PortInUseError:
                if self._requested_port is not None or attempt + 1 == attempts:
                    raise
                shutil.rmtree(self.data_dir / LOG_DIR)
                (self.data_dir / CONFIG_FILE).unlink()
                self._node = self._new_node(self._node.startup_timeout, self._node.detach)

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM (Kafka shuts down cleanly), SIGKILL if it is still alive after `grace` seconds."""
        pid = self.pid
        self._node.stop(grace)
        self._forget(pid)

    def kill(self) -> None:
        """SIGKILL, as a crash would (acknowledged writes survive: see the module doc)."""
        pid = self.pid
        self._node.kill()
        self._forget(pid)

    def restart(self) -> LocalBroker:
        """Stop (if running) and start again on the same port and data directory."""
        self.stop()
        return self.start()

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _write_state(self) -> None:
        state = {"pid": self.pid, "host": self.host, "port": self.port}
        temporary = self.data_dir / f".{STATE_FILE}.tmp"
        temporary.write_text(json.dumps(state) + "\n")
        temporary.replace(self.data_dir / STATE_FILE)

    def _forget(self, pid: int | None) -> None:
        """Drop the state file when it still names this process."""
        state = read_state(self.data_dir)
        if pid is not None and state is not None and state.pid == pid:
            (self.data_dir / STATE_FILE).unlink()
