"""The metadata topic as the job reads it (`kraftlake.jobs.kafka_topic`): Spark's own Kafka source and the Java client,
against a real Apache Kafka broker and a real local SparkSession."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from kraftlake.cli.broker import LocalBroker
from kraftlake.jobs import kafka_topic
from kraftlake.jobs.kafka_topic import KafkaTopicError, TopicMessage
from kraftlake.jobs.materialize import concise_failure
from kraftlake.records.topic import MAX_MESSAGE_BYTES
from tests.fixtures.broker import create_topic, numbered, produce

pytestmark = pytest.mark.integration


def run_available_now(
    spark: SparkSession, bootstrap: str, topic: str, checkpoint: Path,
    options: dict[str, str] | None = None, max_offsets: int | None = None,
) -> list[list[TopicMessage]]:
    """One availableNow run of the job's stream; the messages of each non-empty micro-batch, in order."""
    batches: dict[int, list[TopicMessage]] = {}

    def collect(frame: DataFrame, batch_id: int) -> None:
        batches[batch_id] = kafka_topic.collect_messages(frame)

    frame = kafka_topic.stream(spark, bootstrap, topic, options or {}, max_offsets)
    query = frame.writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint))
    query.trigger(availableNow=True).start().awaitTermination()
    return [batches[batch_id] for batch_id in sorted(batches) if batches[batch_id]]


def expected(start: int, stop: int) -> list[TopicMessage]:
    return [TopicMessage(i, key, value) for i, (key, value) in enumerate(numbered(start, stop), start)]


def flat(batches: list[list[TopicMessage]]) -> list[TopicMessage]:
    return [message for batch in batches for message in batch]


def dead_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def test_stream_reads_every_message_once_in_order_and_resumes(
    spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, numbered(0, 120))
    assert flat(run_available_now(spark, bootstrap, topic, tmp_path / "checkpoint")) == expected(0, 120)

    produce(bootstrap, topic, numbered(120, 150))
    assert flat(run_available_now(spark, bootstrap, topic, tmp_path / "checkpoint")) == expected(120, 150)


def test_per_trigger_limit_splits_into_micro_batches(
    spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, numbered(0, 25))
    batches = run_available_now(spark, bootstrap, topic, tmp_path / "checkpoint", max_offsets=10)
    assert [len(batch) for batch in batches] == [10, 10, 5]
    assert flat(batches) == expected(0, 25)


def test_client_options_reach_the_source(spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path) -> None:
    """A `kafka.X` option the user sets is the Java client's: a bad value fails the query naming it."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, numbered(0, 3))
    with pytest.raises(StreamingQueryException, match="NOT_A_PROTOCOL"):
        run_available_now(spark, bootstrap, topic, tmp_path / "c", {"security.protocol": "NOT_A_PROTOCOL"})


def test_end_offset_and_read_back_in_chunks(
    spark: SparkSession, kafka_broker: LocalBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, numbered(0, 23))
    assert kafka_topic.end_offset(spark, bootstrap, topic, {}, 30) == 23
    monkeypatch.setattr(kafka_topic, "REBUILD_CHUNK", 10)
    chunks = list(kafka_topic.read_messages(spark, bootstrap, topic, {}, 17))
    assert [len(chunk) for chunk in chunks] == [10, 7]
    assert flat(chunks) == expected(0, 17)


def test_end_offset_of_a_broker_that_is_down_names_it(spark: SparkSession) -> None:
    dead = dead_address()
    with pytest.raises(KafkaTopicError, match=f"the end of topic anything on {dead} could not be read"):
        kafka_topic.end_offset(spark, dead, "anything", {}, 2)


def test_messages_deleted_before_they_were_read_stop_the_stream(
    spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path
) -> None:
    """Retention (here: an operator's delete-records) removing messages the job has not read yet is a gap in
    the metadata log: the stream stops naming the offsets instead of skipping them."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, numbered(0, 5))
    assert flat(run_available_now(spark, bootstrap, topic, tmp_path / "checkpoint")) == expected(0, 5)
    produce(bootstrap, topic, numbered(5, 12))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 9)]).values():
        future.result(30)
    with pytest.raises(StreamingQueryException) as failure:
        run_available_now(spark, bootstrap, topic, tmp_path / "checkpoint")
    assert "5" in concise_failure(str(failure.value)) and "9" in concise_failure(str(failure.value))


def test_messages_as_big_as_kafkas_largest_raft_batch_are_read(
    spark: SparkSession, kafka_broker: LocalBroker, tmp_path: Path
) -> None:
    """Kafka's Raft batches reach 8 MiB, past the 1 MiB Kafka allows by default: the broker and the producer
    are raised to MAX_MESSAGE_BYTES, and the reader needs nothing special (KIP-74 fetches)."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    values = [bytes([i]) * (8 << 20) for i in range(3)]
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.max.bytes": MAX_MESSAGE_BYTES})
    for i, value in enumerate(values):
        producer.produce(topic, key=b"%d" % i, value=value, partition=0)
    assert producer.flush(60) == 0
    messages = flat(run_available_now(spark, bootstrap, topic, tmp_path / "checkpoint"))
    assert [message.value for message in messages] == values
