"""The controller end to end: three `kraftlake controller start` processes (fsync'ing voters, the controller
and its JSON admin API, the publisher on the leader) and the local broker (one Apache Kafka node), all on
loopback.
Throughput runs concurrent admin clients for a fixed time; its clock stops when the topic holds the last
batch committed (admin request -> controller -> Raft commit on a majority -> publisher -> Kafka topic).
Records are counted in the topic (control batches left out). The big create sends 10k topics x 10
partitions (replication factor 3, 500 topics per request, 4 clients) and is timed from the first request
to the last batch in the topic. Brokers' session timeout is raised so that no fencing interferes.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from kraftlake.bridge.publisher import PublisherConfig, resume_offset
from kraftlake.brokersim.simulator import BrokerSimulator, SimulationConfig
from kraftlake.cli.broker import LocalBroker
from kraftlake.controller.admin_client import AdminClient
from kraftlake.raft.server import describe_quorum
from kraftlake.records import decode_batch
from kraftlake.records.topic import message_value
from tests.harness.processes import ControllerProcesses

SECONDS = 10.0
CLIENTS = 8
BIG_TOPICS = 10_000
BIG_PARTITIONS = 10
TOPICS_PER_REQUEST = 500
BIG_CLIENTS = 4
CATCH_UP_S = 300.0

Body = Callable[[int, int], tuple[str, dict[str, Any]]]  # (client, serial) -> (operation, body)


class Cluster:
    def __init__(self, root: Path) -> None:
        self.broker = LocalBroker(root / "broker").start()
        self.topic = f"bench-metadata-{uuid.uuid4().hex[:8]}"
        self.quorum = ControllerProcesses(root, self.broker.bootstrap_servers, self.topic,
                                          controller="session_timeout_ms = 3600000")
        self.publisher = PublisherConfig(self.broker.bootstrap_servers, self.topic)
        self.quorum.start_all()
        self.quorum.wait_for_leader()
        self.addresses = [self.quorum.admin_addresses[node] for node in sorted(self.quorum.admin_addresses)]

    def admin(self) -> AdminClient:
        return AdminClient(self.addresses, timeout_s=120)

    def close(self) -> None:
        self.quorum.stop_all()
        self.broker.stop()

    def committed_end(self) -> int:
        """The quorum leader's high watermark."""
        return int(asyncio.run(describe_quorum(self.quorum.config))["highWatermark"])

    def wait_for_topic(self, end: int) -> float:
        """Blocks until the topic holds every batch below `end`; returns the time it did (monotonic)."""
        deadline = time.monotonic() + CATCH_UP_S
        while time.monotonic() < deadline:
            if resume_offset(self.publisher) >= end:
                return time.monotonic()
            time.sleep(0.02)
        raise RuntimeError(f"the topic did not reach offset {end} within {CATCH_UP_S} s")

    def records_in_topic(self, start: int, end: int) -> tuple[int, int]:
        """(batches, records) of the data batches with base offsets in [start, end), duplicates dropped."""
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap_servers, "group.id": uuid.uuid4().hex,
                             "enable.auto.commit": False})
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=30, cached=False)
            consumer.assign([TopicPartition(self.topic, 0, low)])
            seen: set[int] = set()
            batches = records = 0
            for _ in range(high - low):
                message = consumer.poll(30)
                if message is None or message.error() is not None:
                    raise RuntimeError(f"cannot read {self.topic}: {message and message.error()}")
                batch = decode_batch(message_value(message))
                if start <= batch.base_offset < end and batch.base_offset not in seen and not batch.is_control:
                    seen.add(batch.base_offset)
                    batches += 1
                    records += len(batch.records)
            return batches, records
        finally:
            consumer.close()


