"""A small demo-like warehouse whose answers are known: the summaries' scenario (three brokers, a fenced broker, ISR
shrinks below min.insync.replicas, an offline partition, config changes; see tests/analytics/test_summaries.py) and
then a SCRAM user, an ACL, a client quota, a delegation token, a sensitive broker config, a topic created and
deleted and the topic's retention set to 7 days, written by the streaming job's pipeline into real Delta tables. One
record per batch at offset N, appended at START_MS + N * 1000 ms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraftlake.lake.pipeline import MetadataPipeline
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records import metadata_types as mt
from tests.analytics.test_summaries import ORDERS, SCENARIO
from tests.replay.builders import P, T, data, uuid

PAYMENTS = uuid(41)
SECRETS = ("SALT-SECRET", "STORED-KEY-SECRET", "SERVER-KEY-SECRET", "hunter2-password")
START_MS = 1_795_659_220_000  # 2026-11-26T02:13:40Z: the demo reads like an incident at 02:14

EXTRA: list[Any] = [
    mt.UserScramCredentialRecord(name="alice", mechanism=1, salt=b"SALT-SECRET", stored_key=b"STORED-KEY-SECRET",
                                 server_key=b"SERVER-KEY-SECRET", iterations=4096),          # 27
    mt.AccessControlEntryRecord(id=uuid(70), resource_type=2, resource_name="orders", pattern_type=3,
                                principal="User:alice", host="*", operation=3, permission_type=3),  # 28
    mt.ClientQuotaRecord(entity=(mt.EntityData(entity_type="user", entity_name="alice"),),
                         key="producer_byte_rate", value=1024.0),                           # 29
    mt.DelegationTokenRecord(owner="User:alice", requester="User:alice", renewers=("User:bob",),
                             issue_timestamp=1, max_timestamp=2, expiration_timestamp=2, token_id="token-1"),  # 30
    mt.ConfigRecord(resource_type=4, resource_name="0", name="ssl.keystore.password", value="hunter2-password"),  # 31
    T("payments", PAYMENTS),                                                                # 32
    P("payments", 0, (0, 1, 2), topic_id=PAYMENTS),                                         # 33
    mt.RemoveTopicRecord(topic_id=PAYMENTS),                                                # 34
    mt.ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="604800000"),  # 35: 7 days
]
RECORDS = [*SCENARIO, *EXTRA]
LAST = len(RECORDS) - 1


def build(path: Path, start_ms: int = START_MS, failover_at: int | None = None, quiet_hours: int = 0) -> Warehouse:
    """The warehouse, published in three images (readers must read across them); another cluster of a fleet
    starts at another time, its controller failing over (Raft epoch 1 → 2) from offset `failover_at`; then
    `quiet_hours` of NoOp batches, one an hour (a cluster idling after the incident)."""
    warehouse = Warehouse(path)
    pipeline = MetadataPipeline(warehouse)
    quiet = [(LAST + hour, start_ms + LAST * 1000 + hour * 3_600_000) for hour in range(1, quiet_hours + 1)]
    for offset, record in enumerate(RECORDS):
        epoch = 2 if failover_at is not None and offset >= failover_at else 1
        pipeline.load(data(offset, epoch, 100, [record], append_time_ms=start_ms + offset * 1000))
        if offset in (12, 26):
            pipeline.commit()
    for offset, append_ms in quiet:
        pipeline.load(data(offset, 1 if failover_at is None else 2, 100, [mt.NoOpRecord()], append_time_ms=append_ms))
    pipeline.commit()
    return warehouse


__all__ = ["LAST", "ORDERS", "PAYMENTS", "RECORDS", "SECRETS", "START_MS", "build"]
