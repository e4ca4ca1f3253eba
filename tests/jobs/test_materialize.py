"""The streaming job over a real topic on the local broker, with real Spark and real Delta tables."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from kraftlake.jobs.materialize import MaterializeConfig, MaterializeError, run
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import RecordBatch, make_batch, read_batches
from kraftlake.records import metadata_types as mt
from kraftlake.replay.errors import ReplayError
from tests.fixtures.broker import create_topic, produce
from tests.harness.answers import from_warehouse, replayed
from tests.jobs.metadata_topic import batch_messages

NILOUFAR_LOG = "Niloufar1171_LDI-POC/__cluster_metadata-0/00000000000000000000.log"
TOPIC_A = "AAAAAAAAAAAAAAAAAAAAAw"
TOPIC_B = "AAAAAAAAAAAAAAAAAAAABA"


def _config(broker, topic: str, tmp_path: Path, per_trigger: int | None) -> MaterializeConfig:
    return MaterializeConfig(
        bootstrap_servers=broker.bootstrap_servers,
        topic=topic,
        warehouse=str(tmp_path / "warehouse"),
        spark_checkpoint=tmp_path / "checkpoint",
        available_now=True,
        max_offsets_per_trigger=per_trigger,
        idle_publish_seconds=0.0,  # every micro-batch publishes its image: no idle nor backlog hold
        coalesce_backlog=False,
    )


def test_real_log_through_the_topic_equals_replay(spark, kafka_broker, samples_dir: Path, tmp_path: Path) -> None:
    log = samples_dir / NILOUFAR_LOG
    batches = list(read_batches(log))
    topic = create_topic(kafka_broker.bootstrap_servers)
    messages = batch_messages(batches)
    # A publisher failover may repeat whole batches: the job must apply each offset once.
    produce(kafka_broker.bootstrap_servers, topic, messages[:2000] + messages[1990:])
    config = _config(kafka_broker, topic, tmp_path, per_trigger=900)
    run(config, spark)
    warehouse = Warehouse(config.warehouse)
    assert len(WarehouseReader(warehouse).images()) >= 5
    for offset in (0, 1, 3, 4, 5, 60, 1999, 2003, 4000, 4928):
        from_delta = from_warehouse(warehouse, offset, provenance=False)
        assert from_delta == replayed([log], offset, provenance=False), offset


def _transaction_log() -> list[RecordBatch]:
    """MV; a committed transaction spread over four batches; an aborted one over two; a NoOp after."""
    created = [
        mt.TopicRecord(name="a", topic_id=TOPIC_A),
        mt.PartitionRecord(partition_id=0, topic_id=TOPIC_A, replicas=(1,), isr=(1,), leader=1, leader_epoch=0,
                           partition_epoch=0),
    ]
    messages_per_batch: list[list[Any]] = [
        [mt.FeatureLevelRecord(name="metadata.version", feature_level=21)],
        [mt.BeginTransactionRecord(name="create a")],
        created[:1],
        created[1:],
        [mt.EndTransactionRecord()],
        [mt.BeginTransactionRecord(name="create b"), mt.TopicRecord(name="b", topic_id=TOPIC_B)],
        [mt.AbortTransactionRecord(reason="test")],
        [mt.NoOpRecord()],
    ]
    batches, offset = [], 0
    for messages in messages_per_batch:
        batches.append(make_batch(offset, 1, 1_700_000_000_000 + offset, messages))
        offset += len(messages)
    return batches


def test_transaction_split_across_micro_batches(spark, kafka_broker, tmp_path: Path) -> None:
    topic = create_topic(kafka_broker.bootstrap_servers)
    produce(kafka_broker.bootstrap_servers, topic, batch_messages(_transaction_log()))
    config = _config(kafka_broker, topic, tmp_path, per_trigger=1)  # one batch per micro-batch
    run(config, spark)
    warehouse = Warehouse(config.warehouse)
    reader = WarehouseReader(warehouse)
    names = {n: set(reader.image_at(n).tables["topics"].column("name").to_pylist()) for n in range(9)}
    # offsets: 0 MV, 1 Begin, 2 T(a), 3 P(a), 4 End, 5 Begin, 6 T(b), 7 Abort, 8 NoOp
    assert names == {0: set(), 1: set(), 2: set(), 3: set(), 4: {"a"}, 5: {"a"}, 6: {"a"}, 7: {"a"}, 8: {"a"}}
    changed = WarehouseReader(warehouse).changes(-1, 8)
    assert changed["topics"].column("from_offset").to_pylist() == [4]
    assert changed["partitions"].column("from_offset").to_pylist() == [4]


def test_a_corrupt_message_stops_the_job_before_it(spark, kafka_broker, tmp_path: Path) -> None:
    batches = _transaction_log()
    messages = batch_messages(batches)
    key, value = messages[5]
    messages[5] = (key, value[:-1] + bytes([value[-1] ^ 0xFF]))  # CRC no longer matches
    topic = create_topic(kafka_broker.bootstrap_servers)
    produce(kafka_broker.bootstrap_servers, topic, messages)
    config = _config(kafka_broker, topic, tmp_path, per_trigger=2)
    with pytest.raises(MaterializeError, match=r"Kafka offset 5.*offset 5: CRC mismatch"):
        run(config, spark)
    assert max(image.offset for image in WarehouseReader(Warehouse(config.warehouse)).images()) < 5


def test_a_gap_in_files_is_an_error(tmp_path: Path) -> None:
    pipeline = MetadataPipeline(Warehouse(tmp_path / "warehouse"))
    batches = _transaction_log()
    pipeline.load(batches[0])
    with pytest.raises(ReplayError, match="gap in the log: expected offset 1"):
        pipeline.load(batches[2])


def test_a_decreasing_leader_epoch_is_an_error_but_a_redelivery_is_dropped(tmp_path: Path) -> None:
    """A leader epoch no CRC covers: a batch in an epoch older than the one before it cannot be the log's."""
    pipeline = MetadataPipeline(Warehouse(tmp_path / "warehouse"))
    batches = [dataclasses.replace(batch, partition_leader_epoch=2) for batch in _transaction_log()]
    pipeline.load(batches[0])
    pipeline.load(batches[1])
    assert not pipeline.load(dataclasses.replace(batches[1], partition_leader_epoch=1)), "a duplicate, dropped"
    with pytest.raises(ReplayError, match="topic t, offset 2: leader epoch 1 after epoch 2: epochs never decrease"):
        pipeline.load(dataclasses.replace(batches[2], partition_leader_epoch=1), source="topic t")


def test_batches_beyond_a_gap_wait_for_the_resend(spark, kafka_broker, tmp_path: Path) -> None:
    """What the topic holds after the broker lost two acknowledged batches and the publisher re-sent them:
    0 1 2 5 3 4 5 6 7. The job holds 5 until 3 and 4 arrive, and applies every offset once."""
    batches = _transaction_log()
    order = [0, 1, 2, 5, 3, 4, 5, 6, 7]
    topic = create_topic(kafka_broker.bootstrap_servers)
    produce(kafka_broker.bootstrap_servers, topic, batch_messages([batches[i] for i in order]))
    config = _config(kafka_broker, topic, tmp_path, per_trigger=4)  # 5 arrives a micro-batch before 3
    run(config, spark)
    warehouse = Warehouse(config.warehouse)
    assert WarehouseReader(warehouse).images()[-1].offset == 8
    assert WarehouseReader(warehouse).image_at(8).tables["topics"].column("name").to_pylist() == ["a"]
