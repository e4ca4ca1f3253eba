"""The metadata topic as the streaming job reads it: Spark's own Kafka source (`format("kafka")`, the
`spark-sql-kafka-0-10` jar of `make jars`), and the same Java client for the two reads the job's driver makes
outside the stream (the topic's end, and the messages an earlier run consumed, read back after a restart).

One client configuration serves all three: `kafka.bootstrap.servers` plus every option the user passes as
`kafka.X` (SASL, SSL, timeouts, under the names Kafka's Java client knows), exactly as Spark users pass them
to `format("kafka")`. Chosen over the project's former Python data source by measurement (BENCHMARKS.md,
jobs): the JVM source hands micro-batches to the driver several times faster, and it refuses to go on when
offsets it has not read were deleted by retention or the topic was recreated (`failOnDataLoss`), where a
silent gap would publish images that never existed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from kraftlake.lake.topic_replay import TopicMessage

# Messages read back per Spark batch read while the driver rebuilds its replay state after a restart.
REBUILD_CHUNK = 10_000


class KafkaTopicError(Exception):
    """The topic cannot be read: the message names the bootstrap servers, the topic and the offsets."""


def client_options(bootstrap_servers: str, options: Mapping[str, str]) -> dict[str, str]:
    """The `kafka.`-prefixed options of Spark's source: the bootstrap servers and the user's pass-through."""
    return {"kafka.bootstrap.servers": bootstrap_servers, **{f"kafka.{key}": value for key, value in options.items()}}


def stream(spark: Any, bootstrap_servers: str, topic: str, options: Mapping[str, str], max_offsets: int | None) -> Any:
    """The streaming DataFrame of partition 0 of `topic`, from its first offset on a fresh checkpoint."""
    reader = (
        spark.readStream.format("kafka")
        .options(**client_options(bootstrap_servers, options))
        .option("assign", json.dumps({topic: [0]}))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
    )
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
    return reader.load()


def end_offset(spark: Any, bootstrap_servers: str, topic: str, options: Mapping[str, str], timeout_s: float,
               partition_number: int = 0) -> int:
    """The Kafka offset after the last message of the partition (a metadata topic's one, or a shared topic's
    cluster's), asked with Kafka's Java client in the driver's JVM (the jar Spark's source brings), configured as
    the source is."""
    jvm = spark.sparkContext._jvm
    properties = _java_properties(jvm, bootstrap_servers, options)
    deserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
    properties.setProperty("key.deserializer", deserializer)
    properties.setProperty("value.deserializer", deserializer)
    partition = jvm.org.apache.kafka.common.TopicPartition(topic, partition_number)
    consumer = jvm.org.apache.kafka.clients.consumer.KafkaConsumer(properties)
    try:
        partitions = jvm.java.util.Collections.singletonList(partition)
        duration = jvm.java.time.Duration.ofMillis(int(timeout_s * 1000))
        return int(consumer.endOffsets(partitions, duration).get(partition))
    except Exception as error:  # py4j wraps the Java exception
        raise KafkaTopicError(
            f"the end of topic {topic} on {bootstrap_servers} could not be read within {timeout_s:.0f} s: "
            f"{_java_cause(error)}"
        ) from None
    finally:
        consumer.close()


def topic_id(spark: Any, bootstrap_servers: str, topic: str, options: Mapping[str, str], timeout_s: float) -> str:
    """The topic's id (a topic deleted and created again under the same name gets a new one), asked with
    Kafka's Java admin client in the driver's JVM, configured as the source is."""
    jvm = spark.sparkContext._jvm
    admin = jvm.org.apache.kafka.clients.admin.AdminClient.create(_java_properties(jvm, bootstrap_servers, options))
    try:
        described = admin.describeTopics(jvm.java.util.Collections.singletonList(topic)).allTopicNames()
        found = described.get(int(timeout_s * 1000), jvm.java.util.concurrent.TimeUnit.MILLISECONDS)
        return str(found.get(topic).topicId().toString())
    except Exception as error:  # py4j wraps the Java exception
        raise KafkaTopicError(
            f"topic {topic} on {bootstrap_servers} could not be described within {timeout_s:.0f} s: "
            f"{_java_cause(error)}"
        ) from None
    finally:
        admin.close()


def _java_properties(jvm: Any, bootstrap_servers: str, options: Mapping[str, str]) -> Any:
    """The Java client's properties: the source's `kafka.X` options without their prefix."""
    properties = jvm.java.util.Properties()
    for key, value in client_options(bootstrap_servers, options).items():
        properties.setProperty(key.removeprefix("kafka."), value)
    return properties


def _java_cause(error: Exception) -> str:
    """The last line of a py4j error: what Kafka said."""
    text = str(error).strip()
    return text.splitlines()[-1] if text else type(error).__name__


def read_messages(
    spark: Any, bootstrap_servers: str, topic: str, options: Mapping[str, str], end: int, partition: int = 0,
    key_prefix: bytes = b"",
) -> Iterator[list[TopicMessage]]:
    """The partition's messages before Kafka offset `end`, in chunks of `REBUILD_CHUNK` offsets, read with
    Spark's batch Kafka source (the driver gets each chunk as Arrow). With `key_prefix` (a shared topic's
    cluster) only the messages whose key starts with it, filtered by the executors, the prefix cut off."""
    start = 0
    while start < end:
        stop = min(end, start + REBUILD_CHUNK)
        frame = (
            spark.read.format("kafka")
            .options(**client_options(bootstrap_servers, options))
            .option("assign", json.dumps({topic: [partition]}))
            .option("startingOffsets", json.dumps({topic: {str(partition): start}}))
            .option("endingOffsets", json.dumps({topic: {str(partition): stop}}))
            .option("failOnDataLoss", "true")
            .load()
        )
        if key_prefix:
            frame = frame.where(f"substring(key, 1, {len(key_prefix)}) = X'{key_prefix.hex()}'")
        messages = collect_messages(frame)
        yield [m._replace(key=(m.key or b"")[len(key_prefix):]) for m in messages] if key_prefix else messages
        start = stop


def collect_messages(frame: Any) -> list[TopicMessage]:
    """A (micro-)batch's messages, brought to the driver, in Kafka offset order; a message without a value
    (a tombstone: no publisher writes one) is refused with its offset."""
    table = frame.select("offset", "key", "value").toArrow().sort_by("offset")
    offsets, keys, values = (table.column(name).to_pylist() for name in ("offset", "key", "value"))
    for offset, value in zip(offsets, values, strict=True):
        if value is None:
            raise KafkaTopicError(f"Kafka offset {offset}: a message without a value")
    return [TopicMessage(*row) for row in zip(offsets, keys, values, strict=True)]
