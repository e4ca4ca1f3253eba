"""kraftlake's image equals Kafka's own (Kafka 4.4's MetadataBatchLoader and MetadataImage, run by
java/oracle through tests/harness/kafka_oracle.py) on every real sample, on a log touching every sub-image,
and read back from a warehouse by time travel; each deliberate difference is checked where it applies."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.scan import Where
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import metadata_types as mt
from kraftlake.records.batch import encode_batch, make_batch
from kraftlake.records.control_types import KRaftVersionRecord, VotersRecord
from kraftlake.records.kafka_names import UNASSIGNED_DIRECTORY as UNASSIGNED
from kraftlake.replay.log_replay import replay_paths
from kraftlake.settings.jars import jar_dir
from tests.harness.kafka_oracle import (
    ABORTED_THEN_MORE,
    KRAFT_VERSION_0,
    Comparison,
    MismatchError,
    OracleError,
    assert_matches_kafka,
    assert_same_canonical,
    assert_warehouse_matches_kafka,
    kafka_image,
    kafka_snapshots,
    kraftlake_answers,
    read_log,
)
from tests.replay.builders import KV, MV, A, B, E, N, P, T, change, remove, rich_records, uuid

pytestmark = pytest.mark.jvm  # Kafka's own loader, in a JVM

SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
# Every metadata directory in ../shared/kafka-samples.
# per sample: offsets compared (every offset of the log), of which refused by both (before Kafka's first
# published image: a fresh cluster's control records), and Kafka's distinct published states
SAMPLES = {
    "Jeong-Rae_KafkaDemo/kraft-combined-logs": (3072, 4, 10),
    "Niloufar1171_LDI-POC": (4929, 4, 13),
    "rjmfernandes_flink-on-prem/data": (17027, 4, 69),
    "kckoh_xflow/kafka-data": (1, 0, 1),  # a snapshot only: the one image it holds
}
BIG_BATCH = ("Niloufar1171_LDI-POC", 416)  # a TopicRecord opening a batch whose PartitionRecords follow


@pytest.fixture(scope="module")
def compared(samples_dir: Path) -> Iterator[dict[str, Comparison]]:
    """One oracle run per sample, shared by the tests below; Kafka's snapshots in memory-backed scratch
    (Kafka's snapshot writer fsyncs each of the ~900 files)."""
    with tempfile.TemporaryDirectory(dir=SCRATCH) as work:
        yield {sample: assert_matches_kafka(samples_dir / sample, Path(work) / str(index))
               for index, sample in enumerate(SAMPLES)}


def test_the_samples_are_the_ones_listed(samples_dir: Path) -> None:
    found = sorted(str(path.parent.relative_to(samples_dir)) for path in samples_dir.rglob("__cluster_metadata-0"))
    assert found == sorted(SAMPLES)


@pytest.mark.parametrize("sample", SAMPLES)
def test_kraftlake_equals_kafka_at_every_offset_of_a_real_log(compared: dict[str, Comparison], sample: str) -> None:
    """kraftlake's answer at EVERY offset is Kafka's last published image at or before it (or both have none).
    No deliberate difference applies to these logs (no aborted transaction, static quorums)."""
    comparison = compared[sample]
    print(f"{sample}: {comparison.compared} offsets compared, {comparison.refused} refused by both, "
          f"{len(comparison.snapshots)} published states")
    assert (comparison.compared, comparison.refused, len(comparison.snapshots)) == SAMPLES[sample]
    assert comparison.differences == {}


@pytest.mark.parametrize("sample", SAMPLES)
def test_the_warehouse_equals_kafka(compared: dict[str, Comparison], samples_dir: Path, tmp_path: Path,
                                    sample: str) -> None:
    """`kraftlake ingest` into a Delta warehouse: at EVERY offset the reader answers with the image Kafka
    published last (`WarehouseReader.answers`, one read for all), or refuses where Kafka has none; the image
    read back (`image_at`) equals Kafka's where each published state starts, and at the end."""
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    ingest(samples_dir / sample / "__cluster_metadata-0", warehouse, image_every=500)
    count = assert_warehouse_matches_kafka(WarehouseReader(warehouse), compared[sample])
    print(f"{sample}: warehouse, {count} offsets compared")
    assert count == SAMPLES[sample][0]


def test_inside_a_big_batch_the_warehouse_answers_the_image_before_it(samples_dir: Path, tmp_path: Path) -> None:
    """Offset 416 opens a batch of a topic's TopicRecord and its PartitionRecords: every offset in it but the
    last is answered by the image published at 415 (no partition-less `__consumer_offsets`)."""
    sample, offset = BIG_BATCH
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    ingest(samples_dir / sample / "__cluster_metadata-0", warehouse, image_every=500)
    reader = WarehouseReader(warehouse)
    batch = reader.scan("batches", [Where("base_offset", "=", offset)]).to_pylist()[0]
    assert batch["last_offset"] - batch["base_offset"] >= 10 and batch["published_offsets"] == [batch["last_offset"]]
    for inside in range(offset, batch["last_offset"]):
        image = reader.image_at(inside)
        assert (image.asked, image.provenance.offset) == (inside, offset - 1)
    assert reader.image_at(batch["last_offset"]).provenance.offset == batch["last_offset"]
    assert replay_paths([samples_dir / sample], offset).image.provenance.offset == offset - 1


def write_log(directory: Path, batches: Sequence[Sequence[Any]]) -> Path:
    """A `00000000000000000000.log` of one batch per group, control batches for Raft records, epoch 1."""
    directory.mkdir(parents=True)
    encoded, offset = [], 0
    for messages in batches:
        control = isinstance(messages[0], KRaftVersionRecord | VotersRecord)
        batch = make_batch(offset, 1, 1000 + offset, messages, control=control)
        encoded.append(encode_batch(batch))
        offset = batch.last_offset + 1
    (directory / "00000000000000000000.log").write_bytes(b"".join(encoded))
    return directory


def every_sub_image() -> list[list[Any]]:
    """Every record type (tests.replay.builders.rich_records at metadata.version 4.2, whose records carry
    directories and ELR), a committed transaction across batches, a secret config, and last an aborted
    transaction followed by a record in the same batch (the last batch)."""
    records = [MV(29) if isinstance(r, mt.FeatureLevelRecord) and r.name == "metadata.version" else r
               for r in rich_records()]
    return [
        *([record] for record in records),
        [B("create"), T("tx", uuid(810))], [P("tx", 0, (0, 1), topic_id=uuid(810)), E()],
        [mt.ConfigRecord(resource_type=4, resource_name="", name="sasl.jaas.config", value="secret")],
        [T("placed", uuid(814)), P("placed", 0, (0, 1), topic_id=uuid(814), directories=(uuid(600), uuid(601)))],
        [change("placed", 0, topic_id=uuid(814), replicas=(1, 2))],  # directories stay where they were
        [change("placed", 0, topic_id=uuid(814), replicas=(1, 2, 3), directories=(uuid(601), UNASSIGNED, uuid(603)))],
        [T("kept", uuid(811)), B("aborted"), T("gone", uuid(812)), P("gone", 0, (0,), topic_id=uuid(812)), A(),
         T("after", uuid(813))],
    ]


def test_kraftlake_equals_kafka_on_a_log_of_every_record_type(tmp_path: Path) -> None:
    """Also what the canonical JSON hides (SCRAM salts and keys, the secret config's value) is equal. A
    PartitionRecord without directories means MIGRATING (Kafka's Uuid(0, 0)) and UNASSIGNED is Uuid(0, 1): the
    reserved directory ids kraftlake had wrong until this comparison; a replica change without directories
    leaves them where they were (kraftlake moved them with their replicas)."""
    log = write_log(tmp_path / "log", every_sub_image())
    comparison = assert_matches_kafka(log, tmp_path / "oracle")
    last = read_log(log).batches[-1]
    after_abort = last.records[-1].offset  # T("after"), behind the Abort in the same batch
    assert comparison.differences == {ABORTED_THEN_MORE: [after_abort]}
    assert len(comparison.offsets) > 50


def test_a_kraft_version_0_record_is_named_where_it_applies(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log", [[KV(0)], [MV(29)], [T("a")], [P("a", 0)], [N()]])
    comparison = assert_matches_kafka(log, tmp_path / "oracle")
    assert comparison.differences == {KRAFT_VERSION_0: [1, 2, 3]}, "offset 0: no image yet, both refuse"


def test_a_topic_config_written_in_the_commit_that_removes_the_topic_outlives_it_in_kafka(tmp_path: Path) -> None:
    """A real difference, kept on purpose and pinned here: Kafka's ConfigurationsDelta clears a removed topic's
    configs only if the commit's starting image held them, so a config written earlier in the same commit
    survives the topic in Kafka's image (and whether it does depends on how batches fall into commits);
    kraftlake removes it whatever the commit boundaries (one image per offset, however the log is delivered)."""
    config = mt.ConfigRecord(resource_type=2, resource_name="a", name="retention.ms", value="1")
    log = write_log(tmp_path / "log", [[MV(29)], [T("a"), config, remove("a")], [N()]])
    with pytest.raises(MismatchError, match=r"offset 3: .* in \['configs'\]: \{'configs': \{\}\} != "
                                            r"\{'configs': \{'topic:a': \{'retention.ms': '1'\}\}\}"):
        assert_matches_kafka(log, tmp_path / "oracle")


def test_a_difference_is_reported_with_the_offset_and_sub_image(tmp_path: Path) -> None:
    """The comparison can fail: kraftlake's image at one offset against Kafka's at the next change."""
    log = write_log(tmp_path / "log", [[MV(29)], [T("a")], [P("a", 0)], [change("a", 0, isr=(0, 1))]])
    snapshots = kafka_snapshots(log, tmp_path / "oracle")
    assert sorted(snapshots) == [0, 1, 2, 3]
    ours = kraftlake_answers(read_log(log)).at(2)
    assert ours is not None
    with pytest.raises(MismatchError, match=r"offset 3: kraftlake's image differs from Kafka's in \['topics'\]"):
        assert_same_canonical(3, ours, kafka_image(snapshots[3]), {})


def test_a_corrupt_segment_is_named_with_the_last_good_offset(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log", [[MV(29)], [T("a")], [P("a", 0)]])
    segment = log / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[-5] ^= 0xFF  # inside the last batch's records: its CRC no longer matches
    segment.write_bytes(bytes(data))
    with pytest.raises(OracleError, match=r"00000000000000000000.log after offset 1: .*(?i:crc)"):
        kafka_snapshots(log, tmp_path / "oracle")


def test_missing_or_corrupt_oracle_classes_give_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               samples_dir: Path) -> None:
    kafka = jar_dir("kafka")
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "kafka").symlink_to(kafka)
    monkeypatch.setenv("KRAFTLAKE_JARS", str(tmp_path / "jars"))
    log = samples_dir / "kckoh_xflow" / "kafka-data"
    with pytest.raises(OracleError, match=r"no .*/oracle/classes/kraftlake/oracle/KafkaImageOracle.class: compile"):
        kafka_snapshots(log, tmp_path / "out")
    classes = tmp_path / "jars" / "oracle" / "classes" / "kraftlake" / "oracle"
    classes.mkdir(parents=True)
    (classes / "KafkaImageOracle.class").write_bytes(b"not a class file")
    with pytest.raises(OracleError, match=r"the Kafka oracle failed on .*kckoh_xflow/kafka-data \(exit 1\): .*"):
        kafka_snapshots(log, tmp_path / "out")
