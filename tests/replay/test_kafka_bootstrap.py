"""A real Apache Kafka 4.4 node formatted with `kafka-storage format --standalone --add-scram`: its log opens with
one control batch (offsets 0-2: LeaderChange, KRaftVersion, KRaftVoters) and its directory holds a bootstrap
checkpoint (`00000000000000000000-0000000000.checkpoint`: features and the SCRAM user). Kafka's loader, handed
that checkpoint first, publishes its first image at the end of the control batch (offset 2); offsets 0 and 1 have
none. Compared with Kafka's own loader at every offset: the directory read with its checkpoint (`replay DIR`), and
the log alone, as `ingest` reads it and as `kraftlake follow` carries it over the network (the checkpoint is
node-local) into the streaming job's warehouse; each refuses before its first image, the explorer too, and no
SCRAM salt or key reaches any output."""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kraftlake.cli.kafka_node import KafkaNode, kafka_uuid
from kraftlake.cli.main import main
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.topic_replay import TopicMessage
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import control_types as ct
from kraftlake.records import metadata_types as mt
from kraftlake.records.files import BOOTSTRAP_ID, MetadataLogDir, read_snapshot
from kraftlake.records.topic import decode_key, snapshot_of
from kraftlake.replay.errors import ReplayError
from kraftlake.replay.log_replay import replay_paths
from tests.explorer.conftest import client_for
from tests.fixtures.broker import create_topic
from tests.harness.followers import FollowProcess, end_offset, wait_published
from tests.harness.kafka_oracle import Comparison, assert_matches_kafka, assert_warehouse_matches_kafka
from tests.jobs.metadata_topic import drain, topic_messages

pytestmark = pytest.mark.jvm  # a Kafka node and Kafka's own loader

SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
SCRAM_USER = "alice"


@dataclass(frozen=True)
class Bootstrapped:
    """The stopped node, and what `kraftlake follow` carried from it over the network while it ran: the topic's
    messages and the warehouse the streaming job's writer built from them."""

    node: KafkaNode
    messages: list[TopicMessage]
    followed: Warehouse


@pytest.fixture(scope="module")
def bootstrapped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bootstrapped]:
    """One node formatted with --standalone and a SCRAM user, a topic created, followed over the network into a
    topic of its own broker (drained by the job's writer into a warehouse), then stopped cleanly."""
    root = tmp_path_factory.mktemp("bootstrap-node")
    node = KafkaNode(root / "node")
    node.format(kafka_uuid(), standalone=True,
                extra_args=["--add-scram", f"SCRAM-SHA-256=[name={SCRAM_USER},password=alice-secret]"])
    node.start()
    try:
        admin = AdminClient({"bootstrap.servers": node.bootstrap_servers})
        admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(timeout=30)
        topic = create_topic(node.bootstrap_servers)
        follower = FollowProcess(node.controller_endpoint, node.bootstrap_servers, topic).start()
        try:
            wait_published(node.bootstrap_servers, topic, end_offset(node.metadata_dir))
        finally:
            assert follower.finish() == 0, follower.output
        messages = topic_messages(node.bootstrap_servers, topic)
        drain(node.bootstrap_servers, topic, root / "followed", micro_batch=5)
    finally:
        node.stop()
    yield Bootstrapped(node, messages, Warehouse(root / "followed"))


@pytest.fixture(scope="module")
def node(bootstrapped: Bootstrapped) -> KafkaNode:
    return bootstrapped.node


@pytest.fixture(scope="module")
def compared(node: KafkaNode) -> Iterator[dict[str, Comparison]]:
    """Kafka's loader over the directory with its bootstrap checkpoint, and over the log alone."""
    with tempfile.TemporaryDirectory(dir=SCRATCH) as work:
        yield {"checkpoint": assert_matches_kafka(node.log_dir, Path(work) / "checkpoint", bootstrap=True),
               "log": assert_matches_kafka(node.log_dir, Path(work) / "log")}


