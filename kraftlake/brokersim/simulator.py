"""A broker simulator: B simulated brokers and an operator drive the controller through its admin API.

Brokers register (with two log directories each: JBOD), heartbeat and report the committed offset they
were last told (so they unfence once caught up), crash (stop heartbeating, come back with a new
incarnation), shut down in a controlled way, tell the controller which directory holds each new replica, and
now and then lose a directory. Partition leaders shrink and expand their ISRs; a replica a reassignment adds
catches up and joins the ISR first, which completes the reassignment. The operator reassigns partitions (and
cancels some) and mixes topic creation and deletion, configs, ACLs, quotas, SCRAM users, delegation tokens
and producer-id blocks; `settle` ends the storm (every broker back and unfenced, every partition led, every
follower in its ISR). Every choice comes from one seeded random generator and the controller's answers,
so a seed replays the same workload against the same responses. Large clusters are built in batches of at
most `max_partitions_per_request` partitions.

At scale, one step can outlast a broker session (fencing a broker that holds 25k partitions writes 25k
records), and brokers that only heartbeat between steps get fenced in a cascade. `heartbeat_interval_ms`
then makes every live broker heartbeat from a thread of its own as well, as a real broker does; the
workload is no longer exactly repeatable, as those answers interleave with it.
"""

from __future__ import annotations

import base64
import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kraftlake.controller.admin_client import AdminError
from kraftlake.controller.versions import SUPPORTED_FEATURES
from kraftlake.records.kafka_names import UNASSIGNED_DIRECTORY

DIRECTORIES_PER_BROKER = 2

EXPECTED_REFUSALS = {
    "STALE_BROKER_EPOCH", "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "NOT_LEADER_OR_FOLLOWER",
    "INELIGIBLE_REPLICA", "UNKNOWN_TOPIC_OR_PARTITION", "DUPLICATE_BROKER_REGISTRATION", "TOPIC_ALREADY_EXISTS",
    "DELEGATION_TOKEN_AUTH_DISABLED", "INVALID_REPLICATION_FACTOR", "BROKER_ID_NOT_REGISTERED",
}


class Admin(Protocol):
    def call(self, operation: str, body: dict[str, Any] | None = None) -> Any: ...

    def describe(self) -> dict[str, Any]: ...

    def describe_topic(self, name: str) -> dict[str, Any]: ...


@dataclass
class SimulatedBroker:
    broker_id: int
    rack: str
    incarnation: int = 0
    epoch: int | None = None  # None: not registered (never, or crashed)
    offset: int = -1  # the committed offset it last heard of
    shutting_down: bool = False
    offline_dirs: list[str] = field(default_factory=list)  # failed log directories it reports
    fenced: bool = True  # as the controller's last heartbeat answer said
    # KIP-966: the epoch it held when it last shut down cleanly (Kafka's .kafka_cleanshutdown file), -1 after a
    # crash; its next registration sends it as PreviousBrokerEpoch, and uses it up
    clean_shutdown_epoch: int = -1


@dataclass
class SimulationConfig:
    brokers: int = 3
    topics: int = 3
    partitions: int = 3
    replication_factor: int = 3
    racks: int = 3
    steps: int = 200
    seed: int = 0
    max_partitions_per_request: int = 5_000
    heartbeat_interval_ms: int = 0  # > 0: live brokers also heartbeat in the background (broker.heartbeat.interval.ms)


@dataclass
class SimulationReport:
    actions: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    topics_created: int = 0
    partitions_created: int = 0


