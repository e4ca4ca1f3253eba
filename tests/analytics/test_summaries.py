"""Each summary against a small hand-built log whose answer is known: one record per batch at offset N,
appended at N seconds, so offsets and times can be read off the scenario below."""

from __future__ import annotations

from typing import Any

import pytest

from kraftlake.analytics.views import register_views
from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import metadata_types as mt
from tests.replay.builders import MV, P, T, change, data, uuid

ORDERS = uuid(40)


def broker(b: int) -> Any:
    return mt.RegisterBrokerRecord(
        broker_id=b, broker_epoch=10 + b, incarnation_id=uuid(500 + b), fenced=True, rack=None,
        end_points=(mt.BrokerEndpoint(name="PLAINTEXT", host=f"b{b}", port=9092, security_protocol=0),),
        features=(mt.BrokerFeature(name="metadata.version", min_supported_version=7, max_supported_version=29),),
        log_dirs=(uuid(600 + b),),
    )


SCENARIO = [
    MV(21),                                                                     # 0
    broker(0), broker(1), broker(2),                                            # 1..3: registered fenced
    mt.UnfenceBrokerRecord(id=0, epoch=10),                                     # 4
    mt.UnfenceBrokerRecord(id=1, epoch=11),                                     # 5
    mt.UnfenceBrokerRecord(id=2, epoch=12),                                     # 6
    T("orders", ORDERS),                                                        # 7
    P("orders", 0, (0, 1, 2), topic_id=ORDERS),                                 # 8
    P("orders", 1, (1, 2, 0), topic_id=ORDERS),                                 # 9
    P("orders", 2, (2, 0, 1), topic_id=ORDERS),                                 # 10
    mt.ConfigRecord(resource_type=4, resource_name="", name="min.insync.replicas", value="2"),  # 11
    mt.FenceBrokerRecord(id=2, epoch=12),                                       # 12: broker 2 down
    change("orders", 0, topic_id=ORDERS, isr=(0, 1)),                           # 13: 1 under-replicated
    change("orders", 1, topic_id=ORDERS, isr=(1, 0)),                           # 14: 2
    change("orders", 2, topic_id=ORDERS, isr=(0, 1), leader=0),                 # 15: 3
    change("orders", 2, topic_id=ORDERS, isr=(0,)),                             # 16: orders-2 under min ISR
    mt.UnfenceBrokerRecord(id=2, epoch=12),                                     # 17: broker 2 back (5 s)
    change("orders", 0, topic_id=ORDERS, isr=(0, 1, 2)),                        # 18: 2 under-replicated
    change("orders", 1, topic_id=ORDERS, isr=(1, 2, 0)),                        # 19: 1
    change("orders", 2, topic_id=ORDERS, isr=(0, 1, 2)),                        # 20: 0, none under min ISR
    change("orders", 1, topic_id=ORDERS, leader=-1),                            # 21: orders-1 offline
    mt.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=11, fenced=0, in_controlled_shutdown=1),  # 22
    mt.ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="1000"),  # 23
    mt.ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="2000"),  # 24
    mt.ConfigRecord(resource_type=2, resource_name="orders", name="min.insync.replicas", value="3"),  # 25
    change("orders", 0, topic_id=ORDERS, isr=(0, 1)),                           # 26: 2 of 3: under the topic's 3
]


@pytest.fixture(scope="module")
def views(spark, tmp_path_factory: pytest.TempPathFactory) -> Any:
    warehouse = Warehouse(tmp_path_factory.mktemp("summaries") / "warehouse")
    pipeline = MetadataPipeline(warehouse)
    for offset, record in enumerate(SCENARIO):
        pipeline.load(data(offset, 1, 100, [record], append_time_ms=1_000_000 + offset * 1000))
        if offset == 12:
            pipeline.commit()  # two images: the views must read across them
    pipeline.commit()
    register_views(spark, WarehouseReader(warehouse))
    return spark


def rows(spark: Any, sql: str) -> list[tuple]:
    return [tuple(row) for row in spark.sql(sql).collect()]