@pytest.fixture(scope="module")
def ingested(node: KafkaNode, tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    warehouse = Warehouse(tmp_path_factory.mktemp("bootstrap-ingested") / "warehouse")
    ingest(node.metadata_dir, warehouse)
    return warehouse


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
    """One line naming the directory asked for (not a file in it), the offset and the first image."""
    for offset in ("0", "1"):
        assert main(["replay", str(node.metadata_dir), "--to-offset", offset]) == 2
        assert capsys.readouterr().err == (f"kraftlake replay: {node.metadata_dir}: offset {offset} is before the "
                                           "first published image (offset 2)\n")
    assert main(["replay", str(node.metadata_dir), "--to-offset", "2"]) == 0


def first_image(comparison: Comparison) -> int:
    """Kafka's first published image: after a log-only loader, where the leader commits the bootstrap records."""
    return min(publish.offset for publish in comparison.published)


def assert_refused_before(warehouse: Warehouse, first: int, capsys: pytest.CaptureFixture[str]) -> None:
    """`kraftlake image` and the explorer (API and page) refuse inside the log's first batch and just before
    `first`, in one line naming the warehouse (or cluster), the offset and the first image; they answer at it."""
    reader = WarehouseReader(warehouse)
    assert reader.known().span()[0] == first
    client = client_for(warehouse)
    assert client.get("/api/v1/clusters/demo").json()["first_offset"] == first
    for offset in sorted({0, 1, 2, first - 1}):
        assert main(["image", "--warehouse", warehouse.uri, "--at-offset", str(offset)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"kraftlake image: {warehouse.uri}: offset {offset} ") and str(first) in err, err
        assert err.count("\n") == 1, err
        answer = client.get("/api/v1/clusters/demo/image", params={"at": str(offset)})
        detail = answer.json()["detail"]
        assert answer.status_code == 404 and f"offset {offset} " in detail and str(first) in detail, answer.text
        assert client.get("/clusters/demo/image", params={"at": str(offset)}).status_code == 404
    assert main(["image", "--warehouse", warehouse.uri, "--at-offset", str(first)]) == 0
    capsys.readouterr()
    assert client.get("/api/v1/clusters/demo/image", params={"at": str(first)}).json()["offset"] == first


def test_ingest_reads_the_log_alone_and_starts_where_the_bootstrap_records_commit(
    compared: dict[str, Comparison], ingested: Warehouse, capsys: pytest.CaptureFixture[str],
) -> None:
    """`ingest` reads the log alone: its first image is Kafka's log-only loader's; before it the warehouse refuses
    at every offset, the explorer too."""
    comparison = compared["log"]
    assert comparison.differences == {}
    first = first_image(comparison)
    assert first > 2 and comparison.refused == first
    assert assert_warehouse_matches_kafka(WarehouseReader(ingested), comparison) > first
    assert_refused_before(ingested, first, capsys)


def test_follow_over_the_network_starts_where_the_bootstrap_records_commit(
    bootstrapped: Bootstrapped, compared: dict[str, Comparison], capsys: pytest.CaptureFixture[str],
) -> None:
    """The network observer never sees the node-local checkpoint: the topic starts with the log's batch at 0 and
    holds no snapshot, and the job's warehouse equals Kafka's log-only loader at every offset it read, refusing
    before the first image as `ingest`'s does."""
    keys = [(snapshot_of(m.key), decode_key(m.key)) for m in bootstrapped.messages if snapshot_of(m.key) is None]
    assert len(keys) == len(bootstrapped.messages) and keys[0] == (None, 0)
    reader = WarehouseReader(bootstrapped.followed)
    assert assert_warehouse_matches_kafka(reader, compared["log"]) > first_image(compared["log"])
    assert_refused_before(bootstrapped.followed, first_image(compared["log"]), capsys)


def scram_secrets(node: KafkaNode) -> list[bytes]:
    """The SCRAM user's salt and keys from the bootstrap checkpoint, raw and as hex and base64 text."""
    checkpoint = node.metadata_dir / BOOTSTRAP_ID.file_name()
    records = [r.message for b in read_snapshot(checkpoint, BOOTSTRAP_ID) for r in b.records
               if isinstance(r.message, mt.UserScramCredentialRecord)]
    assert [record.name for record in records] == [SCRAM_USER]
    raw = [records[0].salt, records[0].stored_key, records[0].server_key]
    assert all(value in checkpoint.read_bytes() for value in raw)  # what is searched for is what Kafka wrote
    return [form for value in raw for form in (value, value.hex().encode(), base64.b64encode(value))]


def every_value(value: Any) -> Iterator[bytes]:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            yield from every_value(item)
    elif value is not None:
        yield value if isinstance(value, bytes) else str(value).encode()


def warehouse_bytes(warehouse: Warehouse) -> bytes:
    """Every file's bytes, and every Parquet value (compressed pages hide them from the bytes)."""
    parts = []
    for path in Path(warehouse.uri).rglob("*"):
        if path.is_file():
            parts.append(path.read_bytes())
            if path.suffix == ".parquet":
                parts.extend(every_value(pq.read_table(path).to_pylist()))
    return b"\n".join(parts)


def test_no_scram_salt_or_key_reaches_any_output(bootstrapped: Bootstrapped, ingested: Warehouse,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    node = bootstrapped.node
    shown = []
    for args in (["replay", str(node.metadata_dir), "--to-offset", "2", "--json"], ["replay", str(node.metadata_dir)],
                 ["dump", str(node.metadata_dir / BOOTSTRAP_ID.file_name())]):
        assert main(args) == 0
        shown.append(capsys.readouterr().out.encode())
    assert SCRAM_USER.encode() in shown[0]
    for warehouse in (ingested, bootstrapped.followed):
        rows = client_for(warehouse).get("/api/v1/clusters/demo/image/scram_credentials")
        assert rows.status_code == 200 and SCRAM_USER in rows.text
        shown += [rows.content, warehouse_bytes(warehouse)]
    everything = b"\n".join(shown)
    leaked = [index for index, secret in enumerate(scram_secrets(node)) if secret in everything]
    assert not leaked, leaked


def test_a_node_formatted_and_never_started_has_no_image(node: KafkaNode, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Its bootstrap checkpoint alone (no log batch to publish it with): `replay` and `ingest` refuse in one
    line naming the directory, and `ingest` leaves no warehouse behind."""
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    checkpoint = node.metadata_dir / BOOTSTRAP_ID.file_name()
    (directory / checkpoint.name).write_bytes(checkpoint.read_bytes())
    reason = ("no image is published yet: a bootstrap checkpoint's image is published with the end of the log's "
              "first batch, and no log batch follows it")
    for args, said in ((["replay", str(directory)], f"kraftlake replay: {directory}: {reason}\n"),
                       (["replay", str(directory), "--to-offset", "0"],
                        f"kraftlake replay: {directory}: offset 0: {reason}\n"),
                       (["ingest", str(directory), "--warehouse", str(tmp_path / "warehouse")],
                        f"kraftlake ingest: {directory}: {reason}\n")):
        assert main(args) == 2
        assert capsys.readouterr().err == said
    assert not (tmp_path / "warehouse").exists()