def _drive(cluster: Cluster, clients: int, body: Body, *, seconds: float | None = None,
           requests: int | None = None) -> tuple[int, list[float], float, float]:
    """Run `clients` threads until `seconds` pass or `requests` are sent; returns (operations, latencies in ms,
    start, time the topic held the last committed batch)."""
    latencies: list[float] = []
    lock = threading.Lock()
    serial = iter(range(requests if requests is not None else 1 << 62))
    start = time.monotonic()
    stop = start + seconds if seconds is not None else float("inf")

    def client(number: int) -> None:
        admin = cluster.admin()
        while time.monotonic() < stop:
            with lock:
                index = next(serial, None)
            if index is None:
                return
            operation, request = body(number, index)
            began = time.perf_counter()
            admin.call(operation, request)
            with lock:
                latencies.append((time.perf_counter() - began) * 1000.0)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done = cluster.wait_for_topic(cluster.committed_end())
    return len(latencies), latencies, start, done


def _throughput(cluster: Cluster, name: str, body: Body) -> list[dict[str, Any]]:
    first = cluster.committed_end()
    operations, latencies, start, done = _drive(cluster, CLIENTS, body, seconds=SECONDS)
    batches, records = cluster.records_in_topic(first, cluster.committed_end())
    elapsed = done - start
    notes = f"{name}; {CLIENTS} clients for {SECONDS:.0f} s, clock stopped when the topic held the last batch"
    return [
        {"name": f"{name}: operations/s", "value": operations / elapsed, "unit": "ops/s", "notes": notes},
        {"name": f"{name}: records/s", "value": records / elapsed, "unit": "records/s",
         "notes": f"{records:,} records in {batches:,} batches (NoOps included), counted in the topic"},
        {"name": f"{name}: request latency p50", "value": statistics.median(latencies), "unit": "ms",
         "notes": "admin request -> committed on a majority -> response"},
    ]


def _create_topic(partitions: int) -> Body:
    def body(client: int, serial: int) -> tuple[str, dict[str, Any]]:
        return "create-topics", {"topics": [
            {"name": f"t-{client}-{serial}", "partitions": partitions, "replication_factor": 3}
        ]}
    return body


def _alter_config(client: int, serial: int) -> tuple[str, dict[str, Any]]:
    return "alter-configs", {"resource_type": "topic", "resource_name": "configured", "changes": [
        {"op": "set", "name": "retention.ms", "value": str(1000 + serial)}
    ]}


def _big_create(cluster: Cluster) -> list[dict[str, Any]]:
    def body(client: int, serial: int) -> tuple[str, dict[str, Any]]:
        names = range(serial * TOPICS_PER_REQUEST, (serial + 1) * TOPICS_PER_REQUEST)
        return "create-topics", {"topics": [
            {"name": f"big-{n}", "partitions": BIG_PARTITIONS, "replication_factor": 3} for n in names
        ]}

    first = cluster.committed_end()
    requests = BIG_TOPICS // TOPICS_PER_REQUEST
    _, _, start, done = _drive(cluster, BIG_CLIENTS, body, requests=requests)
    batches, records = cluster.records_in_topic(first, cluster.committed_end())
    partitions = int(cluster.admin().describe()["partitions"])
    elapsed = done - start
    total = BIG_TOPICS * BIG_PARTITIONS
    return [
        {"name": f"create {total:,} partitions ({BIG_TOPICS:,} topics x {BIG_PARTITIONS})", "value": elapsed,
         "unit": "s", "notes": f"first request -> last batch in the topic; {requests} requests of "
                               f"{TOPICS_PER_REQUEST} topics, {BIG_CLIENTS} clients, RF 3 on 3 brokers"},
        {"name": "big create: partitions/s", "value": total / elapsed, "unit": "partitions/s",
         "notes": f"{records:,} records in {batches:,} batches in the topic; cluster holds {partitions:,} "
                  f"partitions"},
    ]


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="bench-controller-") as scratch:
        cluster = Cluster(Path(scratch))
        try:
            admin = cluster.admin()
            BrokerSimulator(admin, SimulationConfig(brokers=3, topics=0)).start_cluster()
            admin.call("create-topics", {"topics": [{"name": "configured", "partitions": 1, "replication_factor": 3}]})
            cluster.wait_for_topic(cluster.committed_end())
            rows = _throughput(cluster, "create-topics (1 topic x 3 partitions, RF 3)", _create_topic(3))
            rows += _throughput(cluster, "alter-configs (1 topic config)", _alter_config)
            rows += _big_create(cluster)
            return rows
        finally:
            cluster.close()


if __name__ == "__main__":
    for row in run():
        print(row)
