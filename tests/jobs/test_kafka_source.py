"""The kraftlake-kafka streaming source against a real broker and a real local SparkSession."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.datasource import ReadAllAvailable

from jobs.kafka_source import (
    KafkaRange,
    KafkaSource,
    KafkaSourceError,
    KafkaSourceOptions,
    KafkaStreamReader,
    _cap,
)
from kraftlake.broker import LocalBroker
from records.topic import MAX_MESSAGE_BYTES
from tests.fixtures.broker import create_topic, numbered, produce

pytestmark = pytest.mark.integration

Row = tuple[int, int, bytes, bytes]  # partition, offset, key, value


def run_available_now(
    spark: SparkSession, checkpoint: Path, options: dict[str, str]
) -> list[list[Row]]:
    """One availableNow run; the rows of each non-empty micro-batch, in batch order and read order."""
    spark.dataSource.register(KafkaSource)
    batches: dict[int, list[Row]] = {}

    def collect(frame: DataFrame, batch_id: int) -> None:
        rows = frame.select("partition", "offset", "key", "value", "timestamp").collect()
        assert all(row.timestamp is not None and row.timestamp > 0 for row in rows)
        batches[batch_id] = [(row.partition, row.offset, bytes(row.key), bytes(row.value)) for row in rows]

    stream = spark.readStream.format("kraftlake-kafka").options(**options).load()
    query = (
        stream.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return [batches[batch_id] for batch_id in sorted(batches) if batches[batch_id]]


def expected_rows(start: int, stop: int, partition: int = 0) -> list[Row]:
    return [(partition, i, key, value) for i, (key, value) in enumerate(numbered(start, stop), start)]


def flat(batches: list[list[Row]]) -> list[Row]:
    return [row for batch in batches for row in batch]


def test_reads_every_message_once_in_order_and_resumes(
    spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, numbered(0, 120))
    options = {"bootstrap.servers": bootstrap, "topic": topic}

    first = run_available_now(spark, tmp_path / "checkpoint", options)
    assert flat(first) == expected_rows(0, 120)

    produce(bootstrap, topic, numbered(120, 150))
    resumed = run_available_now(spark, tmp_path / "checkpoint", options)
    assert flat(resumed) == expected_rows(120, 150)


def test_per_trigger_limit_splits_into_micro_batches(
    spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, numbered(0, 25))
    options = {"bootstrap.servers": bootstrap, "topic": topic, "maxOffsetsPerTrigger": "10"}

    batches = run_available_now(spark, tmp_path / "checkpoint", options)
    assert [len(batch) for batch in batches] == [10, 10, 5]
    assert flat(batches) == expected_rows(0, 25)


def test_several_partitions_share_the_limit(
    spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, partitions=3)
    for partition, count in enumerate((12, 3, 0)):
        produce(bootstrap, topic, numbered(0, count), partition=partition)
    options = {"bootstrap.servers": bootstrap, "topic": topic, "maxOffsetsPerTrigger": "5"}

    batches = run_available_now(spark, tmp_path / "checkpoint", options)
    assert all(len(batch) <= 5 for batch in batches)
    rows = flat(batches)
    for partition, count in enumerate((12, 3, 0)):
        assert [row for row in rows if row[0] == partition] == expected_rows(0, count, partition)


def test_latest_skips_what_was_there_before_the_first_run(
    spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, numbered(0, 10))
    options = {"bootstrap.servers": bootstrap, "topic": topic, "startingOffsets": "latest"}

    assert run_available_now(spark, tmp_path / "checkpoint", options) == []
    produce(bootstrap, topic, numbered(10, 14))
    assert flat(run_available_now(spark, tmp_path / "checkpoint", options)) == expected_rows(10, 14)


def test_broker_down_fails_with_the_bootstrap_servers_named(spark: SparkSession, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    options = {"bootstrap.servers": dead, "topic": "anything", "timeoutMs": "1500"}
    with pytest.raises(StreamingQueryException, match=f"Kafka at {dead} did not answer"):
        run_available_now(spark, tmp_path / "checkpoint", options)


def test_options_are_validated_before_any_io() -> None:
    with pytest.raises(KafkaSourceError, match="missing option"):
        KafkaSourceOptions.parse({"topic": "t"})
    with pytest.raises(KafkaSourceError, match="startingOffsets"):
        KafkaSourceOptions.parse({"bootstrap.servers": "b:9092", "topic": "t", "startingoffsets": "middle"})
    with pytest.raises(KafkaSourceError, match="maxoffsetspertrigger"):
        KafkaSourceOptions.parse({"bootstrap.servers": "b:9092", "topic": "t", "maxOffsetsPerTrigger": "0"})
    parsed = KafkaSourceOptions.parse(
        {"bootstrap.servers": "b:9092", "topic": "t", "kafka.client.id": "me", "maxoffsetspertrigger": "7"}
    )
    assert (parsed.kafka_config, parsed.max_offsets_per_trigger) == ({"client.id": "me"}, 7)


def test_transactions_read_committed_with_markers_at_range_ends(
    spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path
) -> None:
    """Markers and aborted records hold offsets no row has; an open transaction must not stall the run; a
    producer that aborted and then committed has its later records read (a range may start past the abort)."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    writer, aborter = (
        Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{name}-{topic}"})
        for name in ("writer", "aborter")
    )
    def transaction(producer: Producer, messages: list[tuple[bytes, bytes]], outcome: str) -> None:
        producer.begin_transaction()
        for key, value in messages:
            producer.produce(topic, key=key, value=value)
        assert producer.flush(30) == 0  # on the broker before the outcome, so an abort leaves records
        if outcome == "commit":
            producer.commit_transaction(30)
        elif outcome == "abort":
            producer.abort_transaction(30)

    try:
        for producer in (writer, aborter):
            producer.init_transactions(30)
        transaction(writer, numbered(0, 5), "commit")  # offsets 0-4, marker 5
        transaction(aborter, numbered(5, 8), "abort")  # offsets 6-8, marker 9
        transaction(aborter, numbered(8, 10), "commit")  # offsets 10-11, marker 12
        transaction(writer, numbered(10, 12), "open")  # offsets 13-14, not stable yet
        options = {"bootstrap.servers": bootstrap, "topic": topic, "maxOffsetsPerTrigger": "3"}

        rows = flat(run_available_now(spark, tmp_path / "checkpoint", options))
        assert rows == [*expected_rows(0, 5), (0, 10, b"k8", b"value-8"), (0, 11, b"k9", b"value-9")]

        writer.commit_transaction(30)
        rows = flat(run_available_now(spark, tmp_path / "checkpoint", options))
        assert rows == [(0, 13, b"k10", b"value-10"), (0, 14, b"k11", b"value-11")]
    finally:
        writer.close()
        aborter.close()


