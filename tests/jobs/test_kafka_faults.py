"""Kafka faults under the streaming job, with the real broker and one Spark session: the broker SIGKILLed and
restarted mid-stream (the job rides it out or stops with one line, and a rerun ends with the tables of an
uninterrupted ingest), then the topic deleted and created again under the same name with another cluster's
log (more messages than the checkpoint read, so Spark's source alone would go on into them): refused, and
nothing of it reaches the warehouse. (Retention deleting unread messages: test_kafka_topic.py.)"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from kraftlake.cli.broker import LocalBroker
from kraftlake.jobs.materialize import MaterializeConfig, MaterializeError, run
from kraftlake.lake.ingest import ingest
from kraftlake.lake.warehouse import IMAGES, Warehouse
from kraftlake.records import read_batches
from tests.fixtures.broker import create_topic, produce
from tests.jobs.metadata_topic import batch_messages
from tests.jobs.test_materialize_recovery import LOG, SAMPLE, _without_images
from tests.lake.warehouse_state import warehouse_contents

pytestmark = pytest.mark.integration
OTHER_LOG = "Niloufar1171_LDI-POC/__cluster_metadata-0/00000000000000000000.log"  # 4,814 messages, vs 3,068


def _published(warehouse: Warehouse) -> bool:
    return warehouse.exists() and len(warehouse.table(IMAGES).file_uris()) > 0


def _run_in_thread(config: MaterializeConfig, spark: SparkSession, failures: list[str]) -> threading.Thread:
    def job() -> None:
        try:
            run(config, spark)
        except MaterializeError as error:
            failures.append(str(error))

    thread = threading.Thread(target=job)
    thread.start()
    return thread


def _recreate(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    deadline = time.monotonic() + 60
    while True:  # deletion completes asynchronously: creation fails until it has
        try:
            admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "-1"})])[topic].result(30)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_broker_killed_under_the_job_then_the_topic_recreated(
    spark: SparkSession, kafka_broker: LocalBroker, samples_dir: Path, tmp_path: Path
) -> None:
    reference = Warehouse(tmp_path / "reference")
    ingest(samples_dir / SAMPLE, reference)
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap)
    produce(bootstrap, topic, batch_messages(read_batches(samples_dir / LOG)))
    warehouse = Warehouse(tmp_path / "warehouse")
    config = MaterializeConfig(
        bootstrap_servers=bootstrap, topic=topic, warehouse=warehouse.uri, spark_checkpoint=tmp_path / "checkpoint",
        available_now=True, max_offsets_per_trigger=400, idle_publish_seconds=0.0, coalesce_backlog=False,
    )

    failures: list[str] = []
    job = _run_in_thread(config, spark, failures)
    try:
        deadline = time.monotonic() + 120
        while not _published(warehouse) and job.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _published(warehouse) and job.is_alive(), failures
        kafka_broker.kill()
        time.sleep(3)  # how long the broker stays down: the fault's length, not a wait for something
    finally:
        if not kafka_broker.running:
            kafka_broker.start()
    job.join(300)
    assert not job.is_alive()
    assert all("\n" not in failure and bootstrap in failure for failure in failures), failures
    if failures:  # stopped with a line naming the broker: a rerun completes
        run(config, spark)
    finished = warehouse_contents(warehouse)
    assert _without_images(finished) == _without_images(warehouse_contents(reference))

    _recreate(bootstrap, topic)
    produce(bootstrap, topic, batch_messages(read_batches(samples_dir / OTHER_LOG)))
    with pytest.raises(MaterializeError, match=f"topic {topic} on {bootstrap} has id .* deleted and created again"):
        run(config, spark)
    assert warehouse_contents(warehouse) == finished
