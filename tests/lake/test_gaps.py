"""Gaps on the record: a real Kafka node deletes history a stopped reader had not read yet; when the reader
resumes, the snapshot that bridges the missing offsets is loaded and the gap is recorded in the warehouse's
`gaps` table; offsets inside it are refused naming it (`image`, `sql`), `changes` across it says the change
is the snapshot's difference, `history` marks the version that crosses it, and the report breaks its lines."""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from fastapi.testclient import TestClient

from kraftlake.analytics.report import write_report
from kraftlake.analytics.views import register_views
from kraftlake.cli.kafka_node import KafkaNode, kafka_uuid
from kraftlake.cli.main import main
from kraftlake.explorer.app import Settings, create_app
from kraftlake.explorer.service import Explorer
from kraftlake.lake.errors import TimeTravelError
from kraftlake.lake.ingest import ingest
from kraftlake.lake.reader import WarehouseReader
from kraftlake.lake.warehouse import Warehouse
from kraftlake.records.errors import CorruptBatchError
from tests.harness.followers import SHORT_HISTORY, log_start

pytestmark = pytest.mark.integration


def create_topics(node: KafkaNode, *names: str) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap_servers})
    for future in admin.create_topics([NewTopic(name, 2, 1) for name in names]).values():
        future.result(timeout=30)


def copy_of(node: KafkaNode, target: Path) -> Path:
    """The node's metadata directory as it is now, always at the same path (the warehouse's source is one
    directory); copied again when Kafka deleted a file under the copy or the active segment ended inside a
    batch being written."""
    for _ in range(10):
        shutil.rmtree(target, ignore_errors=True)
        try:
            shutil.copytree(node.metadata_dir, target, ignore=shutil.ignore_patterns("*.deleted"))
            return ingestable(target)
        except (shutil.Error, CorruptBatchError):
            time.sleep(0.3)
    raise AssertionError(f"no whole copy of {node.metadata_dir}")


def ingestable(directory: Path) -> Path:
    from kraftlake.records import read_batches

    for segment in sorted(directory.glob("*.log")):
        list(read_batches(segment))
    return directory


def test_a_gap_is_recorded_refused_and_shown(tmp_path: Path, spark, caplog: pytest.LogCaptureFixture) -> None:
    node = KafkaNode(tmp_path / "node", properties=SHORT_HISTORY)
    node.format(kafka_uuid(), standalone=True)
    node.start()
    try:
        create_topics(node, "before-gap")
        copy = copy_of(node, tmp_path / "copy" / "__cluster_metadata-0")
        warehouse = Warehouse(tmp_path / "warehouse")
        read_through = ingest(copy, warehouse).last_offset  # the reader, then stopped
        create_topics(node, "in-gap")
        deadline = time.monotonic() + 150  # Kafka's Raft client cleans the metadata log once a minute (fixed)
        while log_start(node.metadata_dir) <= read_through + 1:
            assert time.monotonic() < deadline, f"Kafka never deleted offset {read_through + 1}"
            time.sleep(0.5)
        create_topics(node, "after-gap")
        copy = copy_of(node, copy)
    finally:
        node.stop()
    with caplog.at_level(logging.WARNING, logger="kraftlake.lake.pipeline"):
        ingest(copy, warehouse)  # the reader resumes: its directory now starts with a snapshot past it
    reader = WarehouseReader(warehouse)

    [gap] = reader.gaps()
    snapshot = gap.snapshot_end_offset - 1
    assert (gap.first, gap.last) == (read_through + 1, snapshot - 1) and gap.first <= gap.last
    assert gap.noticed_at_ms > 0
    assert f"gap recorded in {warehouse.uri}: offsets {gap.first}..{gap.last}" in caplog.text

    # inside the gap: refused naming it (the image, and `sql --at-offset` with exit 2 and one line)
    for offset in (gap.first, gap.last):
        with pytest.raises(TimeTravelError, match=rf"offset {offset} is unknown: offsets {gap.first}\.\.{gap.last} "
                                                  r"were deleted by Kafka before they were read"):
            reader.image_at(offset)
    assert main(["sql", "--warehouse", warehouse.uri, "--at-offset", str(gap.first), "SELECT 1"]) == 2
    # either side: answered
    assert "in-gap" not in _topics(reader, gap.first - 1)
    assert {"before-gap", "in-gap"} <= _topics(reader, snapshot)

    # changes across it: the snapshot's difference, said on each line it makes
    changes = reader.changes(gap.first - 1, snapshot)
    lines = [json.loads(line) for line in reader.change_lines("topics", changes["topics"]).to_pylist()]
    created = [line for line in lines if line["after"].get("name") == "in-gap"]
    assert created and all(line["offset"] == snapshot and "snapshot's difference" in line["across_gap"]
                           for line in created)

    # history: the version that crosses it is marked
    [version] = [v for v in reader.history("topics", "in-gap")]
    assert version.offset == snapshot and version.gap == gap

    # the explorer's API draws it: the range and the timeline name the same offsets
    explorer = TestClient(create_app(Settings(Explorer(reader, "gapped"))))
    assert explorer.get("/api/v1/clusters/gapped").json()["gaps"] == [{"first": gap.first, "last": gap.last}]
    assert len(explorer.get("/api/v1/clusters/gapped/timeline").json()["gap_times"]) == 1

    # the report: its lines break at the gap, and it says so
    register_views(spark, reader)
    assert spark.sql("SELECT first_offset, last_offset FROM gaps").collect()[0][:] == (gap.first, gap.last)
    page = write_report(spark, reader, tmp_path / "report.html").read_text()
    assert f"Gap: offsets {gap.first}..{gap.last} were deleted by Kafka before they were read" in page
    leaders = re.search(r'Plotly\.newPlot\(\s*"leaders",\s*(\[.*?\])\s*,\s*\{', page, re.DOTALL)
    assert leaders is not None
    assert any(None in trace["y"] for trace in json.loads(leaders.group(1))), "a line drawn through the gap"


def _topics(reader: WarehouseReader, offset: int) -> set[str]:
    return set(reader.image_at(offset).tables["topics"]["name"].to_pylist())