class BrokerSimulator:
    def __init__(self, admin: Admin, config: SimulationConfig) -> None:
        self.admin = admin
        self.config = config
        self.rng = random.Random(config.seed)
        self.brokers = [SimulatedBroker(b, f"rack-{b % max(1, config.racks)}") for b in range(config.brokers)]
        self.topics: list[str] = []
        self.report = SimulationReport()
        self._topic_serial = 0
        self._tokens: list[tuple[str, str]] = []  # (hmac, owner)
        self._lock = threading.RLock()  # brokers' epochs and the report, shared with the heartbeat thread

    # -- plumbing -------------------------------------------------------------------------------------------

    def _call(self, action: str, operation: str, body: dict[str, Any]) -> Any:
        with self._lock:
            self.report.actions[action] = self.report.actions.get(action, 0) + 1
        try:
            return self.admin.call(operation, body)
        except AdminError as error:
            if error.code not in EXPECTED_REFUSALS:
                raise
            with self._lock:
                self.report.refused[error.code] = self.report.refused.get(error.code, 0) + 1
            return None

    def _directories(self, broker: SimulatedBroker) -> list[str]:
        """Its log directories' ids: fixed per broker, as meta.properties keeps them across restarts."""
        return [self._uuid(broker.broker_id, 1 << 32 | index) for index in range(DIRECTORIES_PER_BROKER)]

    def _uuid(self, broker_id: int, serial: int) -> str:
        raw = (self.config.seed % 2**32).to_bytes(4, "big") + broker_id.to_bytes(4, "big") + serial.to_bytes(8, "big")
        return base64.urlsafe_b64encode(raw)[:22].decode("ascii")

    def _incarnation_id(self, broker: SimulatedBroker) -> str:
        return self._uuid(broker.broker_id, broker.incarnation)

    # -- brokers ---------------------------------------------------------------------------------------------

    def register(self, broker: SimulatedBroker) -> None:
        epoch = self._call("register", "register-broker", {
            "broker_id": broker.broker_id, "incarnation_id": self._incarnation_id(broker), "rack": broker.rack,
            "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9092 + broker.broker_id}],
            "features": {name: list(levels) for name, levels in SUPPORTED_FEATURES.items()},
            "log_dirs": self._directories(broker),
            "previous_broker_epoch": broker.clean_shutdown_epoch,
        })
        if epoch is not None:
            with self._lock:
                broker.epoch = epoch
                broker.fenced = True
                broker.clean_shutdown_epoch = -1
                broker.shutting_down = False
                broker.offline_dirs = []  # the failed disk was replaced before the restart

    def heartbeat(self, broker: SimulatedBroker, action: str = "heartbeat") -> None:
        with self._lock:
            epoch, offset, shutting_down = broker.epoch, broker.offset, broker.shutting_down
            offline = list(broker.offline_dirs)
        if epoch is None:
            return
        reply = self._call(action, "heartbeat", {
            "broker_id": broker.broker_id, "broker_epoch": epoch, "metadata_offset": offset,
            "want_shutdown": shutting_down, "offline_log_dirs": offline,
        })
        with self._lock:
            if broker.epoch != epoch:
                return  # crashed or registered again meanwhile (by the other heartbeating thread's doing)
            if reply is None:  # fenced for good (stale epoch): register again as a new incarnation
                broker.epoch = None
                return
            broker.offset = max(broker.offset, reply["committed_offset"])
            broker.fenced = reply["is_fenced"]
            if reply["should_shut_down"]:
                broker.epoch = None  # it exits cleanly; it restarts at a later step
                broker.clean_shutdown_epoch = epoch

    def heartbeat_all(self) -> None:
        for broker in self.brokers:
            self.heartbeat(broker)

    def start_cluster(self) -> None:
        for broker in self.brokers:
            self.register(broker)
        for _ in range(2):  # the second round reports the offset learnt in the first: unfenced
            self.heartbeat_all()

    # -- topics ----------------------------------------------------------------------------------------------

    def create_topic(self, partitions: int) -> None:
        name = f"sim-{self.config.seed}-{self._topic_serial}"
        self._topic_serial += 1
        rf = min(self.config.replication_factor, self.config.brokers)
        first = min(partitions, self.config.max_partitions_per_request)
        result = self._call("create-topic", "create-topics", {
            "topics": [{"name": name, "partitions": first, "replication_factor": rf}]
        })
        if result is None or "error" in result[name]:
            return
        created = first
        while created < partitions:
            created = min(partitions, created + self.config.max_partitions_per_request)
            if self._call("create-partitions", "create-partitions", {"topic": name, "count": created}) is None:
                break
        self.topics.append(name)
        self.report.topics_created += 1
        self.report.partitions_created += created

    def build(self) -> None:
        """The cluster of the configuration: brokers up and unfenced, then every topic."""
        self.start_cluster()
        for _ in range(self.config.topics):
            self.create_topic(self.config.partitions)
            self.heartbeat_all()

    # -- the mixed workload ------------------------------------------------------------------------------------

    def step(self) -> None:
        actions: list[tuple[int, Callable[[], None]]] = [
            (30, self.heartbeat_all), (8, self._isr_change), (3, self._crash), (10, self._restart),
            (2, self._controlled_shutdown), (4, lambda: self.create_topic(self.rng.randint(1, 4))),
            (3, self._delete_topic), (5, self._config), (4, self._acl), (3, self._quota), (3, self._scram),
            (3, self._token), (4, self._producer_ids), (3, self._reassign), (4, self._assign_directories),
            (1, self._fail_directory),
        ]
        weights = [weight for weight, _ in actions]
        self.rng.choices([action for _, action in actions], weights)[0]()

    def run(self) -> SimulationReport:
        interval = self.config.heartbeat_interval_ms
        with self.keep_alive(interval) if interval > 0 else contextlib.nullcontext():
            self.build()
            for _ in range(self.config.steps):
                self.step()
        return self.report

    def settle(self, timeout_s: float = 60.0) -> int:
        """The storm is over: every broker that crashed, shut down or lost a directory restarts (a new
        incarnation, the failed disk replaced; the controller takes it back once the old session expired) and
        reports the committed offset until unfenced. Partitions left with no in-sync or eligible replica then
        get a leader by an unclean election, as an operator would (returns how many), and every follower
        catches up and joins its ISR."""
        for broker in self.brokers:
            if broker.shutting_down or broker.offline_dirs:
                with self._lock:
                    broker.epoch = None  # it stops, to restart below
        deadline = time.monotonic() + timeout_s
        while True:
            for broker in self.brokers:
                if broker.epoch is None:
                    broker.incarnation += 1
                    self.register(broker)
            for _ in range(2):  # the second round reports the offset learnt in the first: unfenced
                self.heartbeat_all()
            if all(broker.epoch is not None and not broker.fenced for broker in self.brokers):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"brokers still fenced after {timeout_s:.0f} s: "
                                   f"{[b.broker_id for b in self.brokers if b.fenced or b.epoch is None]}")
            time.sleep(0.5)
        leaderless = sum(p["leader"] < 0 for topic in self.admin.describe()["topics"]
                         for p in self.admin.describe_topic(topic)["partitions"].values())
        if leaderless:
            self._call("unclean-election", "elect-leaders", {"type": "unclean"})
        self._catch_up_followers()
        return leaderless

    def _catch_up_followers(self) -> None:
        """Every follower copies the log and joins the ISR: each leader sends one AlterPartition per topic
        for its partitions whose ISR lacks a replica (a reassignment under way completes)."""
        for topic in self.admin.describe()["topics"]:
            changes: dict[int, list[dict[str, Any]]] = {}
            for partition_id, state in self.admin.describe_topic(topic)["partitions"].items():
                if state["leader"] >= 0 and set(state["isr"]) != set(state["replicas"]):
                    changes.setdefault(state["leader"], []).append({
                        "topic": topic, "partition": int(partition_id), "leader_epoch": state["leaderEpoch"],
                        "partition_epoch": state["partitionEpoch"], "isr": list(state["replicas"]),
                    })
            for leader_id, partitions in changes.items():
                epoch = self.brokers[leader_id].epoch
                if epoch is not None:
                    self._call("catch-up", "alter-partition",
                               {"broker_id": leader_id, "broker_epoch": epoch, "changes": partitions})

    @contextlib.contextmanager
    def keep_alive(self, interval_ms: int = 1000) -> Iterator[None]:
        """Every live broker heartbeats from a thread while the block runs, so no session expires meanwhile."""
        stop = threading.Event()
        beats = threading.Thread(target=self._heartbeat_every, args=(stop, interval_ms), name="broker-heartbeats",
                                 daemon=True)
        beats.start()
        try:
            yield
        finally:
            stop.set()
            beats.join()

    def _heartbeat_every(self, stop: threading.Event, interval_ms: int) -> None:
        while not stop.wait(interval_ms / 1000):
            for broker in self.brokers:
                self.heartbeat(broker, "background-heartbeat")

    def _live(self) -> list[SimulatedBroker]:
        return [b for b in self.brokers if b.epoch is not None]

    def _crash(self) -> None:
        live = self._live()
        if live:
            victim = self.rng.choice(live)
            with self._lock:
                victim.epoch = None  # it stops heartbeating; the controller fences it once the session expires
                victim.clean_shutdown_epoch = -1
                self.report.actions["crash"] = self.report.actions.get("crash", 0) + 1

    def _restart(self) -> None:
        down = [b for b in self.brokers if b.epoch is None]
        if down:
            broker = self.rng.choice(down)
            broker.incarnation += 1
            self.register(broker)

    def _controlled_shutdown(self) -> None:
        live = [b for b in self._live() if not b.shutting_down]
        if live:
            broker = self.rng.choice(live)
            broker.shutting_down = True
            self.heartbeat(broker)

    def _random_partition(self) -> tuple[str, str, dict[str, Any]] | None:
        """A random partition of a random topic, as described now: (topic, partition id, state); None if
        there is no topic yet or the controller cannot describe it."""
        if not self.topics:
            return None
        topic = self.rng.choice(self.topics)
        try:
            partitions = self.admin.describe_topic(topic)["partitions"]
        except AdminError:
            return None
        partition_id = self.rng.choice(sorted(partitions, key=int))
        return topic, partition_id, partitions[partition_id]

    def _isr_change(self) -> None:
        picked = self._random_partition()
        if picked is None:
            return
        topic, partition_id, state = picked
        leader = next((b for b in self.brokers if b.broker_id == state["leader"] and b.epoch is not None), None)
        if leader is None:
            return
        isr = list(state["isr"])
        outside = [r for r in state["replicas"] if r not in isr]
        catching_up = [r for r in state["addingReplicas"] if r not in isr and self._is_live(r)]
        if catching_up:
            isr.append(catching_up[0])  # a reassignment's new replica copied the log: it joins the ISR
        elif outside and self.rng.random() < 0.5:
            isr.append(self.rng.choice(outside))  # expand: a follower caught up
        elif len(isr) > 1:
            isr.remove(self.rng.choice([r for r in isr if r != leader.broker_id]))  # shrink: a follower lags
        self._alter_partition(leader, topic, int(partition_id), state, isr)

    def alter_isr(self, topic: str, partition_id: int, isr: list[int]) -> Any:
        """The partition's leader proposes `isr` (AlterPartition); the controller's outcome, or None."""
        state = self.admin.describe_topic(topic)["partitions"][str(partition_id)]
        leader = next((b for b in self._live() if b.broker_id == state["leader"]), None)
        if leader is None:
            return None
        return self._alter_partition(leader, topic, partition_id, state, isr)

    def _alter_partition(
        self, leader: SimulatedBroker, topic: str, partition_id: int, state: dict[str, Any], isr: list[int]
    ) -> Any:
        """AlterPartition from `leader`, at the leader and partition epochs of `state` (as described)."""
        return self._call("alter-partition", "alter-partition", {
            "broker_id": leader.broker_id, "broker_epoch": leader.epoch, "changes": [{
                "topic": topic, "partition": partition_id, "leader_epoch": state["leaderEpoch"],
                "partition_epoch": state["partitionEpoch"], "isr": isr,
            }],
        })

    def catch_up_reassignments(self) -> int:
        """Every live replica a reassignment adds copies the log and joins the ISR, which completes the
        reassignment once all have; returns how many partitions' ISRs grew."""
        grown = 0
        for topic, partitions in (self._call("list-reassignments", "list-reassignments", {}) or {}).items():
            for partition_id in partitions:
                state = self.admin.describe_topic(topic)["partitions"][partition_id]
                joining = [r for r in state["addingReplicas"] if self._is_live(r) and r not in state["isr"]]
                if joining and self.alter_isr(topic, int(partition_id), [*state["isr"], *joining]) is not None:
                    grown += 1
        return grown

    def assign_directories(self, broker_id: int, topics: Sequence[str]) -> int:
        """The broker places its UNASSIGNED replicas of `topics` in its first directory; returns how many."""
        broker = self.brokers[broker_id]
        placed = 0
        for topic in topics:
            placed += self._assign_topic_directories(broker, topic, lambda: self._directories(broker)[0])
        return placed

    def fail_directory(self, broker_id: int, index: int = 0) -> None:
        """The broker's directory `index` fails: reported from its next heartbeat on."""
        broker = self.brokers[broker_id]
        with self._lock:
            broker.offline_dirs = [self._directories(broker)[index]]
        self.heartbeat(broker, "directory-failure")

    def _is_live(self, broker_id: int) -> bool:
        return any(b.broker_id == broker_id and b.epoch is not None for b in self.brokers)

    def _reassign(self) -> None:
        """Move a partition to other brokers, or cancel a reassignment under way."""
        picked = self._random_partition()
        if picked is None:
            return
        topic, partition_id, state = picked
        ongoing = bool(state["addingReplicas"] or state["removingReplicas"])
        live = [b.broker_id for b in self._live()]
        rf = len(state["replicas"]) - len(state["removingReplicas"])
        if ongoing and self.rng.random() < 0.3:
            target = None
        elif len(live) >= rf:
            target = self.rng.sample(live, rf)
        else:
            return
        self._call("reassign", "alter-reassignments", {
            "reassignments": [{"topic": topic, "partition": int(partition_id), "replicas": target}],
        })

    def _assign_directories(self) -> None:
        """A live broker reports which of its directories holds each replica the controller left UNASSIGNED."""
        live = self._live()
        if live and self.topics:
            broker = self.rng.choice(live)
            self._assign_topic_directories(broker, self.rng.choice(self.topics),
                                           lambda: self.rng.choice(self._directories(broker)))

    def _assign_topic_directories(self, broker: SimulatedBroker, topic: str, choose: Callable[[], str]) -> int:
        try:
            described = self.admin.describe_topic(topic)
        except AdminError:
            return 0
        assignments = [
            {"directory": choose(), "topic_id": described["topic_id"], "partition": int(partition_id)}
            for partition_id, state in sorted(described["partitions"].items(), key=lambda item: int(item[0]))
            if broker.broker_id in state["replicas"]
            and state["directories"][state["replicas"].index(broker.broker_id)] == UNASSIGNED_DIRECTORY
        ]
        if assignments and broker.epoch is not None:
            self._call("assign-dirs", "assign-replicas-to-dirs", {
                "broker_id": broker.broker_id, "broker_epoch": broker.epoch, "assignments": assignments,
            })
        return len(assignments)

    def _fail_directory(self) -> None:
        """A disk fails: the broker reports the directory offline from its next heartbeat on."""
        live = [b for b in self._live() if not b.offline_dirs]
        if live:
            broker = self.rng.choice(live)
            self.fail_directory(broker.broker_id, self.rng.randrange(DIRECTORIES_PER_BROKER))

    def _delete_topic(self) -> None:
        if self.topics:
            topic = self.topics.pop(self.rng.randrange(len(self.topics)))
            self._call("delete-topic", "delete-topics", {"names": [topic]})

    def _config(self) -> None:
        if self.topics and self.rng.random() < 0.7:
            target = {"resource_type": "topic", "resource_name": self.rng.choice(self.topics)}
            change = {"op": "set", "name": "retention.ms", "value": str(self.rng.randint(1, 10) * 3_600_000)}
        else:
            target = {"resource_type": "broker", "resource_name": ""}
            change = {"op": "set", "name": "log.retention.ms", "value": str(self.rng.randint(1, 10) * 3_600_000)}
        self._call("config", "alter-configs", {**target, "changes": [change]})

    def _acl(self) -> None:
        user = f"User:user-{self.rng.randrange(5)}"
        if self.rng.random() < 0.7:
            self._call("acl", "create-acls", {"acls": [{
                "resource_type": "topic", "resource_name": f"sim-{self.rng.randrange(10)}", "principal": user,
                "operation": self.rng.choice(["read", "write", "describe"]),
            }]})
        else:
            self._call("acl", "delete-acls", {"filters": [{"principal": user}]})

    def _quota(self) -> None:
        entity = {"user": f"user-{self.rng.randrange(5)}"}
        value = None if self.rng.random() < 0.3 else float(self.rng.randint(1, 100) * 1024)
        self._call("quota", "alter-client-quotas", {"entity": entity, "changes": {"producer_byte_rate": value}})

    def _scram(self) -> None:
        user = f"user-{self.rng.randrange(5)}"
        password = f"password-{self.config.seed}-{self.rng.randrange(1000)}"
        self._call("scram", "alter-scram", {"upsertions": [
            {"user": user, "mechanism": "SCRAM-SHA-256", "password": password}
        ]})

    def _token(self) -> None:
        if self._tokens and self.rng.random() < 0.5:
            token_hmac, owner = self._tokens.pop(self.rng.randrange(len(self._tokens)))
            operation = self.rng.choice(["renew-token", "expire-token"])
            self._call("token", operation, {"hmac": token_hmac, "principal": owner, "period_ms": 60_000})
            return
        owner = f"User:user-{self.rng.randrange(5)}"
        created = self._call("token", "create-token", {"owner": owner})
        if created is not None:
            self._tokens.append((created["hmac"], owner))

    def _producer_ids(self) -> None:
        live = self._live()
        if live:
            broker = self.rng.choice(live)
            self._call("producer-ids", "allocate-producer-ids", {"broker_id": broker.broker_id,
                                                                 "broker_epoch": broker.epoch})
