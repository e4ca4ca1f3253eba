"""Kafka's own image as the oracle on the log of a real Kafka cluster driven as an operator would
(`operator_scenario`: topics, configs, SCRAM users, quotas, ACLs, a broker and the active controller
SIGKILLed, a reassignment, a controller added and one removed, metadata.version upgraded to 4.4-IV2).

A live node's `__cluster_metadata-0` is copied and replayed three ways, each checked against Kafka 4.4's
MetadataImage (java/oracle) at every offset, against the images Kafka's loader publishes: kraftlake's replay,
`kraftlake ingest` into a Delta warehouse read back by time travel, and `kraftlake publish` into a topic
drained by the streaming job (Spark's Kafka source, several micro-batches) into another warehouse. The
cluster's metadata retention is low (Kafka deletes segments and takes snapshots all along), so the copies
come from the hard-link archive of every file each node wrote; and the two follow modes, run for the whole
scenario, are checked the same way on what they kept."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kraftlake.cli.main import main
from kraftlake.jobs.kafka_topic import TopicMessage
from kraftlake.jobs.materialize import MaterializeConfig, run
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.batch import read_header
from kraftlake.records.errors import CorruptBatchError
from kraftlake.records.topic import decode_key, snapshot_of
from kraftlake.replay.image import EMPTY_IMAGE, MetadataImage
from tests.fixtures.broker import create_topic
from tests.fixtures.kafka_cluster import OperatorScenario
from tests.harness.followers import log_start
from tests.harness.kafka_cluster import KafkaCluster
from tests.harness.kafka_oracle import (
    Comparison,
    assert_matches_kafka,
    assert_warehouse_matches_kafka,
    canonical,
    kafka_image,
    kraftlake_answers,
    read_log,
    same_state,
)
from tests.harness.kafka_scenario import DELETED_TOPIC, ORDERS_PARTITIONS_AFTER, TOPICS
from tests.jobs.metadata_topic import drain, topic_messages

pytestmark = pytest.mark.integration

SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None  # Kafka's snapshot writer fsyncs every file
METADATA_VERSION_4_4_IV2 = 33  # the scenario's LATEST_RELEASE as a feature level
# What the scenario's operator actions write, by the record (or control record) class: each must change the
# image somewhere in the log, so the comparison covers it.
CHANGES_COMPARED = {
    "TopicRecord", "PartitionRecord", "PartitionChangeRecord", "RemoveTopicRecord", "ConfigRecord",
    "UserScramCredentialRecord", "RemoveUserScramCredentialRecord", "ClientQuotaRecord",
    "AccessControlEntryRecord", "RemoveAccessControlEntryRecord", "RegisterBrokerRecord",
    "BrokerRegistrationChangeRecord", "RegisterControllerRecord", "FeatureLevelRecord", "VotersRecord",
}  # fmt: skip
MICRO_BATCH = 25  # Kafka messages (Raft batches) per trigger: the scenario's 150-300 batches take 6-12 triggers


def copy_live(source: Path, target: Path, attempts: int = 3) -> Path:
    """A copy of a node's archived metadata directory, as a `__cluster_metadata-0` under `target`: its log and
    the one snapshot the log starts from (`log_files`). Kafka keeps appending to the active segment (a NoOp
    every 500 ms), so a copy may end inside the batch being written: copied again then."""
    copied = target / source.name
    for attempt in range(attempts):
        shutil.rmtree(copied, ignore_errors=True)
        shutil.copytree(source, copied, ignore=not_log_files)
        try:
            read_log(target)
            return target
        except CorruptBatchError as error:
            if "truncated" not in str(error) or attempt == attempts - 1:
                raise
            time.sleep(0.2)
    raise AssertionError("unreachable")


def not_log_files(directory: str, names: list[str]) -> set[str]:
    """What a copy leaves out of an archive: the snapshots Kafka took every 2 s (a reader would start from the
    newest), but for the one the log continues from (the bootstrap checkpoint at 0, or the snapshot a joining
    node was handed), and empty segments (one a joining node truncated away when handed that snapshot)."""
    segments = sorted(name for name in names if name.endswith(".log") and (Path(directory) / name).stat().st_size)
    start = int(segments[0][:20])
    return {name for name in names if (name.endswith(".log") and name not in segments)
            or (name.endswith(".checkpoint") and int(name[:20]) != start)}  # fmt: skip


@pytest.fixture(scope="module")
def copies(operator_scenario: OperatorScenario, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A node that ran through the whole scenario, and the controller added late: their logs were written
    differently, their bootstrap checkpoints differ. Copied from the scenario's archive (Kafka's retention
    deleted most of it from the nodes): the steady node's log from offset 0; the added controller joined after
    the leader's retention began, so Kafka handed it the leader's snapshot first (FetchSnapshot) and its log
    continues from there. (The nodes SIGKILLed mid-scenario came back behind the leader's log start and were
    handed a snapshot too: their logs have a gap, bridged by it, and are not compared here.)"""
    report, root = operator_scenario.report, tmp_path_factory.mktemp("scenario-copies")
    chosen = {"steady-node": operator_scenario.steady_node, "added-controller": report.added_controller}
    return {name: copy_live(operator_scenario.archived(node), root / name) for name, node in chosen.items()}


