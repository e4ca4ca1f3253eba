"""A real multi-node Apache Kafka cluster on loopback (for the tests and the benchmark), driven the way an
operator drives one: with Kafka's own tools run from the jars.

Three combined broker+controller nodes by default, formatted with `--initial-controllers` (kraft.version 1, a
dynamic quorum, so the voter set can change), each a small-heap JVM (`kraftlake.cli.kafka_node`). StandardAuthorizer
is on with `User:ANONYMOUS` (every PLAINTEXT client, the nodes included) as super user, so ACLs can be managed.
Each broker also has a SASL_PLAINTEXT (SCRAM-SHA-512) listener, because Kafka issues delegation tokens only
over authenticated connections.

By hand (the nodes run until Ctrl-C; their logs are `DIR/node-N/server.log`):

    PYTHONPATH=. .venv/bin/python -m tests.harness.kafka_cluster DIR [--release-version 3.9-IV0]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kraftlake.cli.kafka_node import CONTROLLER, HOST, KafkaNode, free_ports, kafka_uuid, write_properties
from kraftlake.cli.kafka_tools import KafkaToolError, run_tool
from tests.harness.tls import make_tls

T = TypeVar("T")
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLUSTER_PROPERTIES = {
    "authorizer.class.name": STANDARD_AUTHORIZER,
    "super.users": "User:ANONYMOUS",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
}
# Besides PLAINTEXT, each broker has a SASL_PLAINTEXT listener with SCRAM: Kafka issues delegation tokens only
# over an authenticated connection. Its user is created at format time and is a super user. SCRAM-SHA-512:
# after the operator scenario some broker (not always the same) no longer knew SCRAM-SHA-256 credentials
# (Kafka 4.4.0, though every log holds them), so a SHA-256 login could fail there.
SASL_LISTENER = "SASL"
SASL_MECHANISM = "SCRAM-SHA-512"
SASL_USER, SASL_PASSWORD = "admin", "admin-secret"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required"
SASL_PROPERTIES = {
    "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,{SASL_LISTENER}:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": SASL_MECHANISM,
    f"listener.name.{SASL_LISTENER.lower()}.{SASL_MECHANISM.lower()}.sasl.jaas.config": f"{SCRAM_LOGIN};",
    "delegation.token.secret.key": "kraftlake-test-token-secret",
    "super.users": f"User:ANONYMOUS;User:{SASL_USER}",
}
SASL_CLIENT = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": SASL_MECHANISM,
    "sasl.jaas.config": f'{SCRAM_LOGIN} username="{SASL_USER}" password="{SASL_PASSWORD}";',
}
# A cluster made with `secure_controllers` has a second controller listener, SASL_SSL with SCRAM-SHA-256 (the
# controllers learn SCRAM credentials from the metadata log, as brokers do) and a certificate from a throwaway
# CA: the first controller listener stays PLAINTEXT, for the nodes among themselves and for the tools.
SECURE_LISTENER = "SECURE"
SECURE_MECHANISM = "SCRAM-SHA-256"
QUICK_ADMIN = {"request.timeout.ms": "3000", "default.api.timeout.ms": "6000"}
# Tools that take no bootstrap option (they work on files).
OFFLINE_TOOLS = frozenset({"kafka-storage", "kafka-dump-log"})
WAIT_S = 90.0


class ClusterError(AssertionError):
    """The cluster did not reach a state in time; the message says which and what was seen last."""


def wait_for(check: Callable[[], T | None], what: str, timeout: float = WAIT_S, every: float = 0.2) -> T:
    """Poll `check` until it returns something other than None/False; returns it."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = check()
            if result is not None and result is not False:
                return result
        except (KafkaException, KafkaToolError, OSError, AssertionError) as error:  # transient while nodes move
            last = error
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout:g} s waiting for {what} (last: {last})")
        time.sleep(every)


@dataclass(frozen=True)
class MetadataRecord:
    """One record as `kafka-dump-log` decodes it: a metadata record's type (`TOPIC_RECORD`) or a control
    record's name (`KRaftVoters`, `LeaderChange`), its version and its fields."""

    offset: int
    type: str
    version: int
    data: dict[str, Any]


