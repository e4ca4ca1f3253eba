"""A real Apache Kafka 4.4 node formatted with `kafka-storage format --standalone --add-scram`: its log opens with
one control batch (offsets 0-2: LeaderChange, KRaftVersion, KRaftVoters) and its directory holds a bootstrap
checkpoint (`00000000000000000000-0000000000.checkpoint`: features and the SCRAM user). Kafka's loader, handed
that checkpoint first, publishes its first image at the end of the control batch (offset 2); offsets 0 and 1 have
none. Compared with Kafka's own loader at every offset: the directory read with its checkpoint (`replay DIR`), and
the log alone (`ingest`, and what `follow` carries: the checkpoint is node-local)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kraftlake.cli.kafka_node import KafkaNode, kafka_uuid
from kraftlake.cli.main import main
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import control_types as ct
from kraftlake.records.files import BOOTSTRAP_ID, MetadataLogDir, read_snapshot
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.log_replay import replay_paths
from tests.explorer.conftest import client_for
from tests.harness.kafka_oracle import Comparison, assert_matches_kafka, assert_warehouse_matches_kafka

pytestmark = pytest.mark.jvm  # a Kafka node and Kafka's own loader

SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
SCRAM_USER = "alice"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """One node formatted with --standalone and a SCRAM user, a topic created, then stopped cleanly."""
    node = KafkaNode(tmp_path_factory.mktemp("bootstrap-node"))
    node.format(kafka_uuid(), standalone=True,
                extra_args=["--add-scram", f"SCRAM-SHA-256=[name={SCRAM_USER},password=alice-secret]"])
    node.start()
    try:
        admin = AdminClient({"bootstrap.servers": node.bootstrap_servers})
        admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(timeout=30)
    finally:
        node.stop()
    yield node


@pytest.fixture(scope="module")
def compared(node: KafkaNode) -> Iterator[dict[str, Comparison]]:
    """Kafka's loader over the directory with its bootstrap checkpoint, and over the log alone."""
    with tempfile.TemporaryDirectory(dir=SCRATCH) as work:
        yield {"checkpoint": assert_matches_kafka(node.log_dir, Path(work) / "checkpoint", bootstrap=True),
               "log": assert_matches_kafka(node.log_dir, Path(work) / "log")}


def test_the_node_starts_with_a_control_batch_and_a_bootstrap_checkpoint(node: KafkaNode) -> None:
    directory = MetadataLogDir(node.metadata_dir)
    first = next(iter(directory.log_batches()))
    assert (first.base_offset, first.last_offset, first.is_control) == (0, 2, True)
    assert [type(r.message) for r in first.records] == [ct.LeaderChangeMessage, ct.KRaftVersionRecord,
                                                        ct.VotersRecord]
    checkpoint = node.metadata_dir / BOOTSTRAP_ID.file_name()
    names = {type(r.message).__name__ for b in read_snapshot(checkpoint, BOOTSTRAP_ID) for r in b.records}
    assert {"FeatureLevelRecord", "UserScramCredentialRecord"} <= names


def test_with_its_checkpoint_kafka_publishes_at_the_end_of_the_first_batch(compared: dict[str, Comparison]) -> None:
    comparison = compared["checkpoint"]
    assert comparison.differences == {}
    assert [comparison.kafka_at(offset) for offset in (0, 1)] == [None, None]
    first = comparison.kafka_at(2)
    assert first is not None and first.offset == 2
    assert comparison.refused == 2 and comparison.first == 0


def test_replay_of_the_directory_equals_kafka_at_every_offset(node: KafkaNode,
                                                              compared: dict[str, Comparison]) -> None:
    """`kraftlake replay DIR --to-offset N` (the checkpoint read first) at every offset of the log: refused where
    Kafka has no image, else the image Kafka published last (the images themselves: `compared`)."""
    comparison = compared["checkpoint"]
    last = max(batch.last_offset for batch in MetadataLogDir(node.metadata_dir).log_batches())
    for offset in range(last + 1):
        kafka = comparison.kafka_at(offset)
        if kafka is None:
            with pytest.raises(ReplayError, match=rf"offset {offset} is before the first published image \(offset 2\)"):
                replay_paths([node.metadata_dir], offset)
        else:
            assert replay_paths([node.metadata_dir], offset).image.provenance.offset == kafka.offset, offset
    image = replay_paths([node.metadata_dir], 2).image
    assert SCRAM_USER in {user for user, _ in image.scram.credentials}


def test_replay_refuses_inside_the_first_batch(node: KafkaNode, capsys: pytest.CaptureFixture[str]) -> None:
    for offset in ("0", "1"):
        assert main(["replay", str(node.metadata_dir), "--to-offset", offset]) == 2
        assert f"offset {offset} is before the first published image (offset 2)" in capsys.readouterr().err
    assert main(["replay", str(node.metadata_dir), "--to-offset", "2"]) == 0


def test_the_log_alone_starts_where_the_bootstrap_records_commit(node: KafkaNode, compared: dict[str, Comparison],
                                                                tmp_path: Path) -> None:
    """`ingest` reads the log alone (as `follow` carries it): its first image is Kafka's log-only loader's, where
    the leader commits the bootstrap records; before it, the warehouse refuses, and the explorer says so."""
    comparison = compared["log"]
    assert comparison.differences == {}
    first = min(publish.offset for publish in comparison.published)
    assert first > 2 and comparison.refused == first
    warehouse = Warehouse(tmp_path / "warehouse")
    ingest(node.metadata_dir, warehouse)
    reader = WarehouseReader(warehouse)
    assert assert_warehouse_matches_kafka(reader, comparison) > first
    assert reader.known().span()[0] == first
    assert client_for(warehouse).get("/api/v1/clusters/demo").json()["first_offset"] == first
