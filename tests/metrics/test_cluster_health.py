"""The cluster-health series of a real `kraftlake ui`, scraped by a real Prometheus, while a real Kafka cluster (the
session's three nodes) loses a broker to SIGKILL: Kafka fences it, its RF=1 partition goes offline and its RF=2
one under-replicated, and Prometheus reads what Kafka's own AdminClient says, before, during and once the node is
back. The warehouse is kept current by `kraftlake ingest`'s own function (in this process, no JVM) on a surviving
voter's metadata log, whole batches copied from the live directory (its active segment may end mid-batch), again
each time; the ui reads the last published image at scrape time. The victim is not the quorum's leader: no
election, so no log tail is truncated between two ingests."""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka.admin import NewTopic

from kraftlake.lake.ingest import ingest
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.files import METADATA_PARTITION_DIR
from tests.explorer.conftest import start_ui, stop_ui
from tests.fixtures.prometheus import Prometheus
from tests.harness.followers import log_batches
from tests.harness.kafka_cluster import KafkaCluster, wait_for
from tests.metrics.test_ui_metrics import metrics_address

JOB = '{job="kraftlake-ui",cluster="default"}'
COUNTS = ("kraftlake_kafka_brokers", "kraftlake_kafka_brokers_fenced", "kraftlake_kafka_partitions",
          "kraftlake_kafka_partitions_offline", "kraftlake_kafka_partitions_under_replicated")


def kafka_says(cluster: KafkaCluster) -> dict[str, int]:
    """The counts as Kafka's AdminClient sees them (a fenced broker is left out of the metadata's brokers;
    an offline partition has no leader)."""
    metadata = cluster.admin().list_topics(timeout=10)
    partitions = [p for topic in metadata.topics.values() for p in topic.partitions.values()]
    registered = len(cluster.brokers())
    return {"kraftlake_kafka_brokers": registered,
            "kraftlake_kafka_brokers_fenced": registered - len(metadata.brokers),
            "kraftlake_kafka_partitions": len(partitions),
            "kraftlake_kafka_partitions_offline": sum(p.leader < 0 for p in partitions),
            "kraftlake_kafka_partitions_under_replicated": sum(len(p.isrs) < len(p.replicas) for p in partitions)}


def ingest_whole_batches(node_dir: Path, copy: Path, warehouse: Warehouse) -> int:
    """Ingest a copy of a live node's log, cut to whole batches; the offset of the image it published."""
    batches = log_batches(node_dir)
    copy.mkdir(parents=True, exist_ok=True)
    (copy / f"{min(batches):020d}.log").write_bytes(b"".join(batches[offset] for offset in sorted(batches)))
    return ingest(copy, warehouse).last_offset


def agree(cluster: KafkaCluster, node_dir: Path, copy: Path, warehouse: Warehouse,
          prometheus: Prometheus) -> dict[str, int] | None:
    """Prometheus' counts at a fresh image, when they equal Kafka's (asked before and after: unchanged)."""
    before = kafka_says(cluster)
    offset = ingest_whole_batches(node_dir, copy, warehouse)
    prometheus.wait_for(f"kraftlake_image_offset{JOB}", lambda s: s.get("default") == offset)
    scraped = {name: int(prometheus.query(f"{name}{JOB}")["default"]) for name in COUNTS}
    return scraped if scraped == before == kafka_says(cluster) else None


def healthy(counts: dict[str, int] | None) -> dict[str, int] | None:
    """The counts when no broker is fenced and every partition has a leader and its whole ISR."""
    if counts is None or any(counts[name] for name in (
            "kraftlake_kafka_brokers_fenced", "kraftlake_kafka_partitions_offline",
            "kraftlake_kafka_partitions_under_replicated")):
        return None
    return counts


def test_prometheus_sees_a_killed_broker_fenced_and_its_partitions_offline_or_under_replicated(
    kafka_cluster: KafkaCluster, prometheus: Prometheus, tmp_path: Path
) -> None:
    leader = kafka_cluster.active_controller()
    source = leader  # its log: the kill starts no election, so nothing ingested is truncated later
    victim = next(node for node in kafka_cluster.brokers() if node != leader)
    node_dir, copy = kafka_cluster.metadata_dir(source), tmp_path / "copy" / METADATA_PARTITION_DIR
    warehouse = Warehouse(tmp_path / "warehouse")
    admin = kafka_cluster.admin()
    suffix = uuid.uuid4().hex[:8]
    alone, paired = f"health-alone-{suffix}", f"health-paired-{suffix}"  # RF=1 on the victim; RF=2 with the source
    created = admin.create_topics([NewTopic(alone, 1, replica_assignment=[[victim]]),
                                   NewTopic(paired, 1, replica_assignment=[sorted([victim, source])])])
    for future in created.values():
        future.result(60)

    def described(name: str) -> tuple[int, list[int]] | None:
        partition = kafka_cluster.admin().list_topics(name, timeout=10).topics[name].partitions.get(0)
        return None if partition is None else (partition.leader, sorted(partition.isrs))

    def whole() -> bool:
        """Both topics led, with every replica in sync."""
        return described(alone) == (victim, [victim]) and (described(paired) or (-1, []))[1] == sorted([victim, source])

    wait_for(whole, "the topics' leaders and whole ISRs")
    ingest_whole_batches(node_dir, copy, warehouse)
    ui = start_ui(warehouse, "--metrics-address", "0")
    try:
        prometheus.scrape("kraftlake-ui", [metrics_address(ui)])
        before = wait_for(lambda: healthy(agree(kafka_cluster, node_dir, copy, warehouse, prometheus)),
                          "Prometheus to agree with Kafka on a whole cluster")
        assert before["kraftlake_kafka_brokers"] == 3

        kafka_cluster.kill(victim)
        try:
            kafka_cluster.wait_fenced(victim)
            wait_for(lambda: described(alone) == (-1, [victim]) or described(alone) == (-1, []),
                     "the RF=1 partition offline")
            wait_for(lambda: described(paired) == (source, [source]), "the RF=2 partition under-replicated")
            killed = wait_for(lambda: agree(kafka_cluster, node_dir, copy, warehouse, prometheus),
                              "Prometheus to agree with Kafka after the kill")
        finally:
            kafka_cluster.restart(victim)  # the shared cluster as it was: the node back and unfenced
        assert killed["kraftlake_kafka_brokers"] == 3 and killed["kraftlake_kafka_brokers_fenced"] == 1
        assert killed["kraftlake_kafka_partitions_offline"] >= 1  # the RF=1 one, and any other only on the victim
        assert killed["kraftlake_kafka_partitions_under_replicated"] >= 1  # the RF=2 one, and any other on it
        wait_for(whole, "the topics whole again")
        back = wait_for(lambda: healthy(agree(kafka_cluster, node_dir, copy, warehouse, prometheus)),
                        "Prometheus to agree with Kafka once the node is back")
        assert back == before
    finally:
        prometheus.scrape("kraftlake-ui", [])
        stop_ui(ui)
        for future in admin.delete_topics([alone, paired]).values():
            future.result(60)