def test_reading_from_a_stopped_broker_fails_with_its_address(tmp_path: Path) -> None:
    with LocalBroker(tmp_path / "broker") as broker:
        bootstrap = broker.bootstrap_servers
        topic = create_topic(bootstrap)
        produce(bootstrap, topic, numbered(0, 3))
    reader = KafkaStreamReader(
        KafkaSourceOptions.parse({"bootstrap.servers": bootstrap, "topic": topic, "timeoutMs": "1000"})
    )
    with pytest.raises(KafkaSourceError, match=f"on Kafka at {bootstrap}, partition 0: no progress"):
        list(reader.read(KafkaRange(0, 0, 3)))


def test_a_checkpoint_of_another_topic_is_refused() -> None:
    reader = KafkaStreamReader(KafkaSourceOptions.parse({"bootstrap.servers": "b:9092", "topic": "mine"}))
    with pytest.raises(KafkaSourceError, match="new checkpoint location"):
        reader.latestOffset({"topic": "theirs", "partitions": {"0": 5}}, ReadAllAvailable())


def test_limit_is_shared_by_backlog_and_always_makes_progress() -> None:
    begin = {"0": 100, "1": 0, "2": 7}
    assert _cap(begin, {"0": 190, "1": 10, "2": 7}, 10) == {"0": 109, "1": 1, "2": 7}
    ends = {"0": 101, "1": 1, "2": 8}
    capped = _cap(begin, ends, 2)
    assert sum(capped[p] - begin[p] for p in begin) == 2
    assert all(begin[p] <= capped[p] <= ends[p] for p in begin)
    assert _cap(begin, {"0": 105, "1": 3, "2": 7}, 100) == {"0": 105, "1": 3, "2": 7}


def test_messages_as_big_as_kafkas_largest_raft_batch_are_read(kafka_broker: LocalBroker) -> None:
    """Kafka's Raft batches reach 8 MiB, past the 1 MiB Kafka and librdkafka allow by default: the broker and
    the producer are raised to MAX_MESSAGE_BYTES, and the reader needs nothing special (KIP-74 fetches)."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    values = [bytes([i]) * (8 << 20) for i in range(3)]
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.max.bytes": MAX_MESSAGE_BYTES})
    for i, value in enumerate(values):
        producer.produce(topic, key=b"%d" % i, value=value, partition=0)
    assert producer.flush(60) == 0
    options = KafkaSourceOptions.parse({"bootstrap.servers": bootstrap, "topic": topic})
    batches = list(KafkaStreamReader(options).read(KafkaRange(0, 0, len(values))))
    assert [value for batch in batches for value in batch.column("value").to_pylist()] == values