@pytest.fixture(scope="module")
def compared(copies: dict[str, Path]) -> Iterator[dict[str, Comparison]]:
    """One oracle run per copy (Kafka's snapshot at every offset that changes either image)."""
    with tempfile.TemporaryDirectory(dir=SCRATCH) as work:
        yield {name: assert_matches_kafka(log, Path(work) / name) for name, log in copies.items()}


@pytest.mark.parametrize("copy", ["steady-node", "added-controller"])
def test_kraftlake_equals_kafka_at_every_offset_of_the_scenarios_log(
    compared: dict[str, Comparison], copies: dict[str, Path], copy: str
) -> None:
    """Equal at every offset (the answering image published at the same offset, the same state), with no
    deliberate difference in play; every kind of change the operator made is in a batch whose image changed."""
    comparison = compared[copy]
    print(f"operator scenario, {copy}: {comparison.compared} offsets compared, {comparison.refused} refused by "
          f"both, {len(comparison.snapshots)} published states")
    assert comparison.differences == {}
    log = read_log(copies[copy])
    kinds = {batch.last_offset: {type(record.message).__name__ for record in batch.records} for batch in log.batches}
    if copy == "steady-node":  # the whole log: every kind of change compared with the batch that makes it
        changed = set().union(*(kinds.get(offset, set()) for offset in comparison.offsets))
        assert log.start is EMPTY_IMAGE and changed >= CHANGES_COMPARED
    else:  # from Kafka's snapshot on: compared there, then at every change after it
        # how many states follow it depends on when the controller joined (8 to 12 seen)
        assert comparison.offsets[0] == log.start.provenance.offset and len(comparison.offsets) > 3
        assert comparison.compared > 10
    last = kafka_image(comparison.snapshots[comparison.offsets[-1]])
    assert_scenario_end_state(last)


def assert_scenario_end_state(image: MetadataImage) -> None:
    """Kafka's image after the scenario's last change holds what the operator did (the copy is complete)."""
    assert image.features.metadata_version == METADATA_VERSION_4_4_IV2
    assert set(image.topics.by_name) >= set(TOPICS) - {DELETED_TOPIC} and DELETED_TOPIC not in image.topics.by_name
    assert len(image.topics.by_name["orders"].partitions) == ORDERS_PARTITIONS_AFTER


def test_the_two_copies_hold_the_same_log(copies: dict[str, Path]) -> None:
    """The replicated log is the same on both nodes where both have it (the added controller's from the
    snapshot it was handed, up to the shorter copy's end), and that snapshot is the whole log's image there."""
    whole, joined = (read_log(path) for path in copies.values())
    start = joined.start.provenance.offset
    first = [replace(batch, position=0) for batch in whole.batches if batch.base_offset > start]
    second = [replace(batch, position=0) for batch in joined.batches]  # where a batch sits in its segment differs
    shorter = min(len(first), len(second))
    # How many batches both hold depends on when the added controller joined under 1 s retention: 20-60 seen.
    assert len(whole.batches) > 100 and shorter >= 10 and first[:shorter] == second[:shorter]
    at_start = kraftlake_answers(whole).at(start)
    assert at_start is not None and same_state(at_start, joined.start)


def assert_warehouse_equals_kafka(warehouse: Warehouse, comparison: Comparison) -> None:
    """Time travel at every offset: the image Kafka published last (`assert_warehouse_matches_kafka`)."""
    count = assert_warehouse_matches_kafka(WarehouseReader(warehouse), comparison)
    print(f"warehouse {warehouse.uri}: {count} offsets compared")


