"""One Apache Kafka node (KRaft) from the `kafka` jar set: its config, its storage, its JVM.

A node lives in one data directory: `server.properties` (written by `configure()`), `log4j2.properties`,
`server.log` (Kafka's log4j output and the JVM's stdout/stderr) and `logs/` (the log dir, holding
`__cluster_metadata-0`). The listeners are on loopback: a PLAINTEXT broker listener and a CONTROLLER
listener, each on a port chosen by the OS unless given. The ports are read back from an existing
`server.properties`, so a node restarted by another process keeps them (a controller's endpoint is in the
voter set written at format time: it must not move).

Storage is formatted with Kafka's own storage tool (`kafka.tools.StorageTool format`): `--standalone` (a
one-controller dynamic quorum), `--initial-controllers` (kraft.version 1, several controllers) or
`--no-initial-controllers` (a node joining an existing cluster, or a broker).
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kraftlake.cli.errors import UserFacingError
from kraftlake.cli.kafka_tools import java_command, run_tool
from kraftlake.records.topic import MAX_MESSAGE_BYTES

HOST = "127.0.0.1"
BROKER_LISTENER = "PLAINTEXT"
CONTROLLER_LISTENER = "CONTROLLER"
CONFIG_FILE = "server.properties"
LOG4J_FILE = "log4j2.properties"
LOG_FILE = "server.log"
LOG_DIR = "logs"
METADATA_PARTITION = "__cluster_metadata-0"
BROKER, CONTROLLER = "broker", "controller"
# Small heap, serial GC, C1 only: measured fastest to start on 2 shared cores (see bench/bench_broker.py); the
# heap holds 16 MiB messages with room to spare.
NODE_JVM_OPTIONS = (
    "-Xmx256m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)  # fmt: skip
# Kafka's defaults are sized for a server; these fit a node sharing a small machine with others.
SMALL_NODE_PROPERTIES = {
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
    "log.cleaner.dedupe.buffer.size": str(16 << 20),  # 128 MiB by default: half the heap
    "group.initial.rebalance.delay.ms": "0",
    # A node restarted after SIGKILL registers again only once its old session expired (9 s by default).
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    "message.max.bytes": str(MAX_MESSAGE_BYTES),
    "replica.fetch.max.bytes": str(MAX_MESSAGE_BYTES),
}
_LOG4J = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""


class KafkaNodeError(UserFacingError):
    """A Kafka node could not be formatted, started or stopped; the message names its data dir or log."""


class PortInUseError(KafkaNodeError):
    """A port the node must listen on is taken."""


def kafka_uuid() -> str:
    """A random Kafka `Uuid` in its string form (URL-safe base64, no padding), as cluster and directory ids
    are written; like Kafka's `Uuid.randomUuid`, never one that starts with '-' (a command-line flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def free_ports(count: int, host: str = HOST) -> list[int]:
    """`count` distinct ports free right now (held open together, so none is handed out twice)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((host, 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_is_free(host: str, port: int) -> bool:
    """Whether nothing listens there; SO_REUSEADDR so that TIME_WAIT leftovers of a restart don't count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file as written here and by Kafka (`key=value` lines, `#` comments)."""
    entries: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, value = line.split("=", 1)
            entries[key.strip()] = value.strip()
    return entries


def write_properties(path: Path, entries: Mapping[str, str]) -> None:
    path.write_text("".join(f"{key}={value}\n" for key, value in entries.items()))


def log_tail(path: Path, start: int = 0, lines: int = 25) -> str:
    """The last lines of a log from byte `start` on (one launch)."""
    try:
        with path.open("rb") as log:
            log.seek(start)
            text = log.read().decode(errors="replace")
    except FileNotFoundError:
        return "(no log written)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


@dataclass(frozen=True)
class Voter:
    """A controller as `--initial-controllers` and `add-controller` name it: id, endpoint, directory id."""

    node_id: int
    host: str
    port: int
    directory_id: str

    def __str__(self) -> str:
        return f"{self.node_id}@{self.host}:{self.port}:{self.directory_id}"


