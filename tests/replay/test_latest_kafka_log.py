"""A real Apache Kafka 4.4 node at its latest metadata.version (RegisterBrokerRecord v4 and the rest of what
4.4 writes): kraftlake reads its `__cluster_metadata-0` and its image equals Kafka's own at every offset."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kraftlake.cli.kafka_node import KafkaNode, kafka_uuid
from kraftlake.cli.main import main
from kraftlake.records import metadata_types as mt
from kraftlake.records.files import MetadataLogDir
from kraftlake.replay.log_replay import replay_paths
from tests.harness.kafka_oracle import assert_matches_kafka

pytestmark = pytest.mark.jvm  # a Kafka node and Kafka's own loader

SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None


def make_changes(bootstrap: str, broker_id: int) -> None:
    """A topic with a config, a topic config altered, a broker config and a SCRAM user: several sub-images."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics([NewTopic("orders", 3, 1, config={"retention.ms": "-1"})])
    created["orders"].result(timeout=30)
    altered = admin.incremental_alter_configs([
        ConfigResource("topic", "orders", incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)]),
        ConfigResource("broker", str(broker_id), incremental_configs=[
            ConfigEntry("log.retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)]),
    ])
    for future in altered.values():
        future.result(timeout=30)
    upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                          b"secret", b"salt-of-alice")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)


@pytest.fixture(scope="module")
def latest_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """One node formatted without --release-version (Kafka's latest), changed, then stopped cleanly."""
    node = KafkaNode(tmp_path_factory.mktemp("latest-mv-node"))
    node.format(kafka_uuid(), standalone=True)
    node.start()
    try:
        make_changes(node.bootstrap_servers, node.node_id)
    finally:
        node.stop()
    yield node


def test_the_log_holds_what_only_kafka_4_4_writes(latest_log: KafkaNode) -> None:
    seen = {(type(r.message), r.version) for b in MetadataLogDir(latest_log.metadata_dir).log_batches()
            for r in b.records}
    assert (mt.RegisterBrokerRecord, mt.RegisterBrokerRecord.SCHEMA.max_version) in seen
    assert mt.RegisterBrokerRecord.SCHEMA.max_version == 4
    image = replay_paths([latest_log.metadata_dir]).image
    assert [b.cordoned_directories for b in image.cluster.brokers.values()] == [()]  # reported, none cordoned


def test_kraftlake_image_equals_kafkas_at_every_offset(latest_log: KafkaNode) -> None:
    with tempfile.TemporaryDirectory(dir=SCRATCH) as work:
        comparison = assert_matches_kafka(latest_log.log_dir, Path(work))
    assert len(comparison.snapshots) > 5  # the registration, the topic, its partitions, configs, SCRAM


def test_kraftlake_replay_reads_the_directory(latest_log: KafkaNode, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(latest_log.metadata_dir)]) == 0
    out = capsys.readouterr().out
    assert "topics: 1, partitions: 3" in out, out