def test_kraftlake_ingest_then_time_travel_equals_kafka(
    compared: dict[str, Comparison], copies: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kraftlake ingest` of the added controller's copy (Kafka's snapshot, then the log; an image every 50
    offsets, so most offsets are read through the history tables), then every offset compared; `kraftlake
    image --json` prints Kafka's image too."""
    comparison, uri = compared["added-controller"], str(tmp_path / "warehouse")
    assert main(["ingest", str(copies["added-controller"]), "--warehouse", uri, "--image-every", "50"]) == 0
    assert_warehouse_equals_kafka(Warehouse(uri), comparison)
    capsys.readouterr()
    middle = comparison.offsets[len(comparison.offsets) // 2]
    assert main(["image", "--warehouse", uri, "--at-offset", str(middle), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    del printed["provenance"]
    assert printed == canonical(kafka_image(comparison.snapshots[middle]))


def test_publish_then_the_streaming_job_equals_kafka(
    compared: dict[str, Comparison], copies: dict[str, Path], kafka_broker, spark, tmp_path: Path
) -> None:
    """`kraftlake publish` into a topic on the test broker, the streaming job drains it `MICRO_BATCH`
    messages per trigger into a fresh warehouse: every offset compared equals Kafka's image."""
    comparison, bootstrap = compared["steady-node"], kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    assert main(["publish", str(copies["steady-node"]), "--topic", topic, "--bootstrap-servers", bootstrap]) == 0
    config = MaterializeConfig(bootstrap, topic, str(tmp_path / "warehouse"), tmp_path / "checkpoint",
                               available_now=True, max_offsets_per_trigger=MICRO_BATCH,
                               idle_publish_seconds=0.0, coalesce_backlog=False)
    run(config, spark)
    warehouse = Warehouse(config.warehouse)
    assert len(WarehouseReader(warehouse).images()) >= 5  # several micro-batches, each publishing an image
    assert_warehouse_equals_kafka(warehouse, comparison)


def test_both_follow_modes_kept_the_scenario_past_kafkas_retention(
    operator_scenario: OperatorScenario, compared: dict[str, Comparison], kafka_broker, tmp_path: Path
) -> None:
    """`kraftlake follow` and `kraftlake publish DIR --follow` (on the broker the scenario SIGKILLs) ran through
    the whole scenario (broker crash, failover, voter change, upgrade) while Kafka deleted segments: each topic,
    drained into a warehouse, answers every offset its follower saw where a record changes the image, to the
    scenario's end, equal to Kafka's image there (the oracle on the steady node's archived whole log), offsets
    no node still has among them. The crashed broker came back behind the leader's log start and was handed
    a snapshot (Kafka never wrote the offsets between to its disk): its file follower goes on from that
    snapshot, so the offsets it never saw are left out."""
    comparison, bootstrap = compared["steady-node"], kafka_broker.bootstrap_servers
    first_answered = {}
    for mode, follower in operator_scenario.followed.items():
        assert follower.finish() == 0, follower.output[-2000:]
        seen = seen_offsets(topic_messages(bootstrap, operator_scenario.topics[mode]))
        answered = [offset for offset in comparison.offsets if offset in seen]
        first_answered[mode] = answered[0]
        assert_scenario_end_state(kafka_image(comparison.snapshots[answered[-1]]))  # followed to the end
        drain(bootstrap, operator_scenario.topics[mode], tmp_path / mode.replace(" ", ""), micro_batch=50)
        reader = WarehouseReader(Warehouse(tmp_path / mode.replace(" ", "")))
        count = assert_warehouse_matches_kafka(reader, comparison, sorted(seen & set(range(answered[0], answered[-1]))))
        print(f"{mode}: {count} offsets compared")
    assert b"leader change: offset" in operator_scenario.followed["follow"].output
    deleted = wait_deleted(operator_scenario.cluster, max(first_answered.values()))
    assert all(first < deleted for first in first_answered.values()), (first_answered, deleted)


def wait_deleted(cluster: KafkaCluster, offset: int, timeout_s: float = 90) -> int:
    """Until no running node holds `offset` any more (Kafka's cleaner runs a minute after a node starts, then
    once a minute: a node restarted late in the scenario may not have cleaned yet); the nodes' earliest offset."""
    deadline = time.monotonic() + timeout_s
    while (earliest := min(log_start(n.metadata_dir) for n in cluster.nodes.values() if n.running)) <= offset:
        assert time.monotonic() < deadline, f"a node still has offset {offset} after {timeout_s:g} s"
        time.sleep(0.5)
    return earliest


def seen_offsets(messages: list[TopicMessage]) -> set[int]:
    """The offsets a followed topic's warehouse holds the image at: each log batch's, and the last offset a
    snapshot covers (the offsets it stands for were never seen one by one)."""
    seen: set[int] = set()
    for message in messages:
        snapshot = snapshot_of(message.key)
        if snapshot is not None:
            seen.add(snapshot.end_offset - 1)
        else:
            seen.update(range(decode_key(message.key), read_header(message.value, 0, "").last_offset + 1))
    return seen
