"""A producer session's check of its delivery reports (no broker: the reports are the client's own `Message`s with
the Kafka offsets a broker that lost acknowledged messages hands back). On a topic of its own a jump either way
ends the session; on a fleet's shared partition other clusters' messages come in between, so only an offset
that goes back (a loss) does, and the batches re-sent start at the first one delivered at or after it."""

from __future__ import annotations

from confluent_kafka import Message

from kraftlake.bridge.publisher import ProducerSession, PublisherConfig


def delivered(session: ProducerSession, kafka_offset: int, base_offset: int) -> None:
    message = Message(topic=session.config.topic, partition=session.config.partition, offset=kafka_offset)
    session.in_flight += 1
    session._delivered(None, message, base_offset=base_offset, last_offset=base_offset)


def test_a_shared_partition_interleaves_and_a_loss_is_re_sent_from_the_first_batch_lost() -> None:
    session = ProducerSession(PublisherConfig("127.0.0.1:1", "kraftlake-fleet", cluster="alpha", partitions=4))
    try:
        for kafka_offset, base in ((10, 0), (14, 1), (20, 2)):  # others' messages between ours
            delivered(session, kafka_offset, base)
        assert session.error is None and session.acknowledged_last_offset == 2
        delivered(session, 12, 3)  # the partition was cut back to 12: ours at 14 and 20 were lost
        assert session.error is not None and "jumped from 20 to 12" in session.error
        assert session.resend_from == 1
    finally:
        session.close()


def test_a_topic_of_its_own_is_contiguous() -> None:
    session = ProducerSession(PublisherConfig("127.0.0.1:1", "kraftlake-metadata-alpha"))
    try:
        delivered(session, 0, 0)
        delivered(session, 1, 5)
        delivered(session, 3, 9)  # a hole: someone else wrote to the topic, or a broker lost one
        assert session.error is not None and session.resend_from is None
        delivered(session, 1, 12)  # lost from Kafka offset 1 on: the batch at base offset 5 goes out again
        assert session.resend_from == 5
    finally:
        session.close()
