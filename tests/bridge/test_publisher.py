"""The publisher against the real broker: every committed batch in the topic, in order, nothing else;
failover to another node's publisher; a broker restart and a broker crash in the middle."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from kraftlake.bridge.publisher import PublisherConfig, TopicProducer, decode_key
from kraftlake.cli.broker import LocalBroker
from kraftlake.controller import LocalMetadataLog
from kraftlake.records import decode_batch
from kraftlake.records import metadata_types as mt
from kraftlake.records.topic import MAX_MESSAGE_BYTES, message_value

pytestmark = pytest.mark.integration
WAIT_S = 90


def wait_for(condition: Callable[[], bool], what: str, last_look: list[str] | None = None) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last look: {last_look}")
        time.sleep(0.05)


def read_topic(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    """(key, value) of every message, in topic order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)
        consumer.assign([TopicPartition(topic, 0, low)])
        out: list[tuple[int, bytes]] = []
        while len(out) < high - low:
            message = consumer.poll(30)
            assert message is not None and message.error() is None, message and message.error()
            out.append((decode_key(message.key()), message_value(message)))
        return out
    finally:
        consumer.close()


def as_consumer_sees(messages: list[tuple[int, bytes]]) -> list[bytes]:
    """The batches a consumer applies: in base-offset order, duplicates (same bytes) dropped, anything after
    a gap ignored until the gap is filled by a later message."""
    applied: list[bytes] = []
    expected = 0
    seen: dict[int, bytes] = {}
    for key, value in messages:
        batch = decode_batch(value)
        assert key == batch.base_offset
        if key in seen:
            assert seen[key] == value, "a duplicate must be the same whole batch"
        if key == expected:
            applied.append(value)
            seen[key] = value
            expected = batch.last_offset + 1
    return applied


@pytest.fixture
def setup(kafka_broker: LocalBroker) -> Iterator[tuple[LocalMetadataLog, PublisherConfig, list[TopicProducer]]]:
    topic = f"metadata-{uuid.uuid4().hex[:10]}"
    config = PublisherConfig(kafka_broker.bootstrap_servers, topic, retry_backoff_ms=50, retry_backoff_max_ms=500,
                             delivery_timeout_ms=5_000)
    publishers: list[TopicProducer] = []
    yield LocalMetadataLog(), config, publishers
    for publisher in publishers:
        publisher.close()


def committed_raw(log: LocalMetadataLog) -> list[bytes]:
    return [raw for _, raw in log.read_committed(0)]


def append(log: LocalMetadataLog, count: int) -> None:
    for _ in range(count):
        log.append(log.leader.epoch, [mt.NoOpRecord(), mt.NoOpRecord()], {}, 0)


def test_every_committed_batch_once_in_order(setup, kafka_broker: LocalBroker) -> None:
    log, config, publishers = setup
    publishers.append(TopicProducer(log, 1, config).start())
    log.elect(1)
    append(log, 50)
    log.auto_commit = False
    append(log, 5)  # never committed: must never reach the topic
    committed_last = decode_batch(committed_raw(log)[-1]).last_offset
    wait_for(lambda: publishers[0].published_offset >= committed_last, "the publisher to catch up")
    messages = read_topic(config.bootstrap_servers, config.topic)
    assert [value for _, value in messages] == committed_raw(log)  # exactly, no duplicate, no uncommitted
    assert [key for key, _ in messages][:3] == [0, 1, 3]  # LeaderChange at 0, then 2-record batches
    topic_config = AdminClient({"bootstrap.servers": config.bootstrap_servers})
    assert config.topic in topic_config.list_topics(timeout=10).topics