def test_under_replicated_counts_at_known_offsets(views: Any) -> None:
    assert rows(views, "SELECT offset, under_replicated FROM under_replicated ORDER BY offset") == [
        (13, 1), (14, 2), (15, 3), (18, 2), (19, 1), (20, 0), (26, 1)]
    times = rows(views, "SELECT unix_millis(time) FROM under_replicated ORDER BY offset")
    assert [t for (t,) in times] == [1_000_000 + o * 1000 for o in (13, 14, 15, 18, 19, 20, 26)]


def test_offline_and_under_min_isr(views: Any) -> None:
    assert rows(views, "SELECT offset, offline FROM offline_partitions ORDER BY offset") == [(21, 1)]
    # the cluster default (2, from offset 11) holds until the topic's own 3 (offset 25): an ISR of 2 is under
    # it only after that
    assert rows(views, "SELECT offset, under_min_isr FROM under_min_isr ORDER BY offset") == [
        (16, 1), (20, 0), (26, 1)]


def test_fencing_episodes_with_their_length_and_cause(views: Any) -> None:
    episodes = rows(views, "SELECT broker_id, start_offset, end_offset, cause, CAST(duration_s AS DOUBLE) "
                           "FROM fencing_episodes ORDER BY broker_id, start_offset")
    assert episodes == [
        (0, 1, 4, "fenced", 3.0),
        (1, 2, 5, "fenced", 3.0),
        (1, 22, None, "controlled_shutdown", None),
        (2, 3, 6, "fenced", 3.0),
        (2, 12, 17, "fenced", 5.0),
    ]


def test_isr_churn_and_leaders(views: Any) -> None:
    assert rows(views, "SELECT broker_id, shrinks, expands FROM isr_churn ORDER BY broker_id") == [
        (1, 1, 1), (2, 4, 3)]
    assert rows(views, "SELECT broker_id, offset, leaders FROM leaders_per_broker ORDER BY broker_id, offset") == [
        (0, 8, 1), (0, 15, 2), (1, 9, 1), (1, 21, 0), (2, 10, 1), (2, 15, 0)]


def test_change_log_shows_before_and_after(views: Any) -> None:
    log = rows(views, "SELECT offset, kind, key, change, before, after FROM change_log ORDER BY offset")
    assert log == [
        (0, "features", "metadata.version", "insert", None, "21"),
        (11, "configs", "broker: min.insync.replicas", "insert", None, "2"),
        (23, "configs", "topic:orders retention.ms", "insert", None, "1000"),
        (24, "configs", "topic:orders retention.ms", "update", "1000", "2000"),
        (25, "configs", "topic:orders min.insync.replicas", "insert", None, "3"),
    ]
    assert rows(views, "SELECT offset, change, key FROM events WHERE kind = 'topics'") == [(7, "insert", "orders")]


def test_a_real_multi_record_batch_is_one_step(spark, samples_dir, tmp_path) -> None:
    """Niloufar1171_LDI-POC's batch 416..469 creates `__consumer_offsets`: a TopicRecord, its configs and 50
    PartitionRecords all led by broker 1, applied whole by Kafka. The leaders summary steps once, by 50, at
    the batch's last offset (stamped per record it drew 50 intermediate counts no node ever had)."""
    from kraftlake.lake.ingest import ingest

    warehouse = Warehouse(tmp_path / "warehouse")
    ingest(samples_dir / "Niloufar1171_LDI-POC", warehouse)
    reader = WarehouseReader(warehouse)
    register_views(spark, reader)
    steps = rows(spark, "SELECT offset, leaders FROM leaders_per_broker WHERE broker_id = 1 AND offset <= 469 "
                        "ORDER BY offset")
    inside = [step for step in steps if step[0] >= 416]
    before = [step for step in steps if step[0] < 416]
    assert inside == [(469, (before[-1][1] if before else 0) + 50)]
    assert all(offset in {row["last_offset"] for row in reader.scan("batches").to_pylist()} for offset, _ in steps)
