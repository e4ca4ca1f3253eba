"""An image published on any path reaches the writer's observers (the job's lines, its metrics): a snapshot's
footer and the read-back of a writer that joins a topic (a fleet's cluster added on the shared topic), not only a
micro-batch's own commit. Before, both said "stopped at offset none yet" with the image in the warehouse."""

from __future__ import annotations

from pathlib import Path

from kraftlake.cli.main import main
from kraftlake.jobs.materialize import JobLog, MaterializeConfig, MicroBatchWriter
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.topic_replay import TopicMessage
from kraftlake.lake.warehouse import Warehouse
from tests.fixtures.broker import create_topic
from tests.jobs.metadata_topic import topic_messages

KCKOH = "kckoh_xflow/kafka-data/__cluster_metadata-0"  # a snapshot, then the log


class ConsumerReads:
    """The real topic read back with a Kafka consumer (`TopicReads`), as the job's Spark reads do."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic

    def messages_before(self, kafka_offset: int) -> list[list[TopicMessage]]:
        return [[m for m in topic_messages(self.bootstrap, self.topic) if m.kafka_offset < kafka_offset]]

    def end_offset(self) -> int:
        return len(topic_messages(self.bootstrap, self.topic))


def _writer(bootstrap: str, topic: str, warehouse: Path, lines: list[str]) -> tuple[MicroBatchWriter, JobLog]:
    config = MaterializeConfig(bootstrap, topic, str(warehouse), warehouse.parent / "unused",
                               idle_publish_seconds=0.0, coalesce_backlog=False)
    writer = MicroBatchWriter(config, None, ConsumerReads(bootstrap, topic))
    job_log = JobLog("c", lines.append)
    writer.watched_by(job_log)
    return writer, job_log


def test_images_of_a_snapshot_and_of_a_read_back_reach_the_observers(
    kafka_broker, samples_dir: Path, tmp_path: Path
) -> None:
    bootstrap, topic = kafka_broker.bootstrap_servers, create_topic(kafka_broker.bootstrap_servers)
    assert main(["publish", str(samples_dir / KCKOH), "--topic", topic, "--bootstrap-servers", bootstrap]) == 0
    messages = topic_messages(bootstrap, topic)

    lines: list[str] = []
    writer, job_log = _writer(bootstrap, topic, tmp_path / "streamed", lines)
    writer.write(messages)  # one micro-batch: the snapshot, then the log
    last = WarehouseReader(Warehouse(tmp_path / "streamed")).last_published()
    assert job_log.last == str(last)

    joined, joined_log = _writer(bootstrap, topic, tmp_path / "joined", lines)
    joined.catch_up()  # joined a running stream: reads the topic back, publishes it
    assert joined_log.last == str(WarehouseReader(Warehouse(tmp_path / "joined")).last_published()) == str(last)