def test_a_batch_as_big_as_kafkas_largest_reaches_the_topic(setup) -> None:
    """Kafka's Raft batches reach 8 MiB, past the 1 MiB Kafka and librdkafka take by default: the topic and
    the producer are created for MAX_MESSAGE_BYTES."""
    log, config, publishers = setup
    publishers.append(TopicProducer(log, 1, config).start())
    log.elect(1)
    value = "x" * 30_000  # a string field holds at most 32767 bytes
    values = [mt.ConfigRecord(resource_type=2, resource_name="t", name=f"c{i}", value=value) for i in range(300)]
    log.append(log.leader.epoch, values, {}, 0)
    raw = committed_raw(log)[-1]
    assert len(raw) > 8 << 20
    wait_for(lambda: publishers[0].published_offset >= decode_batch(raw).last_offset, "the big batch")
    assert read_topic(config.bootstrap_servers, config.topic)[-1][1] == raw
    admin = AdminClient({"bootstrap.servers": config.bootstrap_servers})
    resource = ConfigResource("topic", config.topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    assert entries["max.message.bytes"].value == str(MAX_MESSAGE_BYTES)


def test_a_new_leader_resumes_after_the_last_published_batch(setup) -> None:
    log, config, publishers = setup
    first = TopicProducer(log, 1, config).start()
    second = TopicProducer(log, 2, config).start()
    publishers += [first, second]
    log.elect(1)
    append(log, 20)
    last = decode_batch(committed_raw(log)[-1]).last_offset
    wait_for(lambda: first.published_offset >= last, "node 1 to publish")
    log.elect(2)
    append(log, 20)
    last = decode_batch(committed_raw(log)[-1]).last_offset
    wait_for(lambda: second.published_offset >= last, "node 2 to publish")
    messages = read_topic(config.bootstrap_servers, config.topic)
    assert as_consumer_sees(messages) == committed_raw(log)
    keys = [key for key, _ in messages]
    assert keys == sorted(keys)  # node 2 went on from node 1's last batch
    assert second.sessions >= 1


def test_broker_restart_and_crash_while_publishing(setup, kafka_broker: LocalBroker) -> None:
    log, config, publishers = setup
    publisher = TopicProducer(log, 1, config).start()
    publishers.append(publisher)
    log.elect(1)
    append(log, 30)
    kafka_broker.restart()
    append(log, 30)  # the quorum goes on committing while the broker is away
    wait_for(lambda: publisher.published_offset >= decode_batch(committed_raw(log)[-1]).last_offset,
             "the publisher to catch up after a restart")
    kafka_broker.kill()
    append(log, 30)
    kafka_broker.start()
    append(log, 30)
    last = decode_batch(committed_raw(log)[-1]).last_offset
    wait_for(lambda: publisher.published_offset >= last, "the publisher to catch up after a crash")
    last_look: list[str] = []
    wait_for(lambda: topic_holds(config, committed_raw(log), last_look),
             "the topic to hold every committed batch", last_look)


def topic_holds(config: PublisherConfig, committed: list[bytes], last_look: list[str]) -> bool:
    """Whether a consumer of the topic applies exactly `committed`; when not, `last_look` says what it saw, so a
    timeout tells missing, extra and different batches apart (this wait timed out once in a loaded CI run)."""
    messages = read_topic(config.bootstrap_servers, config.topic)
    applied = as_consumer_sees(messages)
    differs = next((i for i, pair in enumerate(zip(applied, committed, strict=False)) if pair[0] != pair[1]), None)
    last_look[:] = [f"{len(messages)} messages (last keys {[key for key, _ in messages][-20:]}), a consumer applies "
                    f"{len(applied)} batches of {len(committed)} committed, first different: {differs}"]
    return applied == committed


def test_only_an_acknowledgement_old_enough_lets_the_quorum_drop_its_log(setup) -> None:
    log, config, publishers = setup
    quick = dataclasses.replace(config, durable_after_ms=0)
    patient = TopicProducer(log, 1, dataclasses.replace(config, durable_after_ms=3_600_000))
    publishers.append(patient.start())
    log.elect(1)
    append(log, 5)
    last = decode_batch(committed_raw(log)[-1]).last_offset
    wait_for(lambda: patient.published_offset >= last, "the publisher to catch up")
    assert patient.durable_offset() == -1  # acknowledged, but a crashing broker could still lose it
    standby = TopicProducer(log, 2, dataclasses.replace(quick, standby_refresh_ms=10))
    publishers.append(standby.start())
    wait_for(lambda: standby.durable_offset() >= last, "the standby to learn the topic's tail")
