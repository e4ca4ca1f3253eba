"""Where users run it: `kraftlake publish` of a real cluster's log into the topic, and the Delta operations the
warehouse is made of (one-row commits, a table read at its latest version) on a real S3 server (SeaweedFS
`weed mini` on loopback) beside local disk. The warehouse's own long-run and time-travel figures on
SeaweedFS wait for the URI-based warehouse (`lake/`); these are the primitives they are made of."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from confluent_kafka.admin import AdminClient, NewTopic
from deltalake import DeltaTable, write_deltalake

from kraftlake.bridge.log_dir_publisher import publish_log_dir
from kraftlake.bridge.publisher import PublisherConfig
from kraftlake.cli.broker import LocalBroker
from tests.fixtures.s3 import SeaweedFS

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "kafka-samples" / "rjmfernandes_flink-on-prem" / "data"
REPEATS = 3
COMMITS = 100
TABLE_ROWS = 100_000


def _median_s(action: Callable[[], Any], repeats: int = REPEATS) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def _publish_rows(root: Path) -> list[dict[str, Any]]:
    broker = LocalBroker(root / "broker").start()
    try:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [f"bench-{uuid.uuid4().hex[:8]}" for _ in range(REPEATS)]
        for topic in topics:
            admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "-1"})])[topic].result(timeout=10)
        empty = iter(topics)
        batches: list[int] = []

        def publish_into_an_empty_topic() -> None:
            batches.append(publish_log_dir(SAMPLE, PublisherConfig(bootstrap, next(empty))).messages)

        first = _median_s(publish_into_an_empty_topic)
        rerun = _median_s(lambda: publish_log_dir(SAMPLE, PublisherConfig(bootstrap, topics[0])))
    finally:
        broker.stop()
    return [
        {"name": "publish: a real log into an empty topic", "value": first, "unit": "s",
         "notes": f"rjmfernandes: {batches[0]:,} batches, 17,027 offsets ({batches[0] / first:,.0f} batches/s)"},
        {"name": "publish: rerun, nothing new", "value": rerun, "unit": "s", "notes": "reads the tail, checks the log"},
    ]


def _delta_rows(label: str, uri: str, options: dict[str, str]) -> list[dict[str, Any]]:
    small = f"{uri}/commits"
    write_deltalake(small, pa.table({"offset": [0]}), storage_options=options)
    commit_times = []
    for offset in range(1, COMMITS + 1):
        start = time.perf_counter()
        write_deltalake(small, pa.table({"offset": [offset]}), mode="append", storage_options=options)
        commit_times.append(time.perf_counter() - start)
    big = f"{uri}/partitions"
    rows = pa.table({"topic_id": [f"t{i // 100}" for i in range(TABLE_ROWS)], "partition_id": list(range(TABLE_ROWS)),
                     "leader": [i % 7 for i in range(TABLE_ROWS)]})
    write_time = _median_s(lambda: write_deltalake(big, rows, mode="overwrite", storage_options=options), 1)
    read_small = _median_s(lambda: DeltaTable(small, storage_options=options).to_pyarrow_table())
    read_big = _median_s(lambda: DeltaTable(big, storage_options=options).to_pyarrow_table())
    return [
        {"name": f"{label}: one-row append commit, p50", "value": statistics.median(commit_times) * 1000,
         "unit": "ms", "notes": f"{COMMITS} commits in a row"},
        {"name": f"{label}: one-row append commit, max", "value": max(commit_times) * 1000, "unit": "ms"},
        {"name": f"{label}: read a table of {COMMITS + 1} one-row files", "value": read_small * 1000, "unit": "ms",
         "notes": "open + to_pyarrow_table"},
        {"name": f"{label}: write {TABLE_ROWS:,} rows (one file)", "value": write_time * 1000, "unit": "ms"},
        {"name": f"{label}: read {TABLE_ROWS:,} rows", "value": read_big * 1000, "unit": "ms"},
    ]


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="kraftlake-bench-cloud-") as scratch:
        root = Path(scratch)
        rows = _publish_rows(root)
        rows += _delta_rows("local disk", str(root / "local"), {})
        server = SeaweedFS(root / "seaweedfs")
        store = server.start()
        try:
            rows += _delta_rows("SeaweedFS S3", store.uri("bench"), store.storage_options())
        finally:
            server.stop()
    rows.append({"name": "load average at the end", "value": os.getloadavg()[0], "notes": "other helpers' work"})
    return rows
