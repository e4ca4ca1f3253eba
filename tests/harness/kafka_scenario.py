"""The operator scenario: one function that drives a `KafkaCluster` through what operators do to a cluster,
with Kafka's own tools, so that its metadata log holds every kind of change (for the tests that copy a node's
`__cluster_metadata-0` and compare images with Kafka's oracle).

Topics created, partitions added, a topic deleted; topic, broker and default configs set and deleted; SCRAM
users added and one deleted; user, client and IP quotas; ACLs added and one removed (StandardAuthorizer);
delegation tokens created and one expired (over the SASL listener);
a broker SIGKILLed and restarted (fenced, ISRs shrink, then unfenced and ISRs expand); a reassignment; the
active controller SIGKILLed (failover) and restarted; a controller added and one removed; a feature upgrade
from the release the cluster was formatted with to the jars' latest. Waits use the client API (cheap);
changes go through the tools, as an operator's would.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from confluent_kafka import Producer, TopicCollection
from confluent_kafka.admin import TopicDescription

from tests.harness.kafka_cluster import KafkaCluster, wait_for

# The scenario cluster is formatted at the oldest release a dynamic quorum (kraft.version 1) allows.
FORMAT_RELEASE = "3.9-IV0"
LATEST_RELEASE = "4.4-IV2"  # what the 4.4.0 jars format by default (`kafka-storage format --help`)
TOPICS = {"orders": (6, 3), "payments": (3, 2), "audit": (1, 3), "scratch": (2, 1)}  # name: (partitions, RF)
ORDERS_PARTITIONS_AFTER = 9
DELETED_TOPIC = "scratch"
ADDED_CONTROLLER = 4


@dataclass
class ScenarioReport:
    """What the scenario did, for the checks that follow it."""

    killed_broker: int = -1
    failed_controller: int = -1
    new_controller: int = -1
    added_controller: int = -1
    removed_controller: int = -1
    reassigned: tuple[str, int, list[int]] = ("", -1, [])
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        yield
        self.seconds[name] = round(time.monotonic() - start, 1)


def run_operator_scenario(cluster: KafkaCluster) -> ScenarioReport:
    """Drive the whole scenario on a started 3-node cluster formatted at `FORMAT_RELEASE`."""
    report = ScenarioReport()
    with report.step("topics"):
        create_topics(cluster)
    with report.step("configs"):
        alter_configs(cluster)
    with report.step("scram users and quotas"):
        scram_users_and_quotas(cluster)
    with report.step("acls"):
        acls(cluster)
    with report.step("delegation tokens"):
        delegation_tokens(cluster)
    with report.step("broker crash"):
        report.killed_broker = broker_crash(cluster)
    with report.step("reassignment"):
        report.reassigned = reassign(cluster)
    with report.step("controller failover"):
        report.failed_controller, report.new_controller = controller_failover(cluster)
    with report.step("voter change"):
        report.added_controller, report.removed_controller = change_voters(cluster)
    with report.step("feature upgrade"):
        cluster.tool("kafka-features", "upgrade", "--release-version", LATEST_RELEASE)
    with report.step("topic deletion"):
        cluster.tool("kafka-topics", "--delete", "--topic", DELETED_TOPIC)
        wait_for(lambda: DELETED_TOPIC not in cluster.admin().list_topics(timeout=5).topics, "the deletion")
    return report


def create_topics(cluster: KafkaCluster) -> None:
    for name, (partitions, replicas) in TOPICS.items():
        cluster.tool("kafka-topics", "--create", "--topic", name, "--partitions", str(partitions),
                     "--replication-factor", str(replicas))  # fmt: skip
    cluster.tool("kafka-topics", "--alter", "--topic", "orders", "--partitions", str(ORDERS_PARTITIONS_AFTER))


def alter_configs(cluster: KafkaCluster) -> None:
    configs = cluster.tool
    configs("kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", "orders",
            "--add-config", "retention.ms=86400000,segment.bytes=10485760,min.insync.replicas=2")  # fmt: skip
    configs("kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", "orders",
            "--delete-config", "segment.bytes")  # fmt: skip
    configs("kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default",
            "--add-config", "log.retention.ms=604800000")  # fmt: skip
    configs("kafka-configs", "--alter", "--entity-type", "brokers", "--entity-name", "1",
            "--add-config", "log.cleaner.threads=2")  # fmt: skip


def scram_users_and_quotas(cluster: KafkaCluster) -> None:
    tool = cluster.tool
    for mechanism in ("SCRAM-SHA-256=[iterations=8192,password=alice-secret]", "SCRAM-SHA-512=[password=alice-secret]"):
        # one mechanism per request: Kafka refuses to alter one user's credentials twice in a request
        tool("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", mechanism)
    tool("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", "bob",
         "--add-config", "SCRAM-SHA-256=[password=bob-secret]")  # fmt: skip
    tool("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", "bob",
         "--delete-config", "SCRAM-SHA-256")  # fmt: skip
    tool("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
         "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")  # fmt: skip
    tool("kafka-configs", "--alter", "--entity-type", "clients", "--entity-default",
         "--add-config", "request_percentage=50")  # fmt: skip
    tool("kafka-configs", "--alter", "--entity-type", "ips", "--entity-name", "127.0.0.1",
         "--add-config", "connection_creation_rate=100")  # fmt: skip


def acls(cluster: KafkaCluster) -> None:
    tool = cluster.tool
    tool("kafka-acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write",
         "--topic", "orders")  # fmt: skip
    bob = ("--allow-principal", "User:bob", "--operation", "Read", "--group", "app-",
           "--resource-pattern-type", "prefixed")  # fmt: skip
    tool("kafka-acls", "--add", *bob)
    tool("kafka-acls", "--add", "--deny-principal", "User:mallory", "--operation", "All", "--topic", "*")
    tool("kafka-acls", "--remove", "--force", *bob)


def delegation_tokens(cluster: KafkaCluster) -> None:
    """Two tokens created over the SASL listener (Kafka refuses PLAINTEXT for them); one is expired."""
    tool = functools.partial(cluster.tool, "kafka-delegation-tokens", sasl=True)
    tool("--create", "--max-life-time-period", "-1", "--renewer-principal", "User:alice")
    created = tool("--create", "--max-life-time-period", "-1")
    token_id = re.search(r"tokenId : (\S+)", created)
    hmac = token_id and re.search(rf"^{re.escape(token_id[1])}\s+(\S+)", created, re.MULTILINE)
    assert hmac, f"no token id and HMAC in the tool's output:\n{created}"
    tool("--expire", "--hmac", hmac[1], "--expiry-time-period", "-1")


def describe(cluster: KafkaCluster, *topics: str) -> dict[str, TopicDescription]:
    admin = cluster.admin()  # held until the results are in: a destroyed client fails its futures
    futures = admin.describe_topics(TopicCollection(list(topics)))
    return {name: future.result(timeout=10) for name, future in futures.items()}


def in_any_isr(cluster: KafkaCluster, broker: int, topic: str) -> bool:
    return any(broker in [node.id for node in p.isr] for p in describe(cluster, topic)[topic].partitions)


def in_every_isr(cluster: KafkaCluster, broker: int, topic: str) -> bool:
    """Whether `broker` is in the ISR of every partition it is a replica of."""
    partitions = describe(cluster, topic)[topic].partitions
    return all(broker in [n.id for n in p.isr] for p in partitions if broker in [n.id for n in p.replicas])


def produce(cluster: KafkaCluster, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "log_level": 0})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i)
    assert producer.flush(30) == 0, f"{topic}: not every message was acknowledged"


def broker_crash(cluster: KafkaCluster) -> int:
    """SIGKILL a broker that is not the active controller; its ISRs shrink when it is fenced, and expand once
    it is back and caught up (it misses messages written meanwhile)."""
    victim = crash_victim(cluster)
    produce(cluster, "orders", 100)
    cluster.kill(victim)
    cluster.wait_fenced(victim)
    wait_for(lambda: not in_any_isr(cluster, victim, "orders"), f"broker {victim} to leave the ISRs")
    produce(cluster, "audit", 100)  # RF 3, min ISR 1: written while the victim is away
    cluster.restart(victim)
    wait_for(lambda: in_every_isr(cluster, victim, "audit"), f"broker {victim} to rejoin the ISRs")
    return victim


def crash_victim(cluster: KafkaCluster) -> int:
    """The broker `broker_crash` SIGKILLs: the highest id that is not the active controller. Known before the
    scenario (unless leadership moves first), so a file follower can tail the node that crashes."""
    leader = cluster.active_controller()
    return max(node for node in cluster.brokers() if node != leader)


def reassign(cluster: KafkaCluster) -> tuple[str, int, list[int]]:
    """Move payments-0 to the replicas it does not have yet (plus its leader) with kafka-reassign-partitions."""
    partition = describe(cluster, "payments")["payments"].partitions[0]
    current = [node.id for node in partition.replicas]
    target = [current[0], *[b for b in cluster.brokers() if b not in current]][:len(current)]
    plan = cluster.root / "reassignment.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "payments", "partition": 0, "replicas": target},
    ]}))  # fmt: skip
    cluster.tool("kafka-reassign-partitions", "--reassignment-json-file", str(plan), "--execute")

    def moved() -> bool:
        replicas = [node.id for node in describe(cluster, "payments")["payments"].partitions[0].replicas]
        return replicas == target

    wait_for(moved, f"payments-0 to move to {target}")
    out = cluster.tool("kafka-reassign-partitions", "--reassignment-json-file", str(plan), "--verify")
    assert "is completed" in out, out
    return "payments", 0, target


def controller_failover(cluster: KafkaCluster) -> tuple[int, int]:
    """SIGKILL the active controller, wait for another to be elected, start the old one again."""
    old = cluster.active_controller()
    cluster.kill(old)
    new = cluster.wait_for_new_leader(old)
    cluster.restart(old)
    return old, new


def change_voters(cluster: KafkaCluster) -> tuple[int, int]:
    """Add a controller-only node as a voter, then remove one of the initial voters (not the leader)."""
    cluster.add_controller(ADDED_CONTROLLER)
    leader = cluster.active_controller()
    removed = max(node for node in cluster.initial_controllers if node != leader)
    cluster.remove_controller(removed)
    return ADDED_CONTROLLER, removed