def parse_dumped_record(line: str) -> MetadataRecord:
    """`| offset: 7 ... headerKeys: [] payload: {"type":..,"version":..,"data":{..}}`, or for a control
    record `... headerKeys: [] KRaftVoters {"version":0,...}`."""
    offset = int(line.split()[2])
    label, _, body = line.split("headerKeys: [] ", 1)[1].partition(" {")
    decoded = json.loads("{" + body)
    if label == "payload:":
        return MetadataRecord(offset, decoded["type"], decoded["version"], decoded["data"])
    return MetadataRecord(offset, label.rstrip(":"), decoded.pop("version"), decoded)


class KafkaCluster:
    """`nodes` combined broker+controller nodes (ids 1..n) under `root`; `properties` go into every node's
    `server.properties` (over `CLUSTER_PROPERTIES`); `release_version` is the metadata.version the storage is
    formatted with (default: the jars' latest)."""

    def __init__(
        self,
        root: Path,
        *,
        nodes: int = 3,
        properties: Mapping[str, str] | None = None,
        release_version: str | None = None,
        secure_controllers: bool = False,
    ) -> None:
        self.root = root.resolve()
        self.cluster_id = kafka_uuid()
        self.release_version = release_version
        self.tls = make_tls(self.root / "tls", HOST) if secure_controllers else None
        self.properties = {**CLUSTER_PROPERTIES, **SASL_PROPERTIES, **self._secure_properties(), **(properties or {})}
        ports = free_ports(4 * nodes)
        controllers = [f"{HOST}:{port}" for port in ports[1::4]]
        self.nodes: dict[int, KafkaNode] = {}
        self.sasl_ports: dict[int, int] = {}
        self.secure_ports: dict[int, int] = {}
        for node_id in range(1, nodes + 1):
            broker_port, controller_port, sasl_port, secure_port = ports[4 * node_id - 4 : 4 * node_id]
            listeners = (f"PLAINTEXT://{HOST}:{broker_port},CONTROLLER://{HOST}:{controller_port},"
                         f"{SASL_LISTENER}://{HOST}:{sasl_port}")  # fmt: skip
            if self.tls is not None:
                listeners += f",{SECURE_LISTENER}://{HOST}:{secure_port}"
                self.secure_ports[node_id] = secure_port
            self.nodes[node_id] = KafkaNode(
                self.root / f"node-{node_id}", node_id, broker_port=broker_port, controller_port=controller_port,
                quorum=controllers,
                properties={**self.properties, "listeners": listeners, "advertised.listeners": listeners},
            )  # fmt: skip
            self.sasl_ports[node_id] = sasl_port
        self.initial_controllers = tuple(self.nodes)

    def _secure_properties(self) -> dict[str, str]:
        """The second controller listener's settings (none without `secure_controllers`)."""
        if self.tls is None:
            return {}
        prefix = f"listener.name.{SECURE_LISTENER.lower()}"
        return {
            "listener.security.protocol.map": f"{SASL_PROPERTIES['listener.security.protocol.map']},"
                                              f"{SECURE_LISTENER}:SASL_SSL",
            "controller.listener.names": f"CONTROLLER,{SECURE_LISTENER}",
            f"{prefix}.sasl.enabled.mechanisms": SECURE_MECHANISM,
            f"{prefix}.{SECURE_MECHANISM.lower()}.sasl.jaas.config": f"{SCRAM_LOGIN};",
            f"{prefix}.ssl.keystore.type": "PEM",
            f"{prefix}.ssl.keystore.location": str(self.tls.keystore),
        }  # fmt: skip

    # -- life cycle --------------------------------------------------------------------------------

    def start(self) -> KafkaCluster:
        """Format every node with the same initial voter set, start them together (a controller waits for a
        majority) and return once every broker is registered and unfenced."""
        voters = [node.voter(kafka_uuid()) for node in self.nodes.values()]
        self._each(
            lambda node: node.format(
                self.cluster_id, initial_controllers=voters, release_version=self.release_version,
                extra_args=self._scram_users(),
            ),
            self.nodes.values(),
        )
        for node in self.nodes.values():
            node.start(wait=False)
        self._each(lambda node: node.wait_ready(), self.nodes.values())
        self.wait_unfenced(*self.brokers())
        return self

    def _scram_users(self) -> tuple[str, ...]:
        """The SCRAM super user, created at format time for each mechanism a listener offers."""
        mechanisms = [SASL_MECHANISM] + ([SECURE_MECHANISM] if self.tls is not None else [])
        return tuple(arg for mechanism in mechanisms
                     for arg in ("--add-scram", f"{mechanism}=[name={SASL_USER},password={SASL_PASSWORD}]"))

    def stop(self) -> None:
        """Stop every node at once (each SIGTERM, SIGKILL after a few seconds): a node whose quorum is gone
        cannot shut down cleanly, and the data is thrown away or copied before this."""
        self._each(lambda node: node.stop(grace=5.0), self.nodes.values())

    @staticmethod
    def _each(action: Callable[[KafkaNode], object], nodes: Iterable[KafkaNode]) -> None:
        """Run `action` on the nodes in parallel threads (JVMs start faster side by side); re-raise the first error."""
        chosen = list(nodes)
        with ThreadPoolExecutor(max_workers=max(1, len(chosen))) as pool:
            for future in [pool.submit(action, node) for node in chosen]:
                future.result()

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- nodes ----------------------------------------------------------------------------------------

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id]

    def brokers(self) -> list[int]:
        return [node_id for node_id, node in self.nodes.items() if node.is_broker]

    def kill(self, node_id: int) -> None:
        """SIGKILL one node, as a crash would."""
        self.nodes[node_id].kill()

    def restart(self, node_id: int) -> None:
        """Start a stopped or killed node again (same ports, same data); a broker: until it is unfenced."""
        node = self.nodes[node_id]
        node.stop()
        node.start()
        if node.is_broker:
            self.wait_unfenced(node_id)

    def metadata_dir(self, node_id: int) -> Path:
        """The node's `__cluster_metadata-0` directory (copy it before comparing: Kafka keeps writing)."""
        return self.nodes[node_id].metadata_dir

    def dump_metadata_log(self, node_id: int, directory: Path | None = None) -> list[MetadataRecord]:
        """Every record of the node's metadata log segments (or of those in `directory`, an archive of them) as
        Kafka's own decoder prints them (`kafka-dump-log --cluster-metadata-decoder`): Kafka is the oracle of
        what its log holds."""
        segments = sorted(str(path) for path in (directory or self.metadata_dir(node_id)).glob("*.log"))
        out = self.tool("kafka-dump-log", "--cluster-metadata-decoder", "--files", ",".join(segments))
        return [parse_dumped_record(line) for line in out.splitlines() if line.startswith("| offset: ")]

    # -- addresses and tools ----------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.bootstrap_servers for node in self.nodes.values() if node.is_broker and node.running)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(
            node.controller_endpoint for node in self.nodes.values() if node.is_controller and node.running
        )

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})

    def sasl_bootstrap_servers(self, *node_ids: int) -> str:
        """The SASL listeners of these brokers (default: every running one)."""
        chosen = node_ids or [node_id for node_id in self.sasl_ports if self.nodes[node_id].running]
        return ",".join(f"{HOST}:{self.sasl_ports[node_id]}" for node_id in chosen)

    def secure_bootstrap_controllers(self) -> str:
        """The SASL_SSL controller listeners (a cluster made with `secure_controllers`)."""
        return ",".join(f"{HOST}:{port}" for node_id, port in self.secure_ports.items() if self.nodes[node_id].running)

    def tool(
        self, name: str, *args: str, controller: bool = False, sasl: bool = False, node: int | None = None,
        timeout: float = 120.0,
    ) -> str:
        """Run Kafka's `name` tool (`kafka-topics`, `kafka-configs`, ...) against this cluster: with
        `--bootstrap-server`, `--bootstrap-controller` when `controller`, or the SASL listeners as the SCRAM
        super user when `sasl`; only through broker `node` when given. Returns its stdout, raises
        `KafkaToolError` with its output when it fails. The options go first: the tools with sub-commands
        (`kafka-metadata-quorum`, `kafka-features`) want them before the sub-command."""
        if name in OFFLINE_TOOLS:
            return run_tool(name, *args, timeout=timeout)
        only = () if node is None else (node,)
        if sasl:
            client = self.root / "sasl-client.properties"
            write_properties(client, SASL_CLIENT)
            bootstrap: tuple[str, ...] = (
                "--bootstrap-server", self.sasl_bootstrap_servers(*only), "--command-config", str(client)
            )  # fmt: skip
        elif controller:
            bootstrap = ("--bootstrap-controller", self.bootstrap_controllers)
        elif node is not None:
            bootstrap = ("--bootstrap-server", self.nodes[node].bootstrap_servers)
        else:
            bootstrap = ("--bootstrap-server", self.bootstrap_servers)
        return run_tool(name, *bootstrap, *args, timeout=timeout)

    # -- the quorum ------------------------------------------------------------------------------------

    def quorum_status(self) -> dict[str, str]:
        """`kafka-metadata-quorum describe --status` as key → value (LeaderId, CurrentVoters, ...). Short client
        timeouts: right after a controller died the tool would otherwise wait a minute for it, not retry."""
        quick = self.root / "quick-admin.properties"
        write_properties(quick, QUICK_ADMIN)
        out = self.tool("kafka-metadata-quorum", "--command-config", str(quick), "describe", "--status",
                        controller=True)  # fmt: skip
        return {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in out.splitlines())}

    def active_controller(self) -> int:
        return int(self.quorum_status()["LeaderId"])

    def voters(self) -> set[int]:
        """The current voter ids, as the quorum reports them."""
        return {int(node_id) for node_id in re.findall(r'"id":\s*(\d+)', self.quorum_status()["CurrentVoters"])}

    def wait_for_new_leader(self, old: int) -> int:
        def elected() -> int | None:
            leader = self.active_controller()
            return leader if leader not in (old, -1) else None

        return wait_for(elected, f"a controller other than {old} to lead")

    def add_controller(self, node_id: int) -> KafkaNode:
        """Start a controller-only node `node_id` that joins the cluster (`--no-initial-controllers`), then
        make it a voter with `kafka-metadata-quorum add-controller` (its own config as command config)."""
        broker_port, controller_port = free_ports(2)
        node = KafkaNode(
            self.root / f"node-{node_id}", node_id, roles=(CONTROLLER,), broker_port=broker_port,
            controller_port=controller_port, quorum=self._quorum_endpoints(), properties=self.properties,
        )  # fmt: skip
        node.format(self.cluster_id)
        self.nodes[node_id] = node.start()
        self.tool("kafka-metadata-quorum", "--command-config", str(node.config_path), "add-controller",
                  controller=True)  # fmt: skip
        wait_for(lambda: node_id in self.voters(), f"controller {node_id} to become a voter")
        return node

    def remove_controller(self, node_id: int) -> None:
        """`kafka-metadata-quorum remove-controller` for a voter (named by id and metadata directory id)."""
        node = self.nodes[node_id]
        self.tool("kafka-metadata-quorum", "remove-controller", "--controller-id", str(node_id),
                  "--controller-directory-id", node.directory_id, controller=True)  # fmt: skip
        wait_for(lambda: node_id not in self.voters(), f"controller {node_id} to leave the voters")

    def _quorum_endpoints(self) -> list[str]:
        return [node.controller_endpoint for node in self.nodes.values() if node.is_controller]

    # -- brokers -----------------------------------------------------------------------------------------

    def wait_unfenced(self, *node_ids: int) -> None:
        """Until the cluster's metadata lists these brokers (a fenced broker is left out of it)."""
        wanted = set(node_ids)

        def listed() -> bool:
            return wanted <= set(self.admin().list_topics(timeout=5).brokers)

        wait_for(listed, f"brokers {sorted(wanted)} to be unfenced")

    def wait_fenced(self, node_id: int) -> None:
        wait_for(lambda: node_id not in self.admin().list_topics(timeout=5).brokers, f"broker {node_id} fenced")


def main() -> None:
    parser = argparse.ArgumentParser(description="run the tests' Kafka cluster until Ctrl-C")
    parser.add_argument("root", type=Path)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--release-version", default=None)
    args = parser.parse_args()
    with KafkaCluster(args.root, nodes=args.nodes, release_version=args.release_version) as cluster:
        print(f"bootstrap servers: {cluster.bootstrap_servers}")
        print(f"bootstrap controllers: {cluster.bootstrap_controllers}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