class KafkaNode:
    """One `kafka.Kafka` JVM with its data directory.

    `roles` is a subset of ("broker", "controller"). `quorum` lists the controllers' `host:port` endpoints
    (`controller.quorum.bootstrap.servers`); by default this node's own controller endpoint. `properties`
    override the defaults written to `server.properties`. `detach=True` starts the JVM in its own session so
    that it outlives the starting process (the CLI); otherwise it is a child the owner must stop.
    """

    def __init__(
        self,
        data_dir: Path | str,
        node_id: int = 1,
        *,
        roles: Sequence[str] = (BROKER, CONTROLLER),
        broker_port: int | None = None,
        controller_port: int | None = None,
        quorum: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        jvm_options: Sequence[str] = NODE_JVM_OPTIONS,
        host: str = HOST,
        startup_timeout: float = 90.0,
        detach: bool = False,
    ) -> None:
        if not roles or set(roles) - {BROKER, CONTROLLER}:
            raise KafkaNodeError(f"node {node_id}: roles must be broker and/or controller, not {list(roles)}")
        self.data_dir = Path(data_dir).resolve()
        self.node_id = node_id
        self.roles = tuple(roles)
        self.host = host
        self.properties = dict(properties or {})
        self.jvm_options = tuple(jvm_options)
        self.startup_timeout = startup_timeout
        self.detach = detach
        self.broker_port, self.controller_port = self._ports(broker_port, controller_port)
        self.quorum = tuple(quorum) or (self.controller_endpoint,)
        self._process: subprocess.Popen[bytes] | None = None
        self._log_start = 0

    # -- where things are ---------------------------------------------------------------------------

    @property
    def is_broker(self) -> bool:
        return BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.roles

    @property
    def bootstrap_servers(self) -> str:
        if not self.is_broker:
            raise KafkaNodeError(f"node {self.node_id} is a controller only: it has no broker listener")
        return f"{self.host}:{self.broker_port}"

    @property
    def controller_endpoint(self) -> str:
        if not self.is_controller:
            raise KafkaNodeError(f"node {self.node_id} is a broker only: it has no controller listener")
        return f"{self.host}:{self.controller_port}"

    @property
    def config_path(self) -> Path:
        return self.data_dir / CONFIG_FILE

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    @property
    def log_dir(self) -> Path:
        return self.data_dir / LOG_DIR

    @property
    def metadata_dir(self) -> Path:
        """The node's `__cluster_metadata-0` directory: its copy of the metadata log and snapshots."""
        return self.log_dir / METADATA_PARTITION

    @property
    def formatted(self) -> bool:
        return (self.log_dir / "meta.properties").is_file()

    @property
    def directory_id(self) -> str:
        """The metadata log dir's id (written by the storage tool): a voter is named by node id and it."""
        try:
            return read_properties(self.log_dir / "meta.properties")["directory.id"]
        except (OSError, KeyError) as error:
            raise KafkaNodeError(f"node {self.node_id}: no directory id in {self.log_dir}: {error}") from None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # -- configuration and storage ------------------------------------------------------------------

    def _ports(self, broker_port: int | None, controller_port: int | None) -> tuple[int, int]:
        """The ports given, else those of an existing `server.properties`, else free ones."""
        saved: dict[str, int] = {}
        if self.config_path.is_file():
            for listener in read_properties(self.config_path).get("listeners", "").split(","):
                name, _, address = listener.partition("://")
                if address:
                    saved[name] = int(address.rsplit(":", 1)[1])
        fresh = iter(free_ports(2, self.host))
        broker = broker_port or saved.get(BROKER_LISTENER) or next(fresh)
        controller = controller_port or saved.get(CONTROLLER_LISTENER) or next(fresh)
        return broker, controller

    def server_properties(self) -> dict[str, str]:
        """What `server.properties` holds: roles, listeners, the quorum, the log dir, then the caller's."""
        listeners = []
        if self.is_broker:
            listeners.append(f"{BROKER_LISTENER}://{self.host}:{self.broker_port}")
        if self.is_controller:
            listeners.append(f"{CONTROLLER_LISTENER}://{self.host}:{self.controller_port}")
        entries = {
            "process.roles": ",".join(self.roles),
            "node.id": str(self.node_id),
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(listeners),
            "listener.security.protocol.map": f"{BROKER_LISTENER}:PLAINTEXT,{CONTROLLER_LISTENER}:PLAINTEXT",
            "controller.listener.names": CONTROLLER_LISTENER,
            "controller.quorum.bootstrap.servers": ",".join(self.quorum),
            "log.dirs": str(self.log_dir),
            **SMALL_NODE_PROPERTIES,
        }
        if self.is_broker:
            entries["inter.broker.listener.name"] = BROKER_LISTENER
        return {**entries, **self.properties}

    def configure(self) -> None:
        """Write `server.properties` and the log4j2 config (every start does, so they follow the settings)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        write_properties(self.config_path, self.server_properties())
        (self.data_dir / LOG4J_FILE).write_text(_LOG4J.format(log=self.log_path))

    def voter(self, directory_id: str) -> Voter:
        return Voter(self.node_id, self.host, self.controller_port, directory_id)

    def format(
        self,
        cluster_id: str,
        *,
        standalone: bool = False,
        initial_controllers: Sequence[Voter] = (),
        release_version: str | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        """Format the log dir with Kafka's storage tool; without `standalone` or `initial_controllers` the
        node joins an existing quorum (`--no-initial-controllers`)."""
        if standalone and initial_controllers:
            raise KafkaNodeError(f"node {self.node_id}: standalone and initial controllers exclude each other")
        self.configure()
        args = ["format", "--config", str(self.config_path), "--cluster-id", cluster_id, *extra_args]
        if standalone:
            args.append("--standalone")
        elif initial_controllers:
            args += ["--initial-controllers", ",".join(str(voter) for voter in initial_controllers)]
        else:
            args.append("--no-initial-controllers")
        if release_version is not None:
            args += ["--release-version", release_version]
        run_tool("kafka-storage", *args)

    # -- the process -------------------------------------------------------------------------------

    def start(self, wait: bool = True) -> KafkaNode:
        """Launch the JVM; with `wait`, return once it answers (see `wait_ready`)."""
        if self.running:
            raise KafkaNodeError(f"node {self.node_id} already runs (pid {self.pid}, {self.data_dir})")
        if not self.formatted:
            raise KafkaNodeError(f"node {self.node_id}: {self.log_dir} is not formatted (call format() first)")
        self._check_ports()
        self.configure()
        command = java_command("kafka.Kafka", [str(self.config_path)], self.jvm_options)
        command.insert(1, f"-Dlog4j2.configurationFile={self.data_dir / LOG4J_FILE}")
        with self.log_path.open("ab") as log:
            self._log_start = log.tell()
            log.write(f"--- kraftlake: starting Kafka node {self.node_id} at {time.ctime()}\n".encode())
            log.flush()
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.data_dir, start_new_session=self.detach,
            )  # fmt: skip
        if wait:
            self.wait_ready()
        return self

    def _check_ports(self) -> None:
        """Before the launch: otherwise the readiness probe could talk to whoever holds the port."""
        ports = ([self.broker_port] if self.is_broker else []) + ([self.controller_port] if self.is_controller else [])
        for port in ports:
            if not port_is_free(self.host, port):
                raise PortInUseError(f"cannot start Kafka node {self.node_id}: {self.host}:{port} is already in use")

    def wait_ready(self) -> None:
        """Until a broker answers a metadata request listing itself (a controller only: until its port
        accepts connections); on exit or timeout, kill it and raise with the end of its log."""
        deadline = time.monotonic() + self.startup_timeout
        last_error = "no answer yet"
        while True:
            if self._process is None:
                raise KafkaNodeError(f"node {self.node_id} was not started")
            code = self._process.poll()
            if code is not None:
                tail = log_tail(self.log_path, self._log_start)
                error = PortInUseError if "Address already in use" in tail else KafkaNodeError
                self._process = None
                raise error(
                    f"Kafka node {self.node_id} exited with code {code} at start-up; end of {self.log_path}:\n{tail}"
                )
            try:
                if self._answers():
                    return
            except (OSError, KafkaException) as error:
                last_error = str(error)
            if time.monotonic() > deadline:
                self.kill()
                raise KafkaNodeError(
                    f"Kafka node {self.node_id} did not answer within {self.startup_timeout:g} s ({last_error}); "
                    f"end of {self.log_path}:\n{log_tail(self.log_path, self._log_start)}"
                )
            time.sleep(0.1)

    def _answers(self) -> bool:
        if not self.is_broker:
            with socket.create_connection((self.host, self.controller_port), timeout=0.5):
                return True
        with socket.create_connection((self.host, self.broker_port), timeout=0.5):
            pass
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        return self.node_id in admin.list_topics(timeout=2.0).brokers

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM (Kafka shuts down cleanly), SIGKILL if it is still alive after `grace` seconds."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(grace)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self._process is None:
            return
        if self._process.poll() is None:
            os.kill(self._process.pid, signal.SIGKILL)
        self._process.wait()
        self._process = None

    def restart(self, wait: bool = True) -> KafkaNode:
        """Stop (if running) and start again: same ports, same data."""
        self.stop()
        return self.start(wait)

    def __enter__(self) -> KafkaNode:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
