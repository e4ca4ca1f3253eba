"""The fleet job's writer (`FleetWriter`, the foreachBatch function of `materialize --fleet`) fed a micro-batch
that Spark's Kafka source (the shared session's) reads from two real topics: one holding a real Kafka cluster's
log, one holding a message that is no batch. Each cluster's series carry its name: east's last published offset
and rows equal its warehouse's, west counts one failed micro-batch and publishes nothing; once east leaves the
fleet file, none of its series is left and west's are as they were. Read back from the real endpoint in
Prometheus' text format. A cluster stopped because its messages are on another partition of the shared topic
counts its failed micro-batch too (no Spark: the driver refuses them before any replay)."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from kraftlake.bridge.log_dir_publisher import publish_log_dir
from kraftlake.bridge.publisher import PublisherConfig
from kraftlake.cli.broker import LocalBroker
from kraftlake.jobs import kafka_topic
from kraftlake.jobs.fleet import FleetWriter, _reload
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.scan import Where
from kraftlake.lake.topic_replay import TopicMessage
from kraftlake.lake.warehouse import IMAGES, Warehouse
from kraftlake.metrics.endpoint import Address, MetricsEndpoint
from kraftlake.metrics.materialize import MaterializeMetrics
from kraftlake.records.topic import cluster_partition
from kraftlake.settings.flags import MaterializeConfig
from kraftlake.settings.fleet import cluster_location, load_fleet
from tests.fixtures.broker import create_topic

SAMPLE = "Jeong-Rae_KafkaDemo/kraft-combined-logs"


def scraped(url: str) -> dict[tuple[str, str], float]:
    """(sample name, cluster) -> value, from the endpoint's text."""
    with urllib.request.urlopen(url, timeout=30) as answer:
        text = answer.read().decode()
    return {(sample.name, sample.labels["cluster"]): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples
            if "cluster" in sample.labels}


def test_each_fleet_cluster_has_its_own_series(kafka_broker: LocalBroker, spark: Any, samples_dir: Path,
                                               tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topics = {"east": create_topic(bootstrap), "west": create_topic(bootstrap)}
    publish_log_dir(samples_dir / SAMPLE, PublisherConfig(bootstrap, topics["east"]))
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topics["west"], key=b"\0" * 8, value=b"not a record batch")
    assert producer.flush(30) == 0
    path = tmp_path / "fleet.toml"
    path.write_text("".join(f'[clusters.{name}]\nbootstrap_controllers = ["h:1"]\ntopic = "{topic}"\n'
                            for name, topic in topics.items()))
    base = MaterializeConfig(bootstrap, "unused", str(tmp_path / "lake"), tmp_path / "checkpoint",
                             idle_publish_seconds=0)
    metrics = MaterializeMetrics()
    writer = FleetWriter(spark, base, observe=metrics.of)
    fleet = load_fleet(path)
    for name in fleet.clusters:
        writer.add(fleet, name)
    frame = (spark.read.format("kafka").options(**kafka_topic.client_options(bootstrap, {}))
             .option("subscribe", ",".join(topics.values())).option("startingOffsets", "earliest").load())
    writer(frame, 0)
    assert list(writer.failures) == ["west"]
    east = WarehouseReader(Warehouse(cluster_location(base.warehouse, "east")))
    last = east.last_published()
    rows = east.scan(IMAGES, [Where("offset", "=", last)], ["history_rows"]).to_pylist()[0]["history_rows"]
    endpoint = MetricsEndpoint(Address("127.0.0.1", 0), metrics.collectors())
    try:
        series = scraped(endpoint.url)
        path.write_text(f'[clusters.west]\nbootstrap_controllers = ["h:1"]\ntopic = "{topics["west"]}"\n')
        _reload(spark, base, path, fleet, writer)  # east left the fleet file: its series go, west's stay
        left = scraped(endpoint.url)
    finally:
        endpoint.close()
    assert {cluster for _, cluster in left} == {"west"}
    assert left == {key: value for key, value in series.items() if key[1] == "west"}
    assert last > 0 and rows > 0
    assert series[("kraftlake_materialize_last_published_offset", "east")] == last
    assert series[("kraftlake_materialize_rows_written_total", "east")] == rows
    assert series[("kraftlake_materialize_publish_latency_seconds_count", "east")] >= 1
    assert series[("kraftlake_materialize_micro_batch_duration_seconds_count", "east")] == 1
    assert series[("kraftlake_materialize_failures_total", "east")] == 0
    assert series[("kraftlake_materialize_failures_total", "west")] == 1
    assert series[("kraftlake_materialize_micro_batch_duration_seconds_count", "west")] == 1
    assert ("kraftlake_materialize_last_published_offset", "west") not in series


def test_messages_on_another_partition_count_as_their_clusters_failure(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text('topic = "kraftlake-fleet"\ntopic_partitions = 3\n' + "".join(
        f'[clusters.{name}]\nbootstrap_controllers = ["h:1"]\n' for name in ("alpha", "beta")))
    base = MaterializeConfig("kafka:9092", "kraftlake-fleet", str(tmp_path / "lake"), tmp_path / "checkpoint")
    metrics = MaterializeMetrics()
    writer = FleetWriter(None, base, shared=True, observe=metrics.of)
    fleet = load_fleet(path)
    for name in fleet.clusters:
        writer.add(fleet, name)
    wrong = (cluster_partition("alpha", 3) + 1) % 3
    message = TopicMessage(7, b"\0" * 8, b"batch")
    writer.write_shared({("alpha", wrong): [message]})
    writer.write_shared({("alpha", wrong): [message]})  # stopped already: skipped, not counted again
    endpoint = MetricsEndpoint(Address("127.0.0.1", 0), metrics.collectors())
    try:
        series = scraped(endpoint.url)
    finally:
        endpoint.close()
    assert list(writer.failures) == ["alpha"]
    assert series[("kraftlake_materialize_failures_total", "alpha")] == 1
    assert series[("kraftlake_materialize_micro_batch_duration_seconds_count", "alpha")] == 1
    assert series[("kraftlake_materialize_failures_total", "beta")] == 0
